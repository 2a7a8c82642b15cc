/**
 * What other features use of this feature: its public module (they import nothing else of it).
 */
export { makeContextDiscovery } from "./ContextDiscovery.ts"

/**
 * What other features use of this feature: its public module (they import nothing else of it).
 */
export type { ProviderCredentials } from "./AgentConnectionsRepo.ts"
export { AgentConnectionsRepo } from "./AgentConnectionsRepo.ts"
export { pathInstructionsFor, renderPathInstructions } from "./BosunConfigFile.ts"
export { configurationFingerprint } from "./CatalogDiscoveryWorkflow.ts"
export { makeConfigFileReader } from "./ConfigFileReader.ts"
export { ConfigurationRepo } from "./ConfigurationRepo.ts"
export { makeConnectionTest } from "./ConnectionTest.ts"
export type { RunSettings } from "./RunSettings.ts"
export { makeRunSettings, teamInstructions } from "./RunSettings.ts"

/**
 * What other features use of this feature: its public module (they import nothing else of it).
 */
export type { ChangedFile } from "./ReviewPlan.ts"

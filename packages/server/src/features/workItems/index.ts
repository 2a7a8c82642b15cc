/**
 * What other features use of this feature: its public module (they import nothing else of it).
 */

export type { FileChange } from "./ChangeSet.ts"
export { parseChanges } from "./ChangeSet.ts"
export { cloneUrl, makeSecondaryCheckouts } from "./Checkouts.ts"
export { CHECKOUT, fail, fullName, makeWorkItemRunSetup, workItemAttempt } from "./WorkItemRunSetup.ts"
export { WorkItemRuns } from "./WorkItemRuns.ts"
export { WorkItemsRepo } from "./WorkItemsRepo.ts"

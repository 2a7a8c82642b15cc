/**
 * What other features use of this feature: its public module (they import nothing else of it).
 */
export { PullRequestsRepo } from "./PullRequestsRepo.ts"
export { RepositoriesRepo } from "./RepositoriesRepo.ts"

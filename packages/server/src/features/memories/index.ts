/**
 * What other features use of this feature: its public module (they import nothing else of it).
 */

export type { MemoryFindingEffect } from "./MemoriesRepo.ts"
export { MemoriesRepo } from "./MemoriesRepo.ts"

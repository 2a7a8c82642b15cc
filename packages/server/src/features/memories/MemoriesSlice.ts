/** The memories slice as layers: the team's memories and its HTTP group. */
import { MemoriesHttp } from "./MemoriesHttp.ts"
import { MemoriesRepo } from "./MemoriesRepo.ts"

export const MemoriesLive = MemoriesRepo.layer

export const MemoriesHttpLive = MemoriesHttp

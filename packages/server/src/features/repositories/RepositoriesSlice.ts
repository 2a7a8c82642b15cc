/** The repositories slice as layers: its services (repositories, pull requests) and its HTTP groups. */
import { Layer } from "effect"
import { PullRequestsHttp } from "./PullRequestsHttp.ts"
import { PullRequestsRepo } from "./PullRequestsRepo.ts"
import { RepositoriesHttp } from "./RepositoriesHttp.ts"
import { RepositoriesRepo } from "./RepositoriesRepo.ts"

export const RepositoriesLive = Layer.mergeAll(RepositoriesRepo.layer, PullRequestsRepo.layer)

export const RepositoriesHttpLive = Layer.mergeAll(RepositoriesHttp, PullRequestsHttp)

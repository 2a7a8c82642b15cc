/**
 * The work-items slice as layers: work items, chat channels, queuing an item's runs, and its HTTP
 * groups. The intake and implement runs are workflow types, wired with the others by the cluster.
 */
import { Layer } from "effect"
import { ChatChannelsRepo } from "./ChatChannelsRepo.ts"
import { ChatHttp } from "./ChatHttp.ts"
import { WorkItemRuns } from "./WorkItemRuns.ts"
import { WorkItemsHttp } from "./WorkItemsHttp.ts"
import { WorkItemsRepo } from "./WorkItemsRepo.ts"

export const WorkItemsLive = WorkItemRuns.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(WorkItemsRepo.layer, ChatChannelsRepo.layer))
)

export const WorkItemsHttpLive = Layer.mergeAll(ChatHttp, WorkItemsHttp)

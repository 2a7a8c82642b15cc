/**
 * The agent-connections slice as layers: the two-level configuration and its writer, the agent's
 * credentials with their catalog discovery, and its HTTP groups. Provider usage (`UsageSourceLive`)
 * needs the cache and is wired with the provider clients.
 */
import { Layer } from "effect"
import { AgentConnectionHttp } from "./AgentConnectionHttp.ts"
import { AgentConnectionsRepo } from "./AgentConnectionsRepo.ts"
import { ConfigurationHttp } from "./ConfigurationHttp.ts"
import { ConfigurationRepo } from "./ConfigurationRepo.ts"
import { ConfigurationWriter } from "./ConfigurationWriter.ts"

export const AgentConnectionsLive = ConfigurationWriter.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(ConfigurationRepo.layer, AgentConnectionsRepo.layer))
)

export const AgentConnectionsHttpLive = Layer.mergeAll(AgentConnectionHttp, ConfigurationHttp)

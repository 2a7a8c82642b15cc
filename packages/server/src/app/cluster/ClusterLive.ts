/**
 * This server process as a cluster runner (docs/interface.md: Design rules): Bosun's entities and
 * workflows from `@bosun/actors` over this instance's Postgres, with the server's ports — sealed
 * requests in the blob store, the sandbox providers, the Migrator's gate, the providers' usage — and the workflow types
 * given (production: `WorkflowTypesLive`). Needs a SqlClient, Secrets, the BlobStore, the Migrator
 * the AgentRuntime and the UsageCache's `UsageSource` (production: `UsageSourceLive` among the
 * server's providers), and whatever the workflow types need.
 */
import type { WorkflowTypes } from "@bosun/actors/attempt/AttemptPorts"
import { layerActors } from "@bosun/actors/cluster/ActorsLive"
import { Effect, Layer } from "effect"
import { DeviceAuthorizationsLive } from "../../features/agentConnections/DeviceAuthorizationsRepo.ts"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { MigrationGateLive, RunOutputsLive, SandboxProvidersLive, SealedRequestsLive } from "./AttemptPortsLive.ts"

export const layerClusterRunner = <E, R>(workflowTypes: Layer.Layer<WorkflowTypes, E, R>) =>
  Layer.unwrap(Effect.map(AppConfig, (config) => layerActors(config.cluster))).pipe(
    Layer.provide(
      Layer.mergeAll(
        SealedRequestsLive,
        RunOutputsLive,
        MigrationGateLive,
        SandboxProvidersLive,
        DeviceAuthorizationsLive,
        workflowTypes
      )
    )
  )

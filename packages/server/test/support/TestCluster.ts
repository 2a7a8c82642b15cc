/**
 * A cluster runner for tests: the production `layerClusterRunner` (Scheduler, RunEvents,
 * RunAttemptWorkflow over the real cluster storage and socket transport) on a fresh database, with
 * the real runtime process as its EXTERNAL_RUNTIME, sealed requests in a temporary blob store, and
 * the workflow types the test registers through the port.
 */
import type { WorkflowTypes } from "@bosun/actors/attempt/AttemptPorts"
import type { UsageSource } from "@bosun/actors/coordination/UsageCache"
import { LogCapture, TestDatabase } from "@bosun/testing"
import { Context, Layer, Option, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import { layerClusterRunner } from "../../src/app/cluster/ClusterLive.ts"
import { AppServicesLive } from "../../src/app/Server.ts"
import type { AgentConnectionsRepo } from "../../src/features/agentConnections/AgentConnectionsRepo.ts"
import { UsageSourceLive } from "../../src/features/agentConnections/ProviderUsage.ts"
import { AppConfig, type AppSettings } from "../../src/platform/config/AppConfig.ts"
import { Migrator } from "../../src/platform/db/Migrator.ts"
import { AgentRuntime } from "../../src/platform/runtime/AgentRuntime.ts"
import { layerMemory } from "../../src/platform/storage/CacheMemory.ts"
import { layerTemporaryBlobStore, layerTestSecrets, testSettings } from "./TestServer.ts"

export interface TestClusterOptions {
  readonly workflowTypes: Layer.Layer<WorkflowTypes, never, SqlClient.SqlClient>
  readonly runtime: { readonly url: string; readonly token: string }
  readonly runnerPort: number
  readonly settings?: (base: AppSettings) => AppSettings
  /** The UsageCache's provider side (default: production's). */
  readonly usageSource?: Layer.Layer<UsageSource, never, AgentConnectionsRepo | AppConfig>
}

export const layerTestCluster = (options: TestClusterOptions) => {
  const base = testSettings({
    runtime: {
      external: Option.some({ url: new URL(options.runtime.url), token: Redacted.make(options.runtime.token) }),
      embeddedPort: 0,
      reviewAgentProfile: Option.none()
    }
  })
  const withRunner: AppSettings = {
    ...base,
    cluster: { ...base.cluster, runnerAddress: { host: "127.0.0.1", port: options.runnerPort } }
  }
  const settings = options.settings ? options.settings(withRunner) : withRunner
  return layerClusterRunner(options.workflowTypes).pipe(
    Layer.provide(options.usageSource ?? UsageSourceLive),
    Layer.provideMerge(AgentRuntime.layer),
    Layer.provideMerge(AppServicesLive),
    Layer.provideMerge(Layer.mergeAll(layerTemporaryBlobStore, layerMemory)),
    Layer.provideMerge(Migrator.layer),
    Layer.tap((context) => Context.get(context, Migrator).awaitReady),
    Layer.provideMerge(layerTestSecrets()),
    Layer.provideMerge(Layer.succeed(AppConfig, AppConfig.of(settings))),
    Layer.provideMerge(TestDatabase.layer),
    Layer.provideMerge(LogCapture.layer)
  )
}

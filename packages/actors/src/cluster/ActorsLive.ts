/**
 * Bosun's cluster in one Layer (docs/interface.md: Design rules): a runner of `effect/cluster` with
 * its message and runner storage in the same Postgres (its own `cluster_*` tables, shard locks as
 * advisory locks), the socket transport between runners, the workflow engine on top, and Bosun's
 * entities and workflows — Scheduler (+ its alarm singleton), RunEvents, RunAttemptWorkflow, Mutex,
 * UsageCache (its provider calls behind the `UsageSource` port),
 * AgentDeviceAuth (when AGENT_ONE's device sign-in is configured).
 * One server process is one runner; more processes on one Postgres are more runners, and shards
 * (with the entities on them) move to the survivors when one stops (at once on SIGTERM, after
 * `shardLockExpiration` when it is killed).
 *
 * The server provides the ports (`attempt/AttemptPorts.ts`), the runtime client and a SqlClient.
 */
import { NodeClusterSocket, NodeCrypto } from "@effect/platform-node"
import { Duration, Layer, Option } from "effect"
import {
  ClusterWorkflowEngine,
  RunnerAddress,
  ShardingConfig,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import { AttemptSettings, type AttemptSettingsShape } from "../attempt/AttemptSettings.ts"
import { RunAttemptWorkflowLive } from "../attempt/RunAttemptWorkflow.ts"
import { AgentDeviceAuthLive, type AgentDeviceAuthSettings } from "../auth/AgentDeviceAuth.ts"
import { MutexLive } from "../coordination/Mutex.ts"
import { layerUsageCache } from "../coordination/UsageCache.ts"
import { RunEventsLive } from "../events/RunEvents.ts"
import { layerScheduler, type SchedulerLayerSettings } from "../scheduler/Scheduler.ts"
import { layerPromptShardAcquisition } from "./PromptShardAcquisition.ts"

export interface ClusterSettings {
  /** Where other runners reach this one. */
  readonly runnerAddress: { readonly host: string; readonly port: number }
  /** Where it listens, when that differs (a container listening on 0.0.0.0). */
  readonly listenAddress?: { readonly host: string; readonly port: number } | undefined
  /** How long a killed runner's shards stay locked before others take them. */
  readonly shardLockExpiration: Duration.Duration
  /**
   * How often a runner re-reads the shard assignments: the longest a shard freed by a runner that
   * stopped gracefully waits for its next owner (the library's default is 3 s).
   */
  readonly refreshAssignmentsInterval: Duration.Duration
  /**
   * How long an acquire keeps asking for shards a stopping runner has not released yet, instead of
   * leaving them to the library's next round a second later (`cluster/PromptShardAcquisition.ts`).
   * Capped at half the lock refresh interval.
   */
  readonly shardHandoverWait: Duration.Duration
  /**
   * A cluster client that hosts no shards (an API-only process): it sends to entities on the
   * runners but runs none, and its singletons (the Scheduler's alarm, crons) never start here.
   */
  readonly clientOnly: boolean
  /**
   * How runners decide a peer is gone: `ping` asks it over the socket; `k8s` asks the Kubernetes
   * API whether its Pod is still running (a Pod that is gone frees its shards without waiting for
   * pings to fail). `k8s` needs the Pod's service account to get and list Pods in `namespace`.
   */
  readonly runnerHealth:
    | { readonly _tag: "ping" }
    | { readonly _tag: "k8s"; readonly namespace: string | undefined; readonly labelSelector: string | undefined }
  readonly scheduler: SchedulerLayerSettings
  readonly attempts: AttemptSettingsShape
  /** How long a provider usage reading answers lookups (60 s; docs/interface.md: Coordinators, UsageCache). */
  readonly usageTtl: Duration.Duration
  /** AGENT_ONE's device sign-in; without it the AgentDeviceAuth entity is not offered. */
  readonly deviceAuth: Option.Option<AgentDeviceAuthSettings>
}

/** The library's lock refresh interval: its default refresh (10 s), or a third of the expiration when shorter. */
const lockRefreshInterval = (expiration: Duration.Duration) =>
  Duration.min(Duration.seconds(10), Duration.divideUnsafe(expiration, 3))

export const layerCluster = (settings: ClusterSettings) => {
  const shardingConfig = {
    runnerAddress: Option.some(RunnerAddress.make(settings.runnerAddress.host, settings.runnerAddress.port)),
    runnerListenAddress:
      settings.listenAddress === undefined
        ? Option.none()
        : Option.some(RunnerAddress.make(settings.listenAddress.host, settings.listenAddress.port)),
    shardLockExpiration: settings.shardLockExpiration,
    refreshAssignmentsInterval: settings.refreshAssignmentsInterval
  }
  // The SQL storages NodeClusterSocket would build itself ("sql"), brought here ("byo") so the
  // runner storage can be wrapped.
  const storage = Layer.merge(
    SqlMessageStorage.layer.pipe(Layer.provide(NodeCrypto.layerDigest)),
    layerPromptShardAcquisition({
      window: Duration.min(
        settings.shardHandoverWait,
        Duration.divideUnsafe(lockRefreshInterval(settings.shardLockExpiration), 2)
      ),
      spacing: Duration.millis(50),
      quiet: Duration.millis(150)
    }).pipe(Layer.provide(Layer.orDie(SqlRunnerStorage.layer)))
  ).pipe(Layer.provide(ShardingConfig.layerFromEnv(shardingConfig)))
  const cluster = settings.clientOnly
    ? NodeClusterSocket.layer({ storage: "byo", clientOnly: true, shardingConfig })
    : settings.runnerHealth._tag === "k8s"
      ? NodeClusterSocket.layer({
          storage: "byo",
          runnerHealth: "k8s",
          runnerHealthK8s: {
            namespace: settings.runnerHealth.namespace,
            labelSelector: settings.runnerHealth.labelSelector
          },
          shardingConfig
        })
      : NodeClusterSocket.layer({ storage: "byo", runnerHealth: "ping", shardingConfig })
  return cluster.pipe(Layer.provideMerge(storage))
}

/** The entities and workflows on a runner; needs the ports (with `UsageSource`), `RuntimeClient` and a `SqlClient`. */
export const layerActors = (settings: ClusterSettings) =>
  Layer.mergeAll(
    RunEventsLive,
    RunAttemptWorkflowLive,
    layerScheduler(settings.scheduler),
    MutexLive,
    layerUsageCache({ ttl: settings.usageTtl }),
    Option.match(settings.deviceAuth, { onNone: () => Layer.empty, onSome: AgentDeviceAuthLive })
  ).pipe(
    Layer.provide(Layer.succeed(AttemptSettings, settings.attempts)),
    Layer.provideMerge(ClusterWorkflowEngine.layer),
    Layer.provideMerge(layerCluster(settings))
  )

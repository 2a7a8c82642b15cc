/**
 * The Bosun server `npm run bench:scheduler` measures, in a process of its own so that its RSS is
 * its own: the production server (`makeServerLive`, as `npm start` builds it) with one more
 * workflow type, `bench_run`, which runs the CUSTOM runtime profile its run's input names on the
 * repository at `BENCH_REPO_URL` and publishes nothing.
 *
 * A run the benchmark commits from its own process would wait for the Scheduler's idle tick
 * (5 s), which would make the latency figure meaningless; in production the code that writes the
 * run wakes the Scheduler right after its commit. Here the benchmark's transaction ends with
 * `NOTIFY` on `BENCH_WAKE_CHANNEL`, which Postgres delivers at the commit, and this process wakes the
 * Scheduler (`wakeScheduler`, the production path) on every notification it LISTENs to — one
 * hop of a loopback notification more than production. It logs `bench_wake_listening` once the
 * LISTEN is in place, and `bench_memory` (V8's heap beside the RSS) every second.
 */
import type { WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { RunRequest } from "@bosun/domain"
import { layerJsonLogger } from "@bosun/platform/JsonLogger"
import { layerWorkflowTypes } from "@bosun/server/app/cluster/WorkflowTypesLive"
import { makeServerLive } from "@bosun/server/app/Server"
import { NodeRuntime } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Config, Effect, Layer, Queue, Schema } from "effect"

const settings = Config.all({
  repoUrl: Config.String("BENCH_REPO_URL"),
  wakeChannel: Config.String("BENCH_WAKE_CHANNEL").pipe(Config.withDefault("bosun_bench_wake")),
  timeLimitSeconds: Config.Int("BENCH_TIME_LIMIT_SECONDS").pipe(Config.withDefault(300))
})

const benchRun = Effect.gen(function* () {
  const { repoUrl, timeLimitSeconds } = yield* settings
  const type: WorkflowType = {
    lane: "AGENT",
    outputs: [],
    prepare: (run) =>
      Effect.sync(() => ({
        request: Schema.decodeUnknownSync(RunRequest)({
          run_id: run.runId,
          attempt_id: run.attemptId,
          agent: { kind: "CUSTOM", profile: String(run.inputSnapshot.profile) },
          model: "bench/none",
          prompt: "go",
          repositories: [{ id: "repo", url: repoUrl, ref: "main", path: "repo", credential: null }],
          mcp_servers: [],
          skills: [],
          egress_tier: "STRICT",
          time_limit_seconds: timeLimitSeconds,
          credential_mode: "INLINE",
          provider_credentials: {}
        }),
        sandbox: { provider: "EXTERNAL_RUNTIME", instanceClass: "standard-2", egressTier: "STRICT" },
        grants: [],
        model: "bench/none",
        provider: "bench"
      })),
    publish: () => Effect.void
  }
  return { bench_run: type }
})

/** Wakes the Scheduler on every notification on `BENCH_WAKE_CHANNEL`; a connection of its own holds the LISTEN. */
const WakeOnNotify = Layer.effectDiscard(
  Effect.gen(function* () {
    const { wakeChannel } = yield* settings
    const pg = yield* PgClient.PgClient
    const notifications = yield* pg.listen(wakeChannel)
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Queue.take(notifications), wakeScheduler)))
    yield* Effect.logInfo("bench_wake_listening")
  })
).pipe(Layer.provide(PgClient.layerConfig({ url: Config.Redacted("DATABASE_URL"), maxConnections: Config.succeed(1) })))

/** Once a second, the process's memory as V8 sees it, so the benchmark can tell a live heap from RSS V8 has not returned. */
const MemoryLog = Layer.effectDiscard(
  Effect.forkScoped(
    Effect.forever(
      Effect.andThen(
        Effect.suspend(() => {
          const memory = process.memoryUsage()
          const mb = (bytes: number) => Math.round(bytes / 104857.6) / 10
          return Effect.logInfo("bench_memory").pipe(
            Effect.annotateLogs({
              rss_mb: mb(memory.rss),
              heap_used_mb: mb(memory.heapUsed),
              heap_total_mb: mb(memory.heapTotal),
              external_mb: mb(memory.external + memory.arrayBuffers)
            })
          )
        }),
        Effect.sleep("1 second")
      )
    )
  )
)

const server = makeServerLive(layerWorkflowTypes(benchRun))

Layer.launch(Layer.mergeAll(WakeOnNotify, MemoryLog).pipe(Layer.provideMerge(server))).pipe(
  Effect.provide(layerJsonLogger()),
  NodeRuntime.runMain
)

/**
 * The server's Prometheus metrics (docs/operations.md: Metrics). Counters and histograms are updated where
 * their events happen — the request pipeline, the effects consumer, and in `@bosun/actors` the
 * Scheduler and the attempt workflow (`attempt/AttemptMetrics.ts`). The gauges read shared state
 * (queue and dead-letter depth per queue, runs by status), so they are refreshed from the queues
 * and the database when `/metrics` is scraped (`MetricsServer.ts`): every replica reports the same
 * instance-wide values, which dashboards read with `max`.
 */
import { Context, Duration, Effect, Metric } from "effect"
import { QUEUE_NAMES, Queues } from "../storage/Queue.ts"
import { BOSUN_VERSION } from "../Version.ts"

/** Seconds from a request's arrival to its response, by method, matched route template and status. */
export const httpRequestDuration = Metric.histogram("bosun_http_request_duration_seconds", {
  description: "HTTP request latency by method, route template and status",
  boundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
})

/** A failed outbound effect call (one delivery of a `bosun-effects` message), by provider and kind. */
export const outboundEffectFailures = Metric.counter("bosun_outbound_effect_failures_total", {
  description: "Outbound provider calls (bosun-effects deliveries) that failed, by provider and effect kind"
})

export const queueDepth = Metric.gauge("bosun_queue_depth", {
  description: "Messages waiting or being handled, by queue"
})

export const deadLetterDepth = Metric.gauge("bosun_dead_letter_depth", {
  description: "Messages in a queue's dead-letter queue, by queue (an alarm above 0)"
})

export const runsByStatus = Metric.gauge("bosun_runs", {
  description: "Workflow runs by workflow type and status"
})

/**
 * Where the runs gauge reads its counts. The runs feature fills it (`RunCountsLive`): the platform
 * measures what features own without importing them.
 */
export class RunCounts extends Context.Service<
  RunCounts,
  {
    readonly byStatus: Effect.Effect<
      ReadonlyArray<{ readonly workflowType: string; readonly status: string; readonly count: number }>
    >
  }
>()("bosun/server/observability/RunCounts") {}

const buildInfo = Metric.gauge("bosun_build_info", { description: "1, labelled with this process's version and role" })

/** Records one request's latency; called once per request by the request pipeline. */
export const recordHttpRequest = (
  method: string,
  route: string | null,
  status: number,
  seconds: number,
  context: Parameters<typeof httpRequestDuration.updateUnsafe>[1]
) =>
  Metric.withAttributes(httpRequestDuration, {
    method,
    // Unmatched requests share one series, so arbitrary paths cannot grow the label set.
    route: route ?? "unmatched",
    status: String(status)
  }).updateUnsafe(seconds, context)

/** The provider an effect kind belongs to: its prefix (`github.pr_comment` → `github`). */
export const providerOfKind = (kind: string) => kind.split(".")[0] ?? kind

/** How long a scrape waits for one gauge source: a hung database or Redis must not take /metrics down with it. */
const SOURCE_TIMEOUT = Duration.seconds(2)

/**
 * Refreshes the gauges from their sources. A source that fails or does not answer within
 * `SOURCE_TIMEOUT` keeps its last values and is logged; the scrape still answers with everything
 * else (the HTTP latency and failure series matter most exactly when the stores are in trouble).
 */
export const refreshGauges = (role: string) =>
  Effect.gen(function* () {
    const queues = yield* Queues
    const runs = yield* RunCounts
    yield* Metric.update(Metric.withAttributes(buildInfo, { version: BOSUN_VERSION, role }), 1)
    yield* Effect.forEach(
      QUEUE_NAMES,
      (queue) =>
        Effect.all([queues.depth(queue), queues.deadLetters.count(queue)], { concurrency: 2 }).pipe(
          Effect.timeout(SOURCE_TIMEOUT),
          Effect.flatMap(([depth, dead]) =>
            Effect.all([
              Metric.update(Metric.withAttributes(queueDepth, { queue }), depth),
              Metric.update(Metric.withAttributes(deadLetterDepth, { queue }), dead)
            ])
          ),
          Effect.catch((error) =>
            Effect.logWarning("metrics_queue_unreadable").pipe(Effect.annotateLogs({ queue, error: error.message }))
          )
        ),
      { concurrency: QUEUE_NAMES.length, discard: true }
    )
    yield* runs.byStatus.pipe(
      Effect.timeout(SOURCE_TIMEOUT),
      Effect.flatMap(updateRuns),
      Effect.catchCause((cause) => Effect.logWarning("metrics_runs_unreadable", cause))
    )
  })

const seenRunSeries = new Set<string>()

const updateRuns = (
  counts: ReadonlyArray<{ readonly workflowType: string; readonly status: string; readonly count: number }>
) =>
  Effect.gen(function* () {
    // A status whose runs all moved on has no row: its series drops to 0 instead of keeping its last count.
    const present = new Set(counts.map((c) => `${c.workflowType}\u0000${c.status}`))
    for (const key of seenRunSeries) {
      if (!present.has(key)) {
        const [workflowType = "", status = ""] = key.split("\u0000")
        yield* Metric.update(Metric.withAttributes(runsByStatus, { workflow_type: workflowType, status }), 0)
      }
    }
    for (const { workflowType, status, count } of counts) {
      seenRunSeries.add(`${workflowType}\u0000${status}`)
      yield* Metric.update(Metric.withAttributes(runsByStatus, { workflow_type: workflowType, status }), count)
    }
  })

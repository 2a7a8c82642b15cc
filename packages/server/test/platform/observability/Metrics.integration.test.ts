/**
 * The scrape's gauge refresh (`platform/observability/Metrics.ts`) when a store does not answer: the
 * queues hang (Redis reconnecting, a starved pool), the runs table answers. The refresh ends
 * within its source timeout, the runs gauge is fresh, the queue gauges keep their last values,
 * and the hang is logged — `/metrics` stays up exactly when an incident needs it.
 */
import { LogCapture } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient } from "effect/sql"
import { RunCountsLive, WorkflowRunsRepo } from "../../../src/features/runs/WorkflowRunsRepo.ts"
import { refreshGauges } from "../../../src/platform/observability/Metrics.ts"
import { QueueError, Queues } from "../../../src/platform/storage/Queue.ts"
import { parseExposition, sampleValue } from "../../support/Prometheus.ts"
import { layerTestServices } from "../../support/TestServices.ts"

let hang = false
const unused = Effect.fail(new QueueError({ message: "not used by the gauges" }))
const queues = Queues.of({
  send: () => unused,
  consume: () => unused,
  depth: () => (hang ? Effect.never : Effect.succeed(3)),
  deadLetters: {
    list: () => unused,
    count: () => (hang ? Effect.never : Effect.succeed(1)),
    replay: () => unused
  }
})

const services = RunCountsLive.pipe(Layer.provideMerge(WorkflowRunsRepo.layer), Layer.provideMerge(layerTestServices))
const refresh = refreshGauges("all").pipe(Effect.provideService(Queues, queues))

layer(services, { excludeTestServices: true, timeout: "60 seconds" })("the /metrics gauge refresh", (it) => {
  it.effect(
    "queues that do not answer cost the scrape two seconds, keep their last values and are logged; the runs gauge is still read",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [org] = yield* sql<{ id: string }>`INSERT INTO organizations (name) VALUES ('metrics') RETURNING id`
        yield* sql`INSERT INTO workflow_runs (organization_id, workflow_type, status)
                   VALUES (${org?.id ?? ""}, 'gauge_probe', 'QUEUED')`

        hang = false
        yield* refresh
        let text = yield* PrometheusMetrics.format()
        let all = parseExposition(text)
        assert.strictEqual(sampleValue(all, "bosun_queue_depth", { queue: "bosun-inbox" }), 3)
        assert.strictEqual(sampleValue(all, "bosun_dead_letter_depth", { queue: "bosun-inbox" }), 1)
        assert.strictEqual(sampleValue(all, "bosun_runs", { workflow_type: "gauge_probe", status: "QUEUED" }), 1)

        yield* sql`INSERT INTO workflow_runs (organization_id, workflow_type, status)
                   VALUES (${org?.id ?? ""}, 'gauge_probe', 'QUEUED')`
        hang = true
        const started = Date.now()
        yield* refresh
        const took = Date.now() - started
        assert.isAtLeast(took, 1_900)
        assert.isBelow(took, 10_000, "the refresh gave up on the hung queues")
        text = yield* PrometheusMetrics.format()
        all = parseExposition(text)
        assert.strictEqual(sampleValue(all, "bosun_queue_depth", { queue: "bosun-inbox" }), 3, "last value kept")
        assert.strictEqual(sampleValue(all, "bosun_runs", { workflow_type: "gauge_probe", status: "QUEUED" }), 2)
        const capture = yield* LogCapture
        assert.isTrue(capture.lines.some((line) => line.includes("metrics_queue_unreadable")))
      })
  )
})

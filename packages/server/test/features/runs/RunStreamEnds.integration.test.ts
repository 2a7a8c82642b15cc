/**
 * When a live run stream answers and when it ends, measured from outside over HTTP: a quiet
 * stream's status, headers and opening comment come at once and a keep-alive follows within its
 * interval; an unknown run is 404 at once; a run that has ended streams its events, `run.ended`
 * last, and closes at once, then answers 204 (an EventSource stops there); a stream open while
 * the run ends closes after `run.ended`, which the Scheduler writes in the pass that settles it.
 */
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { RUN_ENDED, type WorkflowEvent } from "@bosun/domain"
import { eventually } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { EventSource } from "eventsource"
import { runWithWriter } from "../../support/RunEventWriter.ts"
import { baseUrl, layerTestServer } from "../../support/TestServer.ts"

const KEEP_ALIVE = Duration.seconds(1)

const streamUrl = (base: string, org: string, runId: string) =>
  `${base}/api/v1/organizations/${org}/workflow-runs/${runId}/events/stream`

/** Opens the stream and answers once the status line and headers are in, with how long that took. */
const open = (url: string, cookie: string, headers: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const controller = new AbortController()
      const started = performance.now()
      const response = await fetch(url, {
        headers: { accept: "text/event-stream", cookie, ...headers },
        signal: controller.signal
      })
      return { response, controller, headersAfterMs: performance.now() - started, started }
    }),
    ({ controller }) => Effect.sync(() => controller.abort())
  )

/**
 * A reader of the body: `until` reads on until `done` holds for the text read so far (all of it,
 * from the first byte) or the body ends.
 */
const bodyOf = (response: Response) => {
  const reader = response.body?.getReader()
  const decoder = new TextDecoder()
  let text = ""
  let ended = reader === undefined
  const until = (done: (text: string) => boolean) =>
    Effect.promise(async () => {
      while (reader !== undefined && !ended && !done(text)) {
        const { value, done: finished } = await reader.read()
        if (finished) ended = true
        else text += decoder.decode(value, { stream: true })
      }
      return { text, ended }
    })
  return { until, all: until(() => false) }
}

/** Ends the run's attempt and lets the Scheduler settle it, as when its workflow finishes. */
const endRun = (runId: string, status: "SUCCEEDED" | "FAILED") =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO jobs (run_id, organization_id, lane, status, attempt, max_attempts, workflow_started)
               SELECT id, organization_id, 'AGENT', 'RUNNING', 1, 1, true FROM workflow_runs WHERE id = ${runId}`
    yield* sql`UPDATE workflow_runs SET status = 'RUNNING' WHERE id = ${runId}`
    yield* sql`UPDATE workflow_attempts SET status = ${status}, retryable = false,
                 error_code = ${status === "FAILED" ? "agent_failed" : null},
                 error_message = ${status === "FAILED" ? "the agent exited 1" : null}, finished_at = now()
               WHERE run_id = ${runId}`
    yield* wakeScheduler
  })

const idsOf = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]))
const eventsOf = (text: string): Array<WorkflowEvent> =>
  [...text.matchAll(/^data: (.+)$/gm)].map((match) => JSON.parse(match[1] ?? "null") as WorkflowEvent)

layer(layerTestServer({ settings: { sseKeepAliveInterval: KEEP_ALIVE } }), { excludeTestServices: true })(
  "when a live run stream answers and ends",
  (it) => {
    it.effect(
      "a quiet stream sends its status, headers and an opening comment within 1 s, then a keep-alive within the interval",
      () =>
        Effect.gen(function* () {
          const { member, runId } = yield* runWithWriter("ends-quiet")
          const base = yield* baseUrl
          const { response, headersAfterMs, started } = yield* open(streamUrl(base, "ends-quiet", runId), member.cookie)
          assert.strictEqual(response.status, 200)
          assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
          assert.strictEqual(response.headers.get("cache-control"), "no-cache")
          assert.isBelow(headersAfterMs, 1000)
          const body = bodyOf(response)
          const opening = yield* body.until((text) => text.includes("\n\n"))
          assert.strictEqual(opening.text, ": stream open\n\n")
          const keepAlive = yield* body.until((text) => text.includes(": keep-alive\n\n"))
          const keepAliveAfterMs = performance.now() - started
          assert.strictEqual(keepAlive.text, ": stream open\n\n: keep-alive\n\n")
          assert.isFalse(keepAlive.ended)
          assert.isBelow(keepAliveAfterMs, Duration.toMillis(KEEP_ALIVE) + 1000)
        }).pipe(Effect.scoped),
      20_000
    )

    it.effect("an unknown run is 404 within 1 s, with the error envelope", () =>
      Effect.gen(function* () {
        const { member } = yield* runWithWriter("ends-unknown")
        const base = yield* baseUrl
        const { response, headersAfterMs } = yield* open(streamUrl(base, "ends-unknown", "no-such-run"), member.cookie)
        assert.strictEqual(response.status, 404)
        assert.isBelow(headersAfterMs, 1000)
        const body = (yield* Effect.promise(() => response.json())) as { error: { code: string; message: string } }
        assert.strictEqual(body.error.code, "not_found")
        assert.isString(body.error.message)
      }).pipe(Effect.scoped)
    )

    it.effect(
      "a run that has ended streams its events with run.ended last and closes within 1 s; asked again after it, 204",
      () =>
        Effect.gen(function* () {
          const { member, runId, emit } = yield* runWithWriter("ends-finished")
          yield* emit(5)
          yield* endRun(runId, "FAILED")
          const sql = yield* SqlClient.SqlClient
          yield* eventually(
            sql<{ status: string }>`SELECT status FROM workflow_runs WHERE id = ${runId}`,
            (rows) => rows[0]?.status === "FAILED",
            Duration.seconds(10)
          )
          const base = yield* baseUrl
          const { response, started } = yield* open(streamUrl(base, "ends-finished", runId), member.cookie)
          assert.strictEqual(response.status, 200)
          const all = yield* bodyOf(response).all
          assert.isTrue(all.ended)
          assert.isBelow(performance.now() - started, 1000)
          assert.deepStrictEqual(idsOf(all.text), [1, 2, 3, 4, 5, 6])
          const events = eventsOf(all.text)
          const last = events[events.length - 1]
          assert.strictEqual(last?.type, RUN_ENDED)
          assert.strictEqual(last?.attempt, 1)
          const data = last?.data as { status: string; error: { code: string; message: string }; finished_at: string }
          assert.strictEqual(data.status, "FAILED")
          assert.deepStrictEqual(data.error, { code: "agent_failed", message: "the agent exited 1" })
          assert.isFalse(Number.isNaN(Date.parse(data.finished_at)))
          assert.isTrue(all.text.startsWith(": stream open\n\n"))
          assert.isTrue(all.text.endsWith("event: end\ndata: \n\n"))
          assert.notInclude(all.text, "event: reconnect")

          const again = yield* open(streamUrl(base, "ends-finished", runId), member.cookie, { "last-event-id": "6" })
          assert.strictEqual(again.response.status, 204)
          assert.isBelow(again.headersAfterMs, 1000)
          // From earlier on, the rest is streamed.
          const tail = yield* open(streamUrl(base, "ends-finished", runId), member.cookie, { "last-event-id": "4" })
          const rest = yield* bodyOf(tail.response).all
          assert.deepStrictEqual(idsOf(rest.text), [5, 6])
        }).pipe(Effect.scoped),
      30_000
    )

    it.effect(
      "an EventSource following a run gets every event once, run.ended last, and stops when the run ends",
      () =>
        Effect.gen(function* () {
          const { member, runId, emit } = yield* runWithWriter("ends-live")
          const base = yield* baseUrl
          const received: Array<WorkflowEvent> = []
          let ends = 0
          let opens = 0
          const source = new EventSource(streamUrl(base, "ends-live", runId), {
            fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, cookie: member.cookie } })
          })
          yield* Effect.addFinalizer(() => Effect.sync(() => source.close()))
          source.onopen = () => {
            opens++
          }
          source.onmessage = (message) => {
            received.push(JSON.parse(message.data) as WorkflowEvent)
          }
          source.addEventListener("end", () => {
            ends++
          })
          yield* eventually(
            Effect.sync(() => opens),
            (n) => n === 1,
            Duration.seconds(10)
          )
          yield* emit(3)
          yield* eventually(
            Effect.sync(() => received.length),
            (n) => n === 3,
            Duration.seconds(10)
          )
          yield* endRun(runId, "SUCCEEDED")
          // The stream ends after run.ended; the EventSource reconnects once, gets 204 and stops.
          yield* eventually(
            Effect.sync(() => source.readyState),
            (state) => state === EventSource.CLOSED,
            Duration.seconds(10)
          )
          assert.deepStrictEqual(
            received.map((event) => event.seq),
            [1, 2, 3, 4]
          )
          assert.strictEqual(received[3]?.type, RUN_ENDED)
          const endedWith = received[3]?.data as { status: string; error: null; finished_at: string }
          // jsonb keeps keys in its own order, so the fields are compared as a set.
          assert.deepStrictEqual(Object.keys(endedWith).sort(), ["error", "finished_at", "status"])
          assert.strictEqual(endedWith.status, "SUCCEEDED")
          assert.isNull(endedWith.error)
          assert.isFalse(Number.isNaN(Date.parse(endedWith.finished_at)))
          assert.strictEqual(ends, 1)
          assert.strictEqual(opens, 1)
        }).pipe(Effect.scoped),
      30_000
    )
  }
)

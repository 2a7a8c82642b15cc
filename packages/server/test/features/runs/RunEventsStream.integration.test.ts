/**
 * The live run stream (docs/interface.md: Events 1) with a real EventSource client (npm
 * `eventsource`) against the test server: events are written the way an attempt writes them —
 * committed to `workflow_events` by the fenced flush, then published to the run's RunEvents entity
 * — and read back over SSE: a late client gets the ring then live events; a client that asks for
 * more than the ring holds gets the rest from the database; reconnects across the stream's end
 * (shortened to 1 s here) lose and duplicate nothing; `?after=` without SSE is the JSON polling
 * fallback; 401 and 404 as for every organization route.
 */
import { RING_SIZE } from "@bosun/actors/events/RunEvents"
import type { WorkflowEvent } from "@bosun/domain"
import { eventually } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Exit, Pull, Stream } from "effect"
import { EventSource } from "eventsource"
import { RunStreamHub, type StreamChunk } from "../../../src/features/runs/RunStreamHub.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { runWithWriter } from "../../support/RunEventWriter.ts"
import { baseUrl, layerTestServer, request } from "../../support/TestServer.ts"

interface Received {
  readonly ids: Array<number>
  readonly data: Array<WorkflowEvent>
  reconnects: number
  opens: number
  close: () => void
}

/** An EventSource on the run's stream with the member's cookie, collecting what it receives. */
const listen = (org: string, runId: string, cookie: string, query = "") =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    const received: Received = { ids: [], data: [], reconnects: 0, opens: 0, close: () => undefined }
    const source = new EventSource(`${base}/api/v1/organizations/${org}/workflow-runs/${runId}/events/stream${query}`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, cookie } })
    })
    source.onopen = () => {
      received.opens++
    }
    source.onmessage = (message) => {
      received.ids.push(Number(message.lastEventId))
      received.data.push(JSON.parse(message.data) as WorkflowEvent)
    }
    source.addEventListener("reconnect", () => {
      received.reconnects++
    })
    received.close = () => source.close()
    yield* Effect.addFinalizer(() => Effect.sync(() => source.close()))
    return received
  })

const upTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1)

// The test server, its streams ending every second so that reconnects happen within a test.
layer(layerTestServer({ settings: { sseStreamDuration: Duration.seconds(1) } }), { excludeTestServices: true })(
  "the live run stream",
  (it) => {
    it.effect(
      "a client that connects late gets the ring's events, then live ones, in order, once each",
      () =>
        Effect.gen(function* () {
          const { member, runId, emit } = yield* runWithWriter("stream-late")
          yield* emit(20)
          const received = yield* listen("stream-late", runId, member.cookie)
          yield* eventually(
            Effect.sync(() => received.ids.length),
            (n) => n === 20
          )
          yield* emit(10)
          yield* eventually(
            Effect.sync(() => received.ids.length),
            (n) => n >= 30
          )
          assert.deepStrictEqual(received.ids, upTo(30))
          assert.deepStrictEqual(
            received.data.map((event) => [event.seq, event.attempt, event.type, (event.data as { n: number }).n]),
            upTo(30).map((n) => [n, 1, "agent.event", n])
          )
        }).pipe(Effect.scoped),
      30_000
    )

    it.effect(
      "connections of one run that join at different points while it streams each get every later event once, in order",
      () =>
        Effect.gen(function* () {
          const { member, runId, emit } = yield* runWithWriter("stream-shared")
          const joined: Array<{ readonly after: number; readonly received: Received }> = []
          const join = (after: number) =>
            Effect.map(
              listen("stream-shared", runId, member.cookie, after === 0 ? "" : `?after=${after}`),
              (received) => {
                joined.push({ after, received })
              }
            )
          for (let i = 0; i < 4; i++) yield* join(0)
          // Joins interleave with flushes: some start before the process follows the run, some
          // from its recent batches, some from further back than those, some from the future.
          for (let flush = 0; flush < 30; flush++) {
            yield* emit(10)
            if (flush % 5 === 2) yield* join(0)
            if (flush % 5 === 4) yield* join(Math.max(0, flush * 10 - 35))
            if (flush === 20) yield* join(280)
          }
          const total = 300
          yield* eventually(
            Effect.sync(() => joined.every(({ after, received }) => received.ids.length >= total - after)),
            (done) => done,
            Duration.seconds(20)
          )
          assert.strictEqual(joined.length, 17)
          for (const { after, received } of joined) {
            assert.deepStrictEqual(
              received.ids,
              upTo(total - after).map((n) => n + after)
            )
            assert.deepStrictEqual(
              received.data.map((event) => event.seq),
              received.ids
            )
          }
        }).pipe(Effect.scoped),
      40_000
    )

    it.effect(
      "a connection that falls too far behind is ended, and resuming from its last event loses nothing",
      () =>
        Effect.gen(function* () {
          const { runId, emit } = yield* runWithWriter("stream-slow")
          const hub = yield* RunStreamHub
          const seen: Array<number> = []
          const decoder = new TextDecoder()
          const ids = (chunk: StreamChunk) =>
            [...decoder.decode(chunk.bytes).matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))
          yield* emit(3)
          const pull = yield* Stream.toPull(hub.stream("stream-slow", runId, 0))
          const read = Effect.map(pull, (chunk) => {
            for (const piece of chunk) seen.push(...ids(piece))
          })
          while (seen.length < 3) yield* read
          // Seq 4 can only come through the process's channel: it follows the run live now.
          yield* emit(1)
          while (seen.length < 4) yield* read
          // Five flushes while the reader reads nothing: two fit its backlog, the third ends it.
          for (let i = 0; i < 5; i++) yield* emit(1)
          yield* Effect.sleep("1 second")
          const ended = yield* Effect.exit(Effect.forever(read)).pipe(Effect.timeout("10 seconds"))
          assert.isTrue(Exit.isFailure(ended) && Pull.isDoneCause(ended.cause))
          assert.deepStrictEqual(seen, upTo(6))
          const resumed = yield* Stream.runCollect(
            hub.stream("stream-slow", runId, 6).pipe(Stream.interruptWhen(Effect.sleep("1 second")))
          )
          assert.deepStrictEqual(resumed.flatMap(ids), [7, 8, 9])
        }).pipe(Effect.scoped, Effect.provide(RunStreamHub.layerWith({ backlog: 2 }))),
      30_000
    )

    it.effect(
      "a client asking for events older than the ring gets them from the database, then the ring",
      () =>
        Effect.gen(function* () {
          const { member, runId, emit } = yield* runWithWriter("stream-old")
          for (let i = 0; i < 6; i++) yield* emit(100)
          const received = yield* listen("stream-old", runId, member.cookie, "?after=0")
          yield* eventually(
            Effect.sync(() => received.ids.length),
            (n) => n >= 600,
            Duration.seconds(20)
          )
          assert.isAbove(600, RING_SIZE)
          assert.deepStrictEqual(received.ids, upTo(600))
          // A client resuming from the middle gets exactly the rest.
          const resumed = yield* listen("stream-old", runId, member.cookie, "?after=550")
          yield* eventually(
            Effect.sync(() => resumed.ids.length),
            (n) => n >= 50
          )
          assert.deepStrictEqual(
            resumed.ids,
            upTo(50).map((n) => n + 550)
          )
        }).pipe(Effect.scoped),
      30_000
    )

    it.effect(
      "with an empty ring a client gets the whole stored history, page by page, in order, once each",
      () =>
        Effect.gen(function* () {
          const { member, runId, emit } = yield* runWithWriter("stream-cold")
          for (let i = 0; i < 13; i++) yield* emit(100, false)
          const received = yield* listen("stream-cold", runId, member.cookie, "?after=0")
          yield* eventually(
            Effect.sync(() => received.ids.length),
            (n) => n >= 1300,
            Duration.seconds(20)
          )
          // More than two replay pages, then live events after them.
          yield* emit(5)
          yield* eventually(
            Effect.sync(() => received.ids.length),
            (n) => n >= 1305
          )
          assert.deepStrictEqual(received.ids, upTo(1305))
        }).pipe(Effect.scoped),
      30_000
    )

    it.effect(
      "reconnects across the end of each stream lose and duplicate nothing",
      () =>
        Effect.gen(function* () {
          const { member, runId, emit } = yield* runWithWriter("stream-reconnect")
          const received = yield* listen("stream-reconnect", runId, member.cookie)
          // Events keep coming while streams end every second and the client comes back with Last-Event-ID.
          for (let i = 0; i < 25; i++) {
            yield* emit(4)
            yield* Effect.sleep(Duration.millis(200))
          }
          yield* eventually(
            Effect.sync(() => received.ids.length),
            (n) => n >= 100,
            Duration.seconds(20)
          )
          assert.isAtLeast(received.reconnects, 2, "the stream ended with event: reconnect more than once")
          // The client comes back after each end, with Last-Event-ID.
          yield* eventually(
            Effect.sync(() => received.opens),
            (n) => n >= 3
          )
          assert.deepStrictEqual(received.ids, upTo(100))
        }).pipe(Effect.scoped),
      60_000
    )

    it.effect(
      "without SSE, ?after= answers the next events as JSON; no cookie is 401; another organization's run is 404",
      () =>
        Effect.gen(function* () {
          const { member, runId, emit } = yield* runWithWriter("stream-poll")
          yield* signIn("stream-poll-outsider", [["stream-poll-other", "MEMBER"]])
          const outsider = yield* signIn("stream-poll-outsider", [])
          yield* emit(12)
          const path = `/api/v1/organizations/stream-poll/workflow-runs/${runId}/events/stream`
          const page = yield* request(`${path}?after=5`, { headers: { cookie: member.cookie } })
          assert.strictEqual(page.status, 200, page.text)
          const body = page.json as { data: ReadonlyArray<WorkflowEvent>; meta: { last_seq: number } }
          assert.deepStrictEqual(
            body.data.map((event) => event.seq),
            [6, 7, 8, 9, 10, 11, 12]
          )
          assert.deepStrictEqual(body.data[0]?.data, { n: 6 })
          assert.strictEqual(body.meta.last_seq, 12)
          const empty = yield* request(`${path}?after=12`, { headers: { cookie: member.cookie } })
          assert.deepStrictEqual(empty.json, { data: [], meta: { last_seq: 12 } })

          const anonymous = yield* request(`${path}?after=0`)
          assert.strictEqual(anonymous.status, 401)
          const foreign = yield* request(`${path}?after=0`, { headers: { cookie: outsider.cookie } })
          assert.strictEqual(foreign.status, 404)
          assert.strictEqual(errorCode(foreign.json), "not_found")
          const missing = yield* request(`/api/v1/organizations/stream-poll/workflow-runs/nope/events/stream?after=0`, {
            headers: { cookie: member.cookie }
          })
          assert.strictEqual(missing.status, 404)
          const bad = yield* request(`${path}?after=-1`, { headers: { cookie: member.cookie } })
          assert.strictEqual(bad.status, 400)
        })
    )
  }
)

// Streams as long as production's (55 s): every test above would also pass if an open stream held
// the run's RunEvents entity, since their streams end every second.
layer(layerTestServer(), { excludeTestServices: true })("the live run stream, streams open for long", (it) => {
  it.effect(
    "while streams stay open, live events and new subscribers are served at once, not when a stream ends",
    () =>
      Effect.gen(function* () {
        const { member, runId, emit } = yield* runWithWriter("stream-long")
        const first = yield* listen("stream-long", runId, member.cookie)
        yield* emit(3)
        yield* eventually(
          Effect.sync(() => first.ids.length),
          (n) => n === 3,
          Duration.seconds(10)
        )
        const second = yield* listen("stream-long", runId, member.cookie)
        const third = yield* listen("stream-long", runId, member.cookie, "?after=1")
        yield* eventually(
          Effect.sync(() => [second.ids.length, third.ids.length]),
          ([b, c]) => b === 3 && c === 2,
          Duration.seconds(10)
        )
        yield* emit(4)
        yield* eventually(
          Effect.sync(() => [first.ids.length, second.ids.length, third.ids.length]),
          ([a, b, c]) => a === 7 && b === 7 && c === 6,
          Duration.seconds(10)
        )
        assert.deepStrictEqual(first.ids, upTo(7))
        assert.deepStrictEqual(second.ids, upTo(7))
        assert.deepStrictEqual(
          third.ids,
          upTo(6).map((n) => n + 1)
        )
        // No stream has ended yet: all of it happened inside one stream each.
        assert.deepStrictEqual([first.reconnects, second.reconnects, third.reconnects], [0, 0, 0])
        assert.deepStrictEqual([first.opens, second.opens, third.opens], [1, 1, 1])
      }).pipe(Effect.scoped),
    60_000
  )
})

/**
 * Leading-edge batching of the attempt event tail (for commit → first event latency): the
 * first event after a quiet spell goes out at once, events arriving inside the interval after a
 * flush are gathered, a full batch does not wait, and nothing is lost, reordered or duplicated.
 */
import { assert, describe, it } from "@effect/vitest"
import { type Cause, Effect, Fiber, Queue, Ref, Stream } from "effect"
import { TestClock } from "effect/testing"
import fc from "fast-check"
import { leadingBatches } from "../src/attempt/LeadingBatches.ts"

/** Feeds a stream from a queue and records every batch it emits, as it emits it. */
const harness = (maxSize: number, final?: (event: string) => boolean) =>
  Effect.gen(function* () {
    const input = yield* Queue.unbounded<string, Cause.Done>()
    const emitted = yield* Ref.make<ReadonlyArray<ReadonlyArray<string>>>([])
    const fiber = yield* Stream.fromQueue(input).pipe(
      leadingBatches(maxSize, "1 second", final === undefined ? {} : { final }),
      Stream.runForEach((batch) => Ref.update(emitted, (all) => [...all, batch])),
      Effect.forkChild
    )
    const settle = Effect.repeat(Effect.yieldNow, { times: 50 })
    return { input, emitted: Ref.get(emitted), fiber, settle }
  })

describe("leadingBatches", () => {
  it.effect("emits the first event after a quiet spell without waiting for the interval", () =>
    Effect.gen(function* () {
      const h = yield* harness(100)
      yield* Queue.offer(h.input, "run.started")
      yield* h.settle
      assert.deepStrictEqual(yield* h.emitted, [["run.started"]])
    })
  )

  it.effect("gathers events that arrive within the interval after a flush and emits them when it ends", () =>
    Effect.gen(function* () {
      const h = yield* harness(100)
      yield* Queue.offer(h.input, "a")
      yield* h.settle
      yield* TestClock.adjust("100 millis")
      yield* Queue.offer(h.input, "b")
      yield* h.settle
      yield* TestClock.adjust("300 millis")
      yield* Queue.offer(h.input, "c")
      yield* h.settle
      yield* TestClock.adjust("500 millis")
      assert.deepStrictEqual(yield* h.emitted, [["a"]], "held until a full interval since the last flush")
      yield* TestClock.adjust("100 millis")
      assert.deepStrictEqual(yield* h.emitted, [["a"], ["b", "c"]])
    })
  )

  it.effect(
    "a final event inside the interval goes out at once with what was gathered, not at the interval's end",
    () =>
      Effect.gen(function* () {
        const h = yield* harness(100, (event) => event === "run.finished")
        yield* Queue.offer(h.input, "run.started")
        yield* h.settle
        yield* TestClock.adjust("100 millis")
        yield* Queue.offer(h.input, "agent.step")
        yield* h.settle
        yield* TestClock.adjust("200 millis")
        assert.deepStrictEqual(yield* h.emitted, [["run.started"]], "an ordinary event still waits")
        yield* Queue.offer(h.input, "run.finished")
        yield* h.settle
        assert.deepStrictEqual(yield* h.emitted, [["run.started"], ["agent.step", "run.finished"]])
      })
  )

  it.effect("a stream that ends inside the interval emits its last batch at once", () =>
    Effect.gen(function* () {
      const h = yield* harness(100)
      yield* Queue.offer(h.input, "a")
      yield* h.settle
      yield* Queue.offer(h.input, "b")
      yield* h.settle
      yield* Queue.end(h.input)
      yield* h.settle
      assert.deepStrictEqual(yield* h.emitted, [["a"], ["b"]])
      yield* Fiber.join(h.fiber)
    })
  )

  it.effect("emits again at once after a quiet interval", () =>
    Effect.gen(function* () {
      const h = yield* harness(100)
      yield* Queue.offer(h.input, "a")
      yield* h.settle
      yield* TestClock.adjust("5 seconds")
      yield* Queue.offer(h.input, "b")
      yield* h.settle
      assert.deepStrictEqual(yield* h.emitted, [["a"], ["b"]])
    })
  )

  it.effect("emits a full batch without waiting and keeps the remainder for the interval", () =>
    Effect.gen(function* () {
      const h = yield* harness(2)
      yield* Queue.offerAll(h.input, ["1", "2", "3", "4", "5"])
      yield* h.settle
      assert.deepStrictEqual(yield* h.emitted, [
        ["1", "2"],
        ["3", "4"]
      ])
      yield* TestClock.adjust("1 second")
      assert.deepStrictEqual(yield* h.emitted, [["1", "2"], ["3", "4"], ["5"]])
    })
  )

  it.effect("emits what it gathered when the stream ends inside the interval, then ends", () =>
    Effect.gen(function* () {
      const h = yield* harness(100)
      yield* Queue.offer(h.input, "a")
      yield* h.settle
      yield* Queue.offer(h.input, "b")
      yield* Queue.end(h.input)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(h.fiber)
      assert.deepStrictEqual(yield* h.emitted, [["a"], ["b"]])
    })
  )

  it.effect("emits the events before an upstream failure, then fails with it", () =>
    Effect.gen(function* () {
      const result = yield* Stream.make(1, 2, 3).pipe(
        Stream.concat(Stream.fail("runtime_unavailable")),
        leadingBatches(10, "1 second"),
        Stream.runCollect,
        Effect.flip
      )
      assert.strictEqual(result, "runtime_unavailable")
    })
  )

  it.live("keeps every event once, in order, in batches of 1 to maxSize", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(
          fc.array(fc.integer(), { maxLength: 60 }),
          fc.integer({ min: 1, max: 12 }),
          (events, maxSize) =>
            Effect.runPromise(
              Effect.gen(function* () {
                const batches = yield* Stream.fromIterable(events).pipe(
                  Stream.rechunk(3),
                  leadingBatches(maxSize, "1 millis"),
                  Stream.runCollect
                )
                assert.deepStrictEqual(batches.flat(), events)
                for (const batch of batches) {
                  assert.isAtLeast(batch.length, 1)
                  assert.isAtMost(batch.length, maxSize)
                }
              })
            )
        ),
        { numRuns: 60 }
      )
    )
  )
})

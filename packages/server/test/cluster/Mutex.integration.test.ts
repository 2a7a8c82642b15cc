/**
 * The Mutex coordinator (docs/interface.md: What the service does 8, Coordinators, Mutex) on the
 * production cluster runner over a fresh Postgres: mutual exclusion and FIFO hand-over, leases that
 * lapse when their holder stops renewing, fences that keep growing, stale tokens refused on renew
 * and harmless on release, `withMutex` releasing on failure and interruption and renewing while its
 * effect runs, the busy error, and the database as the source of truth for a lease granted
 * elsewhere. Orderings are proven with the holders' own records and the database's timestamps.
 */
import { Mutex, MutexBusy, type MutexLease, MutexLeaseLost, withMutex } from "@bosun/actors/coordination/Mutex"
import { eventually } from "@bosun/testing"
import { freePort } from "@bosun/testing/RuntimeProcess"
import { assert, layer } from "@effect/vitest"
import { Data, Deferred, Duration, Effect, Exit, Fiber, Layer, Metric } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import { layerWorkflowTypes } from "../../src/app/cluster/WorkflowTypesLive.ts"
import { layerTestCluster } from "../support/TestCluster.ts"

// The production runner, which offers the Mutex entity.
const cluster = Layer.unwrap(
  Effect.map(Effect.promise(freePort), (runnerPort) =>
    layerTestCluster({
      workflowTypes: layerWorkflowTypes(Effect.succeed({})),
      // No attempt runs here: the runtime is never called.
      runtime: { url: "http://127.0.0.1:9", token: "unused" },
      runnerPort
    })
  )
)

let keys = 0
const freshKey = (name: string) => `test-${name}:${keys++}`

/** The cluster failing to deliver is not under test: those errors become defects. */
const undeliverable = {
  MailboxFull: Effect.die,
  AlreadyProcessingMessage: Effect.die,
  PersistenceError: Effect.die,
  EntityNotAssignedToRunner: Effect.die
} as const

const mutexFor = (key: string) =>
  Effect.map(Mutex.client, (clientFor) => {
    const mutex = clientFor(key)
    return {
      Acquire: (payload: Parameters<typeof mutex.Acquire>[0]) =>
        mutex.Acquire(payload).pipe(Effect.catchTags(undeliverable)),
      Renew: (payload: Parameters<typeof mutex.Renew>[0]) => mutex.Renew(payload).pipe(Effect.catchTags(undeliverable)),
      Release: (payload: Parameters<typeof mutex.Release>[0]) =>
        mutex.Release(payload).pipe(Effect.catchTags(undeliverable))
    }
  })

/** Acquires queued behind a holder on this runner (the entity's own gauge, moved under its lock). */
const waiting = Effect.map(Metric.snapshot, (snapshots) => {
  const gauge = snapshots.find((snapshot) => snapshot.id === "bosun_mutex_waiters")
  return gauge?.type === "Gauge" ? Number(gauge.state.value) : 0
})

const untilWaiting = (count: number) => eventually(waiting, (current) => current === count, Duration.seconds(10))

interface Held {
  readonly holder: string
  readonly fence: number
  readonly start: number
  readonly end: number
}

/** Runs critical sections and records who held the lock when, and how many were ever inside at once. */
const makeRecorder = () => {
  const held: Array<Held> = []
  let inside = 0
  let mostInside = 0
  const section = (holder: string, lease: MutexLease, work: Effect.Effect<void>) =>
    Effect.gen(function* () {
      inside++
      mostInside = Math.max(mostInside, inside)
      const start = Date.now()
      yield* work
      inside--
      held.push({ holder, fence: lease.fence, start, end: Date.now() })
    })
  return { held, section, mostInside: () => mostInside }
}

const assertOneAtATime = (held: ReadonlyArray<Held>) => {
  const byStart = [...held].sort((a, b) => a.start - b.start)
  for (let i = 1; i < byStart.length; i++) {
    assert.isAtLeast(byStart[i]?.start ?? 0, byStart[i - 1]?.end ?? Number.POSITIVE_INFINITY, "sections overlap")
    assert.strictEqual(byStart[i]?.fence, (byStart[i - 1]?.fence ?? 0) + 1, "the fence grows by one per grant")
  }
}

class Boom extends Data.TaggedError("Boom")<{ readonly reason: string }> {}

layer(cluster, { excludeTestServices: true, timeout: "120 seconds" })("the Mutex coordinator", (it) => {
  it.effect("contenders hold the lock one at a time, in the order they asked, each with a higher fence", () =>
    Effect.gen(function* () {
      const key = freshKey("fifo")
      const recorder = makeRecorder()
      const firstIn = yield* Deferred.make<void>()
      const letFirstGo = yield* Deferred.make<void>()
      const contend = (holder: string, work: Effect.Effect<void>) =>
        withMutex(key, { holder, lease: "30 seconds", wait: "20 seconds" })((lease) =>
          recorder.section(holder, lease, Effect.andThen(work, Effect.sleep("20 millis")))
        )
      const first = yield* Effect.forkChild(
        contend("first", Effect.andThen(Deferred.succeed(firstIn, undefined), Deferred.await(letFirstGo)))
      )
      yield* Deferred.await(firstIn)
      // Each contender is in the entity's queue before the next one asks.
      const second = yield* Effect.forkChild(contend("second", Effect.void))
      yield* untilWaiting(1)
      const third = yield* Effect.forkChild(contend("third", Effect.void))
      yield* untilWaiting(2)
      assert.deepStrictEqual(recorder.held, [], "nobody else got in while the first held the lock")
      yield* Deferred.succeed(letFirstGo, undefined)
      yield* Fiber.join(first)
      yield* Fiber.join(second)
      yield* Fiber.join(third)

      assert.deepStrictEqual(
        recorder.held.map((entry) => [entry.holder, entry.fence]),
        [
          ["first", 1],
          ["second", 2],
          ["third", 3]
        ]
      )
      assert.strictEqual(recorder.mostInside(), 1)
      assertOneAtATime(recorder.held)
    })
  )

  it.effect(
    "a holder that stops renewing loses the lock when its lease runs out, and the waiter gets it with a higher fence",
    () =>
      Effect.gen(function* () {
        const key = freshKey("dead-holder")
        const mutex = yield* mutexFor(key)
        // Acquires and then never renews: a holder whose process died.
        const dead = yield* mutex.Acquire({ holder: "dead", leaseMillis: 800, waitMillis: 0 })
        assert.deepStrictEqual([dead.key, dead.holder, dead.fence], [key, "dead", 1])

        const asked = Date.now()
        const next = yield* mutex.Acquire({ holder: "next", leaseMillis: 30_000, waitMillis: 10_000 })
        const waited = Date.now() - asked
        assert.deepStrictEqual([next.key, next.holder, next.fence], [key, "next", 2])
        assert.notStrictEqual(next.token, dead.token)
        // Granted (its expiry minus its lease) no earlier than the dead holder's lease ran out, by the database's clock...
        assert.isAtLeast(Date.parse(next.expiresAt) - 30_000, Date.parse(dead.expiresAt))
        // ...and woken at that expiry, not at the end of its own wait.
        assert.isBelow(waited, 5_000)

        const lost = yield* mutex.Renew({ token: dead.token, leaseMillis: 800 }).pipe(Effect.flip)
        assert.instanceOf(lost, MutexLeaseLost)
        assert.deepStrictEqual({ key: lost.key, token: lost.token }, { key, token: dead.token })
        assert.deepStrictEqual(yield* mutex.Release({ token: dead.token }), { released: false })
        const busy = yield* mutex.Acquire({ holder: "late", leaseMillis: 1_000, waitMillis: 0 }).pipe(Effect.flip)
        assert.strictEqual(busy.holder, "next", "the dead holder's release did not free the new holder's lock")
        assert.deepStrictEqual(yield* mutex.Release({ token: next.token }), { released: true })
      })
  )

  it.effect("renewing extends a live lease; a released or unknown token is refused with MutexLeaseLost", () =>
    Effect.gen(function* () {
      const key = freshKey("renew")
      const mutex = yield* mutexFor(key)
      const lease = yield* mutex.Acquire({ holder: "worker", leaseMillis: 2_000, waitMillis: 0 })
      const renewed = yield* mutex.Renew({ token: lease.token, leaseMillis: 60_000 })
      assert.deepStrictEqual(
        [renewed.key, renewed.token, renewed.holder, renewed.fence],
        [key, lease.token, "worker", lease.fence]
      )
      assert.isAbove(Date.parse(renewed.expiresAt), Date.parse(lease.expiresAt) + 50_000)

      assert.deepStrictEqual(yield* mutex.Release({ token: lease.token }), { released: true })
      const afterRelease = yield* mutex.Renew({ token: lease.token, leaseMillis: 60_000 }).pipe(Effect.flip)
      assert.deepStrictEqual(
        { tag: afterRelease._tag, key: afterRelease.key, token: afterRelease.token },
        { tag: "MutexLeaseLost", key, token: lease.token }
      )
      const unknown = yield* mutex.Renew({ token: "never-issued", leaseMillis: 60_000 }).pipe(Effect.flip)
      assert.deepStrictEqual(
        { tag: unknown._tag, key: unknown.key, token: unknown.token },
        { tag: "MutexLeaseLost", key, token: "never-issued" }
      )
    })
  )

  it.effect("releasing a stale token is harmless and says so; the current holder keeps the lock", () =>
    Effect.gen(function* () {
      const key = freshKey("stale-release")
      const mutex = yield* mutexFor(key)
      const first = yield* mutex.Acquire({ holder: "first", leaseMillis: 30_000, waitMillis: 0 })
      assert.deepStrictEqual(yield* mutex.Release({ token: first.token }), { released: true })
      assert.deepStrictEqual(yield* mutex.Release({ token: first.token }), { released: false })

      const second = yield* mutex.Acquire({ holder: "second", leaseMillis: 30_000, waitMillis: 0 })
      assert.strictEqual(second.fence, first.fence + 1)
      assert.deepStrictEqual(yield* mutex.Release({ token: first.token }), { released: false })
      const busy = yield* mutex.Acquire({ holder: "third", leaseMillis: 30_000, waitMillis: 0 }).pipe(Effect.flip)
      assert.instanceOf(busy, MutexBusy)
      assert.deepStrictEqual(
        { key: busy.key, holder: busy.holder, waitedMillis: busy.waitedMillis },
        { key, holder: "second", waitedMillis: 0 }
      )
      assert.deepStrictEqual(yield* mutex.Release({ token: second.token }), { released: true })
    })
  )

  it.effect("waiting longer than `wait` fails with MutexBusy naming the holder", () =>
    Effect.gen(function* () {
      const key = freshKey("busy")
      const mutex = yield* mutexFor(key)
      const owner = yield* mutex.Acquire({ holder: "owner", leaseMillis: 30_000, waitMillis: 0 })

      const asked = Date.now()
      const busy = yield* mutex.Acquire({ holder: "late", leaseMillis: 1_000, waitMillis: 300 }).pipe(Effect.flip)
      assert.isAtLeast(Date.now() - asked, 300)
      assert.deepStrictEqual(
        { tag: busy._tag, key: busy.key, holder: busy.holder, waitedMillis: busy.waitedMillis },
        { tag: "MutexBusy", key, holder: "owner", waitedMillis: 300 }
      )

      let ran = false
      const viaHelper = yield* withMutex(key, { holder: "helper", lease: "1 second", wait: "200 millis" })(
        Effect.sync(() => {
          ran = true
        })
      ).pipe(Effect.flip)
      assert.strictEqual(viaHelper._tag, "MutexBusy")
      assert.isFalse(ran, "the effect never runs without the lock")

      // The waiters that gave up left the queue: the next acquire after the release is served at once.
      assert.deepStrictEqual(yield* mutex.Release({ token: owner.token }), { released: true })
      const next = yield* mutex.Acquire({ holder: "next", leaseMillis: 1_000, waitMillis: 0 })
      assert.strictEqual(next.fence, owner.fence + 1)
    })
  )

  it.effect("withMutex releases the lock when its effect fails", () =>
    Effect.gen(function* () {
      const key = freshKey("fails")
      const error = yield* withMutex(key, { holder: "failing", lease: "30 seconds", wait: "1 second" })(
        Effect.fail(new Boom({ reason: "the tracker said no" }))
      ).pipe(Effect.flip)
      assert.deepStrictEqual(error, new Boom({ reason: "the tracker said no" }))

      const mutex = yield* mutexFor(key)
      const next = yield* mutex.Acquire({ holder: "next", leaseMillis: 1_000, waitMillis: 0 })
      assert.strictEqual(next.fence, 2)
    })
  )

  it.effect("withMutex releases the lock when its fiber is interrupted, holding or still waiting", () =>
    Effect.gen(function* () {
      const key = freshKey("interrupted")
      const mutex = yield* mutexFor(key)
      const started = yield* Deferred.make<MutexLease>()
      const holding = yield* Effect.forkChild(
        withMutex(key, { holder: "holding", lease: "30 seconds", wait: "1 second" })((lease) =>
          Effect.andThen(Deferred.succeed(started, lease), Effect.never)
        )
      )
      const held = yield* Deferred.await(started)
      yield* Fiber.interrupt(holding)
      const next = yield* mutex.Acquire({ holder: "next", leaseMillis: 30_000, waitMillis: 0 })
      assert.strictEqual(next.fence, held.fence + 1)

      // A waiter interrupted in the queue is never granted the lock.
      let waiterRan = false
      const waiting = yield* Effect.forkChild(
        withMutex(key, { holder: "waiting", lease: "30 seconds", wait: "20 seconds" })(
          Effect.sync(() => {
            waiterRan = true
          })
        )
      )
      yield* untilWaiting(1)
      yield* Fiber.interrupt(waiting)
      yield* untilWaiting(0)
      assert.deepStrictEqual(yield* mutex.Release({ token: next.token }), { released: true })
      const after = yield* mutex.Acquire({ holder: "after", leaseMillis: 1_000, waitMillis: 1_000 })
      assert.strictEqual(after.fence, next.fence + 1, "no grant went to the interrupted waiter")
      assert.isFalse(waiterRan)
      assert.isTrue(Exit.hasInterrupts(yield* Fiber.await(waiting)))
    })
  )

  it.effect("withMutex renews the lease while its effect runs longer than the lease", () =>
    Effect.gen(function* () {
      const key = freshKey("renews")
      const mutex = yield* mutexFor(key)
      const fence = yield* withMutex(key, { holder: "long", lease: "600 millis", wait: "1 second" })((lease) =>
        Effect.gen(function* () {
          yield* Effect.sleep("1500 millis")
          const busy = yield* mutex.Acquire({ holder: "intruder", leaseMillis: 1_000, waitMillis: 0 }).pipe(Effect.flip)
          assert.strictEqual(busy.holder, "long", "still held, two and a half leases later")
          return lease.fence
        })
      )
      const next = yield* mutex.Acquire({ holder: "next", leaseMillis: 1_000, waitMillis: 0 })
      assert.strictEqual(next.fence, fence + 1)
    })
  )

  it.effect("withMutex interrupts its effect and fails with MutexLeaseLost when the lease is lost", () =>
    Effect.gen(function* () {
      const key = freshKey("lost")
      const sql = yield* SqlClient.SqlClient
      const interrupted = yield* Deferred.make<void>()
      const error = yield* withMutex(key, { holder: "victim", lease: "600 millis", wait: "1 second" })(
        Effect.gen(function* () {
          // The lease runs out under it (a long pause of this process would do the same).
          yield* sql`UPDATE mutex_leases SET expires_at = now() - interval '1 second' WHERE lock_key = ${key}`
          return yield* Effect.never
        }).pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
      ).pipe(Effect.flip)
      assert.instanceOf(error, MutexLeaseLost)
      assert.strictEqual(error.key, key)
      assert.isTrue(yield* Deferred.isDone(interrupted))
    })
  )

  it.effect("a lease in the database from an instance on another runner is honoured, and the fence keeps growing", () =>
    Effect.gen(function* () {
      const key = freshKey("moved")
      const sql = yield* SqlClient.SqlClient
      // What an instance of this entity on another runner granted before the entity moved here.
      yield* sql`INSERT INTO mutex_leases (lock_key, fence, token, holder, acquired_at, expires_at)
                 VALUES (${key}, 41, 'granted-elsewhere', 'old-runner', now(), now() + interval '1 second')`
      const mutex = yield* mutexFor(key)
      const busy = yield* mutex.Acquire({ holder: "new", leaseMillis: 1_000, waitMillis: 0 }).pipe(Effect.flip)
      assert.strictEqual(busy.holder, "old-runner")
      // The old holder renews through the new instance.
      const renewed = yield* mutex.Renew({ token: "granted-elsewhere", leaseMillis: 800 })
      assert.deepStrictEqual([renewed.holder, renewed.fence], ["old-runner", 41])

      const next = yield* mutex.Acquire({ holder: "new", leaseMillis: 1_000, waitMillis: 10_000 })
      assert.strictEqual(next.fence, 42)
      assert.isAtLeast(Date.parse(next.expiresAt) - 1_000, Date.parse(renewed.expiresAt))
      const [row] = yield* sql<{ fence: bigint; holder: string; token: string }>`
        SELECT fence, holder, token FROM mutex_leases WHERE lock_key = ${key}`
      assert.deepStrictEqual(row, { fence: 42n, holder: "new", token: next.token })
    })
  )

  it.effect("random interleavings of holders never overlap, and fences follow the order they held the lock", () =>
    Effect.gen(function* () {
      const samples = fc.sample(
        fc.array(fc.record({ delay: fc.integer({ min: 0, max: 40 }), work: fc.integer({ min: 0, max: 25 }) }), {
          minLength: 2,
          maxLength: 6
        }),
        { numRuns: 8, seed: 7 }
      )
      for (const holders of samples) {
        const key = freshKey("property")
        const recorder = makeRecorder()
        yield* Effect.forEach(
          holders,
          ({ delay, work }, i) =>
            Effect.andThen(
              Effect.sleep(Duration.millis(delay)),
              withMutex(key, { holder: `h${i}`, lease: "10 seconds", wait: "30 seconds" })((lease) =>
                recorder.section(`h${i}`, lease, Effect.sleep(Duration.millis(work)))
              )
            ),
          { concurrency: "unbounded", discard: true }
        )
        const label = JSON.stringify(holders)
        assert.strictEqual(recorder.held.length, holders.length, label)
        assert.strictEqual(recorder.mostInside(), 1, label)
        assertOneAtATime(recorder.held)
        assert.deepStrictEqual(
          [...recorder.held].sort((a, b) => a.fence - b.fence).map((entry) => entry.fence),
          holders.map((_, i) => i + 1),
          label
        )
      }
    })
  )
})

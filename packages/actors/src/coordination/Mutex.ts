/**
 * Mutex, one entity per lock key such as `tracker-token:{org}` (docs/interface.md: What the service
 * does 8, Coordinators, Mutex; Design rules): an exclusive lock whose leases lapse unless renewed,
 * so a holder whose process died frees the lock after its lease and the next waiter gets it. Every
 * grant carries a fencing number that only grows, across releases and entity moves, for stores that
 * must refuse a writer whose lease has already passed to someone else.
 *
 * The lease itself lives in Postgres (`mutex_leases`), never in the entity: each grant, renewal and
 * release is one conditional statement judged by the database's clock, so an instance started on
 * another runner after a move honours a lease granted by the old one. The entity keeps only its
 * queue of waiting acquires (FIFO, each parked on a Deferred, woken by a release or by a timer at
 * the holder's expiry); its handlers run concurrently so a release is never stuck behind a wait.
 * `withMutex` is the client side: acquire, renew in the background, release on any exit.
 */
import { randomUUID } from "node:crypto"
import { Clock, Deferred, Duration, Effect, Metric, Option, Queue, Schema, Semaphore } from "effect"
import { Entity, type Sharding } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { SqlClient } from "effect/sql"

/** A granted lease: present `token` to renew or release, pass `fence` along with guarded writes. */
export const MutexLease = Schema.Struct({
  key: Schema.String,
  token: Schema.String,
  holder: Schema.String,
  fence: Schema.Int,
  /** ISO 8601, by the database's clock. */
  expiresAt: Schema.String
})
export type MutexLease = typeof MutexLease.Type

/** The wait ran out while someone else held the lock. */
export class MutexBusy extends Schema.TaggedError<MutexBusy>()("MutexBusy", {
  key: Schema.String,
  /** Who held it when the wait ended (null: it was just passing between holders). */
  holder: Schema.NullOr(Schema.String),
  waitedMillis: Schema.Int
}) {}

/** The token no longer holds the lock: it lapsed, was released, or never existed. */
export class MutexLeaseLost extends Schema.TaggedError<MutexLeaseLost>()("MutexLeaseLost", {
  key: Schema.String,
  token: Schema.String
}) {}

const DAY_MILLIS = 86_400_000
const LeaseMillis = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: DAY_MILLIS }))
const WaitMillis = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: DAY_MILLIS }))

export const Acquire = Rpc.make("Acquire", {
  payload: { holder: Schema.String, leaseMillis: LeaseMillis, waitMillis: WaitMillis },
  success: MutexLease,
  error: MutexBusy
})

export const Renew = Rpc.make("Renew", {
  payload: { token: Schema.String, leaseMillis: LeaseMillis },
  success: MutexLease,
  error: MutexLeaseLost
})

/** `released: false` when the token held nothing any more (already released or lapsed). */
export const Release = Rpc.make("Release", {
  payload: { token: Schema.String },
  success: Schema.Struct({ released: Schema.Boolean })
})

export const Mutex = Entity.make("Mutex", [Acquire, Renew, Release])

interface LeaseRow {
  readonly fence: bigint
  readonly holder: string
  readonly expires_at: Date
}

interface HolderRow {
  readonly holder: string | null
  readonly remaining_ms: number | null
}

interface Waiter {
  readonly holder: string
  readonly leaseMillis: number
  readonly granted: Deferred.Deferred<MutexLease>
  lease: MutexLease | undefined
}

/** Lock contention on this runner: acquires queued behind a holder, over every key. */
export const mutexWaiters = Metric.gauge("bosun_mutex_waiters", {
  description: "Acquires waiting at the Mutex entities of this runner"
})

/** Slack after the holder's expiry before the timer tries again, so it does not wake a hair early. */
const EXPIRY_SLACK_MILLIS = 5
const RETRY_AFTER_FAILURE_MILLIS = 1_000

const toLease = (key: string, token: string, row: LeaseRow): MutexLease => ({
  key,
  token,
  holder: row.holder,
  fence: Number(row.fence),
  expiresAt: row.expires_at.toISOString()
})

/** The statements of one lock key, each a single conditional statement judged by the database's clock. */
const leaseStatements = (sql: SqlClient.SqlClient, key: string) => ({
  // Free means no lease row, a released one, or a lapsed one; the fence grows on every grant.
  grant: (token: string, holder: string, leaseMillis: number) =>
    sql<LeaseRow>`
        INSERT INTO mutex_leases AS m (lock_key, fence, token, holder, acquired_at, expires_at, updated_at)
        VALUES (${key}, 1, ${token}, ${holder}, now(), now() + ${leaseMillis}::bigint * interval '1 millisecond', now())
        ON CONFLICT (lock_key) DO UPDATE
          SET fence = m.fence + 1, token = EXCLUDED.token, holder = EXCLUDED.holder,
              acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at, updated_at = EXCLUDED.updated_at
          WHERE m.expires_at IS NULL OR m.expires_at <= now()
        RETURNING fence, holder, expires_at`.pipe(Effect.orDie),

  currentHolder: sql<HolderRow>`
      SELECT holder, (EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000)::float8 AS remaining_ms
      FROM mutex_leases WHERE lock_key = ${key}`.pipe(
    Effect.orDie,
    Effect.map((rows) => rows[0])
  ),

  release: (token: string) =>
    sql<{ fence: bigint }>`
        UPDATE mutex_leases
        SET token = NULL, holder = NULL, acquired_at = NULL, expires_at = NULL, updated_at = now()
        WHERE lock_key = ${key} AND token = ${token} AND expires_at > now()
        RETURNING fence`.pipe(
      Effect.orDie,
      Effect.map((rows) => rows.length > 0)
    ),

  renew: (token: string, leaseMillis: number) =>
    sql<LeaseRow>`
          UPDATE mutex_leases
          SET expires_at = now() + ${leaseMillis}::bigint * interval '1 millisecond', updated_at = now()
          WHERE lock_key = ${key} AND token = ${token} AND expires_at > now()
          RETURNING fence, holder, expires_at`.pipe(
      Effect.orDie,
      Effect.flatMap(([row]) =>
        row === undefined ? Effect.fail(new MutexLeaseLost({ key, token })) : Effect.succeed(toLease(key, token, row))
      )
    )
})

/** What one Mutex entity keeps: its statements, its queue of waiters, and its timer. */
interface Lock {
  readonly key: string
  readonly leases: ReturnType<typeof leaseStatements>
  readonly waiters: Array<Waiter>
  /** When the current holder's lease runs out while someone waits. */
  dueAt: number | undefined
  /** Wakes the timer to look at `dueAt` again. */
  readonly rearm: Queue.Queue<void>
  /**
   * Queue changes and grants happen one at a time and are not cut short by an interrupted caller:
   * a grant committed in the database is always handed to its waiter or released again.
   */
  readonly critical: <A, E>(effect: Effect.Effect<A, E>) => Effect.Effect<A, E>
}

/** Grants the lock to waiters from the head of the queue for as long as the database says it is free. */
const pump = (lock: Lock): Effect.Effect<void> =>
  Effect.gen(function* () {
    lock.dueAt = undefined
    for (let head = lock.waiters[0]; head !== undefined; head = lock.waiters[0]) {
      const token = randomUUID()
      const [row] = yield* lock.leases.grant(token, head.holder, head.leaseMillis)
      if (row === undefined) {
        const current = yield* lock.leases.currentHolder
        const remaining = Math.max(0, Number(current?.remaining_ms ?? 0))
        lock.dueAt = (yield* Clock.currentTimeMillis) + remaining + EXPIRY_SLACK_MILLIS
        yield* Queue.offer(lock.rearm, undefined)
        return
      }
      lock.waiters.shift()
      yield* Metric.modify(mutexWaiters, -1)
      head.lease = toLease(lock.key, token, row)
      yield* Deferred.succeed(head.granted, head.lease)
    }
  }).pipe(
    // A failed database call leaves the waiters queued: the timer tries again soon, not at the next message.
    Effect.onError(() =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        lock.dueAt = now + RETRY_AFTER_FAILURE_MILLIS
        return Queue.offer(lock.rearm, undefined)
      })
    ),
    Effect.withSpan("Mutex.pump", { attributes: { key: lock.key } })
  )

/** The timer: pumps once `dueAt` has come, and sleeps until then or until it is rearmed. */
const expiryTimer = (lock: Lock) =>
  Effect.forever(
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      if (lock.dueAt === undefined) {
        yield* Queue.take(lock.rearm)
      } else if (now < lock.dueAt) {
        yield* Queue.take(lock.rearm).pipe(Effect.timeoutOption(Duration.millis(lock.dueAt - now)))
      } else {
        yield* lock
          .critical(pump(lock))
          .pipe(Effect.catchCause((cause) => Effect.logError("mutex_expiry_pump_failed", cause)))
      }
    })
  )

const leave = (lock: Lock, waiter: Waiter) =>
  Effect.suspend(() => {
    const index = lock.waiters.indexOf(waiter)
    if (index < 0) return Effect.void
    lock.waiters.splice(index, 1)
    return Metric.modify(mutexWaiters, -1)
  })

/** The caller went away or the handler failed: out of the queue, and a fresh lease handed back. */
const abandon = (lock: Lock, waiter: Waiter) =>
  lock.critical(
    Effect.gen(function* () {
      yield* leave(lock, waiter)
      if (waiter.lease !== undefined) {
        yield* lock.leases.release(waiter.lease.token)
        yield* pump(lock)
      }
    })
  )

/** Queues the acquire and waits up to `waitMillis` for its grant. */
const acquire = (
  lock: Lock,
  payload: { readonly holder: string; readonly leaseMillis: number; readonly waitMillis: number }
) => {
  const waiter: Waiter = {
    holder: payload.holder,
    leaseMillis: payload.leaseMillis,
    granted: Deferred.makeUnsafe<MutexLease>(),
    lease: undefined
  }
  return Effect.gen(function* () {
    yield* lock.critical(
      Effect.andThen(
        Effect.sync(() => lock.waiters.push(waiter)),
        Effect.andThen(Metric.modify(mutexWaiters, 1), pump(lock))
      )
    )
    const granted = yield* Deferred.await(waiter.granted).pipe(
      Effect.timeoutOption(Duration.millis(payload.waitMillis))
    )
    if (Option.isSome(granted)) return granted.value
    return yield* lock.critical(
      Effect.gen(function* () {
        // Granted between the timeout and taking the lock: the grant wins.
        if (waiter.lease !== undefined) return waiter.lease
        yield* leave(lock, waiter)
        const current = yield* lock.leases.currentHolder
        return yield* new MutexBusy({
          key: lock.key,
          holder: current?.holder ?? null,
          waitedMillis: payload.waitMillis
        })
      })
    )
  }).pipe(Effect.onError(() => abandon(lock, waiter)))
}

export const MutexLive = Mutex.toLayer(
  Effect.gen(function* () {
    const key = (yield* Entity.CurrentAddress).entityId
    const semaphore = yield* Semaphore.make(1)
    const lock: Lock = {
      key,
      leases: leaseStatements(yield* SqlClient.SqlClient, key),
      waiters: [],
      dueAt: undefined,
      rearm: yield* Queue.sliding<void>(1),
      critical: (effect) => semaphore.withPermits(1)(Effect.uninterruptible(effect))
    }
    yield* Effect.forkScoped(expiryTimer(lock))

    return Mutex.of({
      Acquire: ({ payload }) => acquire(lock, payload),
      Renew: ({ payload }) => lock.leases.renew(payload.token, payload.leaseMillis),
      Release: ({ payload }) =>
        lock.critical(
          Effect.gen(function* () {
            const released = yield* lock.leases.release(payload.token)
            yield* pump(lock)
            return { released }
          })
        )
    })
  }),
  { concurrency: "unbounded" }
)

export interface WithMutexOptions {
  /** Who holds it, for operators and the busy error (a process, a workflow step). */
  readonly holder: string
  /** How long the lock outlives a holder that stops renewing. */
  readonly lease: Duration.Input
  /** How long to queue for the lock before failing with `MutexBusy`. */
  readonly wait: Duration.Input
}

/** Renewals per lease: two may fail in a row before the lease runs out. */
const RENEWALS_PER_LEASE = 3

/** The cluster could not deliver a message: not something a lock's caller can act on. */
const clusterFailuresAsDefects = {
  MailboxFull: Effect.die,
  AlreadyProcessingMessage: Effect.die,
  PersistenceError: Effect.die,
  EntityNotAssignedToRunner: Effect.die
} as const

const toMillis = (input: Duration.Input, minimum: number) =>
  Math.max(minimum, Math.min(DAY_MILLIS, Math.round(Duration.toMillis(Duration.fromInputUnsafe(input)))))

/**
 * Runs `use` holding the lock `key`: waits up to `wait` for it (else `MutexBusy`), renews the lease
 * every third of it while `use` runs, and releases it when `use` ends however it ends. If the lease
 * is lost meanwhile (renewals refused, or none got through before it ran out), `use` is interrupted
 * and the result is `MutexLeaseLost`. `use` may take the lease, to pass its fence along.
 */
export const withMutex =
  (key: string, options: WithMutexOptions) =>
  <A, E, R>(
    use: Effect.Effect<A, E, R> | ((lease: MutexLease) => Effect.Effect<A, E, R>)
  ): Effect.Effect<A, E | MutexBusy | MutexLeaseLost, R | Sharding.Sharding> =>
    Effect.gen(function* () {
      const mutex = (yield* Mutex.client)(key)
      const leaseMillis = toMillis(options.lease, 1)
      const waitMillis = toMillis(options.wait, 0)

      // Not delivered is not refused: the next renewal may get through before the lease runs out.
      const undelivered = (error: unknown) => Effect.as(Effect.logWarning("mutex_renew_undelivered", error), false)

      const keepRenewed = (lease: MutexLease) =>
        Effect.gen(function* () {
          // From when `use` starts, a little later than the grant: a conservative deadline would need
          // the database's clock, and a renewal is due long before it anyway.
          let deadline = (yield* Clock.currentTimeMillis) + leaseMillis
          for (;;) {
            yield* Effect.sleep(Duration.millis(Math.max(1, Math.floor(leaseMillis / RENEWALS_PER_LEASE))))
            const sentAt = yield* Clock.currentTimeMillis
            const renewed = yield* mutex.Renew({ token: lease.token, leaseMillis }).pipe(
              Effect.as(true),
              Effect.catchTags({
                MailboxFull: undelivered,
                AlreadyProcessingMessage: undelivered,
                PersistenceError: undelivered,
                EntityNotAssignedToRunner: undelivered
              })
            )
            if (renewed) deadline = sentAt + leaseMillis
            else if (sentAt >= deadline) return yield* new MutexLeaseLost({ key, token: lease.token })
          }
        })

      return yield* Effect.acquireUseRelease(
        // Waiting is interruptible; the entity hands back a lease granted to a caller that left.
        Effect.interruptible(
          mutex
            .Acquire({ holder: options.holder, leaseMillis, waitMillis })
            .pipe(Effect.catchTags(clusterFailuresAsDefects))
        ),
        (lease) => Effect.raceFirst(Effect.isEffect(use) ? use : use(lease), keepRenewed(lease)),
        (lease) =>
          mutex
            .Release({ token: lease.token })
            .pipe(Effect.catchCause((cause) => Effect.logWarning("mutex_release_failed", cause)))
      )
    }).pipe(Effect.withSpan("Mutex.withMutex", { attributes: { key, holder: options.holder } }))

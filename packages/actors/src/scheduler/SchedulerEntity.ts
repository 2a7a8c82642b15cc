/**
 * The Scheduler's address in the cluster (docs/interface.md: Coordinators, Scheduler, singleton `global`):
 * one entity instance, `global`, reached with `Wake` — a volatile wake-up that carries nothing,
 * since what changed is in the database — and kept up by `Keepalive`. Handlers, crons and finished attempts send it after
 * their commit; the Scheduler's own alarm sends it too, so a lost wake-up only delays a pass.
 * Defined apart from its behaviour (`Scheduler.ts`) so attempts can wake it without a cycle.
 */
import { Effect } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

export const Wake = Rpc.make("Wake")

/**
 * Keeps the Scheduler running without asking for a pass: an entity starts at its first message,
 * so after its shard moves to another runner this brings it up there at once rather than at the
 * next wake-up (the alarm's idle tick).
 */
export const Keepalive = Rpc.make("Keepalive")

export const SchedulerEntity = Entity.make("Scheduler", [Wake, Keepalive])

export const SCHEDULER_ID = "global"

/** Wakes the Scheduler; never fails the caller (the alarm catches up on a lost wake-up). */
export const wakeScheduler = Effect.gen(function* () {
  const clientFor = yield* SchedulerEntity.client
  yield* clientFor(SCHEDULER_ID).Wake(undefined, { discard: true })
}).pipe(
  Effect.catchCause((cause) => Effect.logWarning("scheduler_wake_failed", cause)),
  Effect.withSpan("Scheduler.wake")
)

/**
 * Brings the Scheduler up if it is not (`Keepalive`); a failure is only logged, the next one
 * retries. Sent every 250 ms, so its spans are never sampled: the unsampled parent makes the RPC's
 * client span and the entity's server span unsampled too, and no trace backend gets four
 * traces a second of nothing.
 */
export const keepSchedulerUp = Effect.gen(function* () {
  const clientFor = yield* SchedulerEntity.client
  yield* clientFor(SCHEDULER_ID).Keepalive(undefined, { discard: true })
}).pipe(
  Effect.catchCause((cause) => Effect.logDebug("scheduler_keepalive_failed", cause)),
  Effect.withSpan("Scheduler.keepalive", { sampled: false })
)

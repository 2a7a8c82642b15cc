/**
 * The Scheduler's address in the cluster (spec: Coordinators, Scheduler, singleton `global`):
 * one entity instance, `global`, reached with `Wake` — a volatile wake-up that carries nothing,
 * since what changed is in the database. Handlers, crons and finished attempts send it after
 * their commit; the Scheduler's own alarm sends it too, so a lost wake-up only delays a pass.
 * Defined apart from its behaviour (`Scheduler.ts`) so attempts can wake it without a cycle.
 */
import { Effect } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

export const Wake = Rpc.make("Wake")

export const SchedulerEntity = Entity.make("Scheduler", [Wake])

export const SCHEDULER_ID = "global"

/** Wakes the Scheduler; never fails the caller (the alarm catches up on a lost wake-up). */
export const wakeScheduler = Effect.gen(function* () {
  const clientFor = yield* SchedulerEntity.client
  yield* clientFor(SCHEDULER_ID).Wake(undefined, { discard: true })
}).pipe(
  Effect.catchCause((cause) => Effect.logWarning("scheduler_wake_failed", cause)),
  Effect.withSpan("Scheduler.wake")
)

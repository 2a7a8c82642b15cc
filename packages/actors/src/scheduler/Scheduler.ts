/**
 * The Scheduler (docs/interface.md: Coordinators, Scheduler; Design rules): the entity
 * `Scheduler/global` runs passes (`SchedulerPass.ts`) — the only code that changes a job's status —
 * and hands each claimed attempt to the workflow engine as a `RunAttemptWorkflow`.
 *
 * Wake-ups coalesce: however many arrive during a pass, one more pass follows. Between wake-ups
 * the entity's alarm fires when the pass said something is next due (a batch window closing, a
 * retry's backoff ending, a lease running out), and at least every `idleTick`. A cluster
 * singleton, `SchedulerAlarm`, wakes the entity every `idleTick` too, so after a runner dies the
 * Scheduler comes back on another runner without waiting for outside traffic.
 */
import { Duration, Effect, Layer, Queue } from "effect"
import { Singleton } from "effect/cluster"
import { recordAttemptFailure, recordQueueWaits } from "../attempt/AttemptMetrics.ts"
import { MigrationGate } from "../attempt/AttemptPorts.ts"
import { RunAttemptWorkflow } from "../attempt/RunAttemptWorkflow.ts"
import { RunEvents } from "../events/RunEvents.ts"
import { keepSchedulerUp, SchedulerEntity, wakeScheduler } from "./SchedulerEntity.ts"
import { type AttemptRef, markStarted, runPass, type SchedulerSettings } from "./SchedulerPass.ts"

export interface SchedulerLayerSettings extends SchedulerSettings {
  /** The longest the Scheduler sleeps without a wake-up. */
  readonly idleTick: Duration.Duration
  /**
   * How often the alarm makes sure the Scheduler entity is up: after a hand-over between runners,
   * the longest it stays down once its shard has a new owner.
   */
  readonly keepalive: Duration.Duration
}

const start = (ref: AttemptRef) =>
  RunAttemptWorkflow.execute(
    { organizationId: ref.organizationId, runId: ref.runId, attempt: ref.attempt },
    { discard: true }
  ).pipe(
    Effect.andThen(markStarted(ref)),
    Effect.catchCause((cause) =>
      Effect.logError("attempt_start_failed", cause).pipe(
        Effect.annotateLogs({ run_id: ref.runId, attempt_id: `${ref.runId}:${ref.attempt}` })
      )
    )
  )

const interrupt = (ref: AttemptRef) =>
  Effect.flatMap(
    RunAttemptWorkflow.executionId({ organizationId: ref.organizationId, runId: ref.runId, attempt: ref.attempt }),
    (executionId) => RunAttemptWorkflow.interrupt(executionId)
  ).pipe(
    Effect.tap(() =>
      Effect.logWarning("attempt_lease_expired").pipe(
        Effect.annotateLogs({ run_id: ref.runId, attempt_id: `${ref.runId}:${ref.attempt}` })
      )
    ),
    Effect.catchCause((cause) => Effect.logError("attempt_interrupt_failed", cause))
  )

export const layerScheduler = (settings: SchedulerLayerSettings) =>
  Layer.mergeAll(
    SchedulerEntity.toLayer(
      Effect.gen(function* () {
        const wakeups = yield* Queue.sliding<void>(1)
        const runEvents = yield* RunEvents.client
        const pass = Effect.gen(function* () {
          const report = yield* runPass(settings)
          // Fanned out after the commit. A lost publish leaves a stream open until its period ends; the
          // client's reconnect then reads the event from the database.
          yield* Effect.forEach(
            report.ended,
            (ended) =>
              runEvents(ended.runId)
                .Publish({ events: [ended.event] }, { discard: true })
                .pipe(Effect.ignore),
            { discard: true, concurrency: 16 }
          )
          yield* recordQueueWaits(report.queueWaits)
          yield* Effect.forEach(report.expired, interrupt, { discard: true })
          // An attempt whose worker died never reaches its own finish-attempt, where failures are
          // counted: the pass that fails it for its lease counts it (a crash-looping runner shows).
          yield* Effect.forEach(report.expired, () => recordAttemptFailure("lease", "lease_expired"), { discard: true })
          yield* Effect.forEach(report.toStart, start, { discard: true, concurrency: 16 })
          if (report.claimed > 0 || report.settled > 0 || report.expired.length > 0) {
            yield* Effect.logDebug("scheduler_pass").pipe(
              Effect.annotateLogs({
                claimed: report.claimed,
                settled: report.settled,
                expired: report.expired.length
              })
            )
          }
          return report.nextDueAt
        })
        const gate = yield* MigrationGate
        const loop = Effect.gen(function* () {
          // The jobs tables exist once the migrations are applied.
          yield* gate.awaitReady
          let nextDueAt: Date | null = null
          for (;;) {
            const idle = Duration.toMillis(settings.idleTick)
            const untilDue = nextDueAt === null ? idle : Math.max(0, nextDueAt.getTime() - Date.now()) + 5
            yield* Queue.take(wakeups).pipe(Effect.timeoutOption(Duration.millis(Math.min(idle, untilDue))))
            nextDueAt = yield* pass.pipe(
              Effect.catchCause((cause) => Effect.as(Effect.logError("scheduler_pass_failed", cause), null))
            )
          }
        })
        // Where the Scheduler runs, for operators following a hand-over between runners (and the
        // chaos test, which checks from these lines that two runners never ran it at once).
        yield* Effect.logInfo("scheduler_started")
        yield* Effect.addFinalizer(() => Effect.logInfo("scheduler_stopped"))
        yield* Effect.forkScoped(loop)
        yield* Queue.offer(wakeups, undefined)
        return SchedulerEntity.of({
          Wake: () => Effect.asVoid(Queue.offer(wakeups, undefined)),
          Keepalive: () => Effect.void
        })
      }),
      { maxIdleTime: Duration.infinity }
    ),
    Singleton.make(
      "SchedulerAlarm",
      Effect.all(
        [
          Effect.forever(Effect.andThen(wakeScheduler, Effect.sleep(settings.idleTick))),
          Effect.forever(Effect.andThen(keepSchedulerUp, Effect.sleep(settings.keepalive)))
        ],
        { concurrency: 2, discard: true }
      )
    )
  )

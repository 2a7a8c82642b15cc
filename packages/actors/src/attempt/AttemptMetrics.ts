/**
 * The runs' Prometheus metrics recorded on a runner (docs/operations.md: Metrics): how long a run waited in its
 * lane before an attempt was claimed, how long after its run was created the first event was
 * written, and which step failed an attempt with which cause. The server's `/metrics` renders them
 * with the rest of the process's registry.
 */
import { Effect, Metric } from "effect"

const SECONDS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600]

export const queueWait = Metric.histogram("bosun_run_queue_wait_seconds", {
  description: "Seconds a run's job waited, due, in its lane before an attempt was claimed, by lane",
  boundaries: SECONDS
})

export const timeToFirstEvent = Metric.histogram("bosun_run_time_to_first_event_seconds", {
  description: "Seconds from a run's creation to its first event written, by workflow type",
  boundaries: SECONDS
})

export const attemptFailures = Metric.counter("bosun_attempt_failures_total", {
  description: "Attempts that ended FAILED, by the step that failed and the failure's code"
})

export const recordQueueWaits = (waits: ReadonlyArray<{ readonly lane: string; readonly seconds: number }>) =>
  Effect.forEach(waits, ({ lane, seconds }) => Metric.update(Metric.withAttributes(queueWait, { lane }), seconds), {
    discard: true
  })

export const recordFirstEvent = (workflowType: string, seconds: number) =>
  Metric.update(Metric.withAttributes(timeToFirstEvent, { workflow_type: workflowType }), seconds)

export const recordAttemptFailure = (step: string, cause: string) =>
  Metric.update(Metric.withAttributes(attemptFailures, { step, cause }), 1)

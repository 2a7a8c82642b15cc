/**
 * The actors' `RunQueue` as tests call it: over whatever SqlClient the test provides (joining its
 * transaction when it has one), without building the server's layers.
 */
import { type NewRun, RunQueue } from "@bosun/actors/jobs/RunQueue"
import { Effect } from "effect"

export const enqueueRun = (run: NewRun) =>
  RunQueue.use((queue) => queue.enqueue(run)).pipe(Effect.provide(RunQueue.layer))

export const requestCancel = (organizationId: string, runId: string) =>
  RunQueue.use((queue) => queue.requestCancel(organizationId, runId)).pipe(Effect.provide(RunQueue.layer))

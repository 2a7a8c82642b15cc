/**
 * How a work item gets a run: its intake run (the request, or a follow-up, to be answered) or its
 * implement run (an approved plan), queued on the item's session and made the item's active run,
 * in the caller's transaction. It queues through the actors' `RunQueue`; what a run does is the
 * workflows' (`WorkItemIntakeWorkflow`, `WorkItemImplementWorkflow`).
 */
import { type QueuedRun, RunQueue } from "@bosun/actors/jobs/RunQueue"
import { Context, Effect, Layer } from "effect"
import { RepositoriesRepo } from "../repositories/index.ts"
import { WorkItemsRepo } from "./WorkItemsRepo.ts"

export const WORK_ITEM_INTAKE = "work_item_intake"
export const WORK_ITEM_IMPLEMENT = "work_item_implement"

export interface WorkItemOfRun {
  readonly id: string
  readonly sessionKey: string | null
  readonly primaryRepositoryId: string | null
}

export class WorkItemRuns extends Context.Service<
  WorkItemRuns,
  {
    /**
     * Queues the item's intake run. An item that names no repository runs on the organization's
     * only available one, if it has exactly one (so the agent can read the code it is asked about).
     */
    readonly enqueueIntake: (organizationId: string, item: WorkItemOfRun) => Effect.Effect<QueuedRun>
    /** Queues the approved item's implement run. */
    readonly enqueueImplement: (organizationId: string, item: WorkItemOfRun) => Effect.Effect<QueuedRun>
  }
>()("bosun/server/features/workItems/WorkItemRuns") {
  static readonly layer = Layer.effect(
    WorkItemRuns,
    Effect.gen(function* () {
      const runQueue = yield* RunQueue
      const workItems = yield* WorkItemsRepo
      const repositories = yield* RepositoriesRepo
      return WorkItemRuns.of({
        enqueueIntake: Effect.fn("WorkItemRuns.enqueueIntake")(function* (organizationId, item) {
          const available =
            item.primaryRepositoryId !== null
              ? []
              : (yield* repositories.list(organizationId)).filter((repository) => repository.available)
          // The run answers the conversation as it is now: a later follow-up gets a run of its own.
          const conversation = (yield* workItems.messages(organizationId, item.id)).length
          const queued = yield* runQueue.enqueue({
            organizationId,
            repositoryId: item.primaryRepositoryId ?? (available.length === 1 ? (available[0]?.id ?? null) : null),
            workflowType: WORK_ITEM_INTAKE,
            lane: "AGENT",
            sessionKey: item.sessionKey ?? undefined,
            inputSnapshot: { work_item_id: item.id, conversation_length: conversation }
          })
          yield* workItems.startRun(organizationId, item.id, queued.runId)
          return queued
        }),
        enqueueImplement: Effect.fn("WorkItemRuns.enqueueImplement")(function* (organizationId, item) {
          const queued = yield* runQueue.enqueue({
            organizationId,
            repositoryId: item.primaryRepositoryId,
            workflowType: WORK_ITEM_IMPLEMENT,
            lane: "AGENT",
            sessionKey: item.sessionKey ?? undefined,
            inputSnapshot: { work_item_id: item.id }
          })
          yield* workItems.startRun(organizationId, item.id, queued.runId)
          return queued
        })
      })
    })
  )
}

/**
 * `GET .../work-items`, `GET .../work-items/{id}` and `POST .../work-items/{id}/actions`
 * (docs/interface.md: Organization endpoints). Members may act on their organization's items; an
 * action the item does not list is 409 `action_not_available`; each accepted action is audited.
 *
 * An action that starts work queues its run in the same transaction (the actions endpoint drives
 * the same transitions as chat/ticket replies) and wakes the Scheduler after the commit: APPROVE
 * (and RETRY of an item that failed implementing) the implement run; RETRY of an item that failed
 * in intake, and REOPEN, the intake run.
 */
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { BosunApi, Conflict, CurrentUser, ErrorCodes, NotFound, type WorkItemAction } from "@bosun/domain"
import { Effect, Option } from "effect"
import { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { WorkItemRuns } from "./WorkItemRuns.ts"
import { WorkItemsRepo } from "./WorkItemsRepo.ts"

const workItemNotFound = NotFound.fromCode(ErrorCodes.notFound, "No work item has this id in this organization")

export const WorkItemsHttp = group(
  BosunApi,
  "workItems",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const items = yield* WorkItemsRepo
    const audit = yield* AuditLog
    const workItemRuns = yield* WorkItemRuns
    const sql = yield* SqlClient.SqlClient
    const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, yield* Sharding.Sharding)

    /** Applies the action, queuing the run it starts. */
    const act = (organizationId: string, id: string, action: WorkItemAction) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const updated = yield* items.act(organizationId, id, action)
            if (Option.isNone(updated)) return Option.none()
            const runs =
              action === "APPROVE" || (action === "RETRY" && updated.value.phase === "IMPLEMENTING")
                ? workItemRuns.enqueueImplement
                : (action === "RETRY" || action === "REOPEN") && updated.value.phase === "INTAKE"
                  ? workItemRuns.enqueueIntake
                  : undefined
            if (runs === undefined) return Option.some({ item: updated.value, queued: false })
            const found = yield* items.forRun(organizationId, id)
            yield* runs(organizationId, {
              id,
              sessionKey: Option.match(found, { onNone: () => null, onSome: (run) => run.sessionKey }),
              primaryRepositoryId: updated.value.primary_repository_id
            })
            const now = yield* items.find(organizationId, id)
            return Option.some({ item: Option.getOrElse(now, () => updated.value), queued: true })
          })
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))

    return handlers
      .handle("list", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          return { data: yield* items.list(params.organization_id) }
        })
      )
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const item = yield* items.find(params.organization_id, params.work_item_id)
          if (Option.isNone(item)) return yield* workItemNotFound
          return { data: item.value }
        })
      )
      .handle("act", ({ params, payload }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const user = yield* CurrentUser
          const acted = yield* audit
            .audited(act(params.organization_id, params.work_item_id, payload.action), ({ item }) => ({
              organizationId: params.organization_id,
              actor: { kind: "user", userId: user.userId },
              action: `work_item.${payload.action.toLowerCase()}`,
              target: `work_item:${params.work_item_id}`,
              details: { state: item.state }
            }))
            .pipe(
              Effect.catchTag("ActionNotAvailable", ({ state, available }) =>
                Effect.fail(
                  Conflict.fromCode(
                    ErrorCodes.actionNotAvailable,
                    `This work item is ${state}; it accepts ${available.length === 0 ? "no action" : available.join(", ")}`
                  )
                )
              )
            )
          if (Option.isNone(acted)) return yield* workItemNotFound
          if (acted.value.queued) yield* wake
          return { data: acted.value.item }
        })
      )
  })
)

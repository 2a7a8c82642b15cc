/**
 * `GET .../work-items`, `GET .../work-items/{id}` and `POST .../work-items/{id}/actions` (spec:
 * Organization endpoints). Members may act on their organization's items; an action the item
 * does not list is 409 `action_not_available`; each accepted action is audited.
 */
import { BosunApi, Conflict, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { AuditLog } from "../persistence/AuditLog.ts"
import { WorkItemsRepo } from "../persistence/WorkItemsRepo.ts"
import { group } from "./ApiGroup.ts"
import { OrgAccess } from "./OrgAccess.ts"

const workItemNotFound = NotFound.fromCode(ErrorCodes.notFound, "No work item has this id in this organization")

export const WorkItemsHttp = group(
  BosunApi,
  "workItems",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const items = yield* WorkItemsRepo
    const audit = yield* AuditLog
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
          const item = yield* audit
            .audited(items.act(params.organization_id, params.work_item_id, payload.action), (updated) => ({
              organizationId: params.organization_id,
              actor: { kind: "user", userId: user.userId },
              action: `work_item.${payload.action.toLowerCase()}`,
              target: `work_item:${params.work_item_id}`,
              details: { state: updated.state }
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
          if (Option.isNone(item)) return yield* workItemNotFound
          return { data: item.value }
        })
      )
  })
)

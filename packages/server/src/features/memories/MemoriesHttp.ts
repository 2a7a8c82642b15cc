/**
 * `GET .../memories`, `GET .../memories/{memory_id}` (members) and `PATCH .../memories/{memory_id}`
 * (docs/interface.md: Organization endpoints). Enabling or disabling needs ADMIN (a memory steers
 * every review of the organization), works only on an approved memory (409 `memory_not_approved`
 * otherwise), sets last_toggled_at/by and is audited. `POST .../memories/{memory_id}/decision`
 * (ADMIN) approves or rejects a PROPOSED memory once (409 `memory_already_decided`), records
 * approved_by/at and is audited; approving leaves it disabled, since `enabled` is set by the PATCH
 * alone (docs/interface.md: Resources "Memory").
 */
import { BosunApi, Conflict, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { MemoriesRepo } from "./MemoriesRepo.ts"

const memoryNotFound = NotFound.fromCode(ErrorCodes.notFound, "No memory has this id in this organization")

export const MemoriesHttp = group(
  BosunApi,
  "memories",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const memories = yield* MemoriesRepo
    const audit = yield* AuditLog
    return handlers
      .handle("list", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          return { data: yield* memories.list(params.organization_id) }
        })
      )
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const memory = yield* memories.find(params.organization_id, params.memory_id)
          if (Option.isNone(memory)) return yield* memoryNotFound
          return { data: memory.value }
        })
      )
      .handle("toggle", ({ params, payload }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          const user = yield* CurrentUser
          const toggled = yield* audit
            .audited(memories.toggle(params.organization_id, params.memory_id, payload.enabled, user.userId), () => ({
              organizationId: params.organization_id,
              actor: { kind: "user", userId: user.userId },
              action: payload.enabled ? "memory.enable" : "memory.disable",
              target: `memory:${params.memory_id}`
            }))
            .pipe(
              Effect.catchTag("MemoryNotApproved", ({ lifecycle }) =>
                Effect.fail(
                  Conflict.fromCode(
                    ErrorCodes.memoryNotApproved,
                    `Only an approved memory can be enabled or disabled; this one is ${lifecycle}`
                  )
                )
              )
            )
          if (Option.isNone(toggled)) return yield* memoryNotFound
          return { data: toggled.value }
        })
      )
      .handle("decide", ({ params, payload }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          const user = yield* CurrentUser
          const approve = payload.decision === "approve"
          const decided = yield* audit
            .audited(memories.decide(params.organization_id, params.memory_id, approve, user.userId), () => ({
              organizationId: params.organization_id,
              actor: { kind: "user", userId: user.userId },
              action: approve ? "memory.approve" : "memory.reject",
              target: `memory:${params.memory_id}`
            }))
            .pipe(
              Effect.catchTag("MemoryAlreadyDecided", ({ lifecycle }) =>
                Effect.fail(
                  Conflict.fromCode(
                    ErrorCodes.memoryAlreadyDecided,
                    `Only a proposed memory can be approved or rejected; this one is ${lifecycle}`
                  )
                )
              )
            )
          if (Option.isNone(decided)) return yield* memoryNotFound
          return { data: decided.value }
        })
      )
  })
)

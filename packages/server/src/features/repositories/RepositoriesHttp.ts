/**
 * `GET .../repositories`, `GET`/`PATCH .../repositories/{repository_id}`
 * (docs/interface.md: Organization endpoints). Reads need membership; enabling or pausing reviews
 * needs ADMIN and is audited.
 */
import { BosunApi, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { RepositoriesRepo } from "./RepositoriesRepo.ts"

const repositoryNotFound = NotFound.fromCode(ErrorCodes.notFound, "No repository has this id in this organization")

export const RepositoriesHttp = group(
  BosunApi,
  "repositories",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const repositories = yield* RepositoriesRepo
    const audit = yield* AuditLog
    return handlers
      .handle("list", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          return { data: yield* repositories.list(params.organization_id) }
        })
      )
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const repository = yield* repositories.find(params.organization_id, params.repository_id)
          if (Option.isNone(repository)) return yield* repositoryNotFound
          return { data: repository.value }
        })
      )
      .handle("update", ({ params, payload }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          const user = yield* CurrentUser
          const updated = yield* audit.audited(
            repositories.setEnabled(params.organization_id, params.repository_id, payload.enabled),
            () => ({
              organizationId: params.organization_id,
              actor: { kind: "user", userId: user.userId },
              action: payload.enabled ? "repository.enable" : "repository.pause",
              target: `repository:${params.repository_id}`
            })
          )
          if (Option.isNone(updated)) return yield* repositoryNotFound
          return { data: updated.value }
        })
      )
  })
)

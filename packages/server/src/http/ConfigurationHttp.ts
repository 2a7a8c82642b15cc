/**
 * `GET`/`PUT .../repositories/{repository_id}/configuration` (spec: Organization endpoints).
 * Reading needs membership; writing needs ADMIN, is audited, and answers 204. A repository of
 * another organization is 404 for both.
 */
import { BosunApi, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { AuditLog } from "../persistence/AuditLog.ts"
import { ConfigurationRepo } from "../persistence/ConfigurationRepo.ts"
import { RepositoriesRepo } from "../persistence/RepositoriesRepo.ts"
import { group } from "./ApiGroup.ts"
import { OrgAccess } from "./OrgAccess.ts"

const repositoryNotFound = NotFound.fromCode(ErrorCodes.notFound, "No repository has this id in this organization")

export const ConfigurationHttp = group(
  BosunApi,
  "configuration",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const repositories = yield* RepositoriesRepo
    const configuration = yield* ConfigurationRepo
    const audit = yield* AuditLog
    const sql = yield* SqlClient.SqlClient
    return handlers
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          if (Option.isNone(yield* repositories.find(params.organization_id, params.repository_id))) {
            return yield* repositoryNotFound
          }
          return { data: yield* configuration.effective(params.organization_id, params.repository_id) }
        })
      )
      .handle("put", ({ params, payload }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          const user = yield* CurrentUser
          if (Option.isNone(yield* repositories.find(params.organization_id, params.repository_id))) {
            return yield* repositoryNotFound
          }
          yield* sql
            .withTransaction(
              Effect.andThen(
                configuration.updateRepository(params.organization_id, params.repository_id, payload, user.userId),
                audit.record({
                  organizationId: params.organization_id,
                  actor: { kind: "user", userId: user.userId },
                  action: "repository.configure",
                  target: `repository:${params.repository_id}`,
                  details: { agent_provider: payload.agent_provider, sandbox_provider: payload.sandbox_provider }
                })
              )
            )
            .pipe(Effect.orDie)
          return HttpServerResponse.empty({ status: 204 })
        })
      )
  })
)

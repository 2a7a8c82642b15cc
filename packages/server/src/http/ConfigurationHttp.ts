/**
 * `GET`/`PUT .../repositories/{repository_id}/configuration` (spec: Organization endpoints).
 * Reading needs membership; writing needs ADMIN, is audited, and answers 204. A repository of
 * another organization is 404 for both. A write that changes what the repository's own agent
 * connection was discovered with (agent, model, sandbox provider) re-queues its catalog discovery.
 */
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { BosunApi, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { Sharding } from "effect/cluster"
import { HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { AgentConnectionsRepo } from "../persistence/AgentConnectionsRepo.ts"
import { AuditLog } from "../persistence/AuditLog.ts"
import { ConfigurationRepo } from "../persistence/ConfigurationRepo.ts"
import { RepositoriesRepo } from "../persistence/RepositoriesRepo.ts"
import { configurationFingerprint } from "../workflows/CatalogDiscoveryWorkflow.ts"
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
    const connections = yield* AgentConnectionsRepo
    const sql = yield* SqlClient.SqlClient
    const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, yield* Sharding.Sharding)

    /** Queues a discovery when the repository has its own connection and it was discovered with another configuration. */
    const rediscoverIfChanged = (organizationId: string, repositoryId: string) =>
      Effect.gen(function* () {
        const connection = yield* connections.view(organizationId, repositoryId)
        if (connection.auth.source_scope !== "REPOSITORY") return false
        const current = configurationFingerprint(yield* configuration.effective(organizationId, repositoryId))
        if (connection.catalog.configuration_fingerprint === current) return false
        return Option.isSome(yield* connections.queueDiscovery(organizationId, repositoryId))
      })

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
          const queued = yield* sql
            .withTransaction(
              Effect.gen(function* () {
                yield* configuration.updateRepository(
                  params.organization_id,
                  params.repository_id,
                  payload,
                  user.userId
                )
                yield* audit.record({
                  organizationId: params.organization_id,
                  actor: { kind: "user", userId: user.userId },
                  action: "repository.configure",
                  target: `repository:${params.repository_id}`,
                  details: { agent_provider: payload.agent_provider, sandbox_provider: payload.sandbox_provider }
                })
                return yield* rediscoverIfChanged(params.organization_id, params.repository_id)
              })
            )
            .pipe(Effect.orDie)
          if (queued) yield* wake
          return HttpServerResponse.empty({ status: 204 })
        })
      )
  })
)

/**
 * Configuration at the organization and the repository level (spec: Organization endpoints).
 * Reading needs membership; writing and resetting a group need ADMIN, are audited, and answer 204.
 * A write is applied and checked (the model against the catalog) in one transaction, so a refused
 * write stores nothing. A repository of another organization is 404. A write that changes what an
 * agent connection was discovered with (agent, model, sandbox provider) re-queues its discovery.
 */
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import {
  BadRequest,
  BosunApi,
  type ConfigurationGroup,
  type ConfigurationUpdate,
  Conflict,
  CurrentUser,
  ErrorCodes,
  NotFound
} from "@bosun/domain"
import { Effect, Option } from "effect"
import { Sharding } from "effect/cluster"
import { HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { checkModelFields } from "../configuration/ModelCheck.ts"
import { AgentConnectionsRepo } from "../persistence/AgentConnectionsRepo.ts"
import { AuditLog } from "../persistence/AuditLog.ts"
import { ConfigurationRefused, ConfigurationRepo } from "../persistence/ConfigurationRepo.ts"
import { RepositoriesRepo } from "../persistence/RepositoriesRepo.ts"
import { configurationFingerprint } from "../workflows/CatalogDiscoveryWorkflow.ts"
import { group } from "./ApiGroup.ts"
import { OrgAccess } from "./OrgAccess.ts"

const repositoryNotFound = NotFound.fromCode(ErrorCodes.notFound, "No repository has this id in this organization")

const asHttpError = (refused: ConfigurationRefused) =>
  refused.status === 409
    ? Conflict.fromCode(refused.code, refused.message)
    : BadRequest.fromCode(refused.code, refused.message)

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
    const sharding = yield* Sharding.Sharding
    const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, sharding)

    /** Queues a discovery when the scope has its own connection and it was discovered with another configuration. */
    const rediscoverIfChanged = (organizationId: string, repositoryId: string | null) =>
      Effect.gen(function* () {
        const connection = yield* connections.view(organizationId, repositoryId)
        if (!connection.auth.configured) return false
        if ((connection.auth.source_scope === "REPOSITORY") !== (repositoryId !== null)) return false
        const current = configurationFingerprint(yield* configuration.effective(organizationId, repositoryId))
        if (connection.catalog.configuration_fingerprint === current) return false
        return Option.isSome(yield* connections.queueDiscovery(organizationId, repositoryId))
      })

    const repositoryOf = (organizationId: string, repositoryId: string) =>
      Effect.flatMap(repositories.find(organizationId, repositoryId), (found) =>
        Option.isNone(found) ? repositoryNotFound : Effect.void
      )

    /** Fields a level cannot hold, and secondary repositories that are not this organization's. */
    const checkLevel = (organizationId: string, repositoryId: string | null, patch: ConfigurationUpdate) =>
      Effect.gen(function* () {
        const secondary = patch.secondary_repository_ids
        if (secondary === undefined || secondary === null) return
        if (repositoryId === null) {
          return yield* new ConfigurationRefused({
            status: 400,
            code: ErrorCodes.invalidConfigurationField,
            message: 'Invalid body field "secondary_repository_ids": only a repository has secondary repositories'
          })
        }
        for (const id of secondary) {
          if (id === repositoryId || Option.isNone(yield* repositories.find(organizationId, id))) {
            return yield* new ConfigurationRefused({
              status: 400,
              code: ErrorCodes.invalidConfigurationField,
              message: `Invalid body field "secondary_repository_ids": "${id}" is not another repository of this organization`
            })
          }
        }
      })

    const write = (organizationId: string, repositoryId: string | null, patch: ConfigurationUpdate) =>
      Effect.gen(function* () {
        yield* access.require(organizationId, "ADMIN")
        const user = yield* CurrentUser
        if (repositoryId !== null) yield* repositoryOf(organizationId, repositoryId)
        yield* checkLevel(organizationId, repositoryId, patch).pipe(Effect.mapError(asHttpError))
        const queued = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* configuration.update(organizationId, repositoryId, patch, user.userId)
              const after = yield* configuration.effective(organizationId, repositoryId)
              yield* checkModelFields(organizationId, repositoryId, patch, after).pipe(
                Effect.provideService(AgentConnectionsRepo, connections)
              )
              yield* audit.record({
                organizationId,
                actor: { kind: "user", userId: user.userId },
                action: repositoryId === null ? "organization.configure" : "repository.configure",
                target: repositoryId === null ? `organization:${organizationId}` : `repository:${repositoryId}`,
                // Which fields changed, never their values (MCP headers are secrets).
                details: { fields: Object.keys(patch).sort().join(",") }
              })
              return yield* rediscoverIfChanged(organizationId, repositoryId)
            })
          )
          .pipe(
            Effect.catchTag("SqlError", Effect.die),
            Effect.catchTag("ConfigurationRefused", (refused) => Effect.fail(asHttpError(refused)))
          )
        if (queued) yield* wake
        return HttpServerResponse.empty({ status: 204 })
      })

    const reset = (organizationId: string, repositoryId: string | null, name: ConfigurationGroup) =>
      Effect.gen(function* () {
        yield* access.require(organizationId, "ADMIN")
        const user = yield* CurrentUser
        if (repositoryId !== null) yield* repositoryOf(organizationId, repositoryId)
        const queued = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* configuration.reset(organizationId, repositoryId, name, user.userId)
              yield* audit.record({
                organizationId,
                actor: { kind: "user", userId: user.userId },
                action: repositoryId === null ? "organization.configure" : "repository.configure",
                target: repositoryId === null ? `organization:${organizationId}` : `repository:${repositoryId}`,
                details: { reset: name }
              })
              return yield* rediscoverIfChanged(organizationId, repositoryId)
            })
          )
          .pipe(Effect.orDie)
        if (queued) yield* wake
        return HttpServerResponse.empty({ status: 204 })
      })

    return handlers
      .handle("getOrganization", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          return { data: yield* configuration.effective(params.organization_id, null) }
        })
      )
      .handle("putOrganization", ({ params, payload }) => write(params.organization_id, null, payload))
      .handle("resetOrganization", ({ params }) => reset(params.organization_id, null, params.group))
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          yield* repositoryOf(params.organization_id, params.repository_id)
          return { data: yield* configuration.effective(params.organization_id, params.repository_id) }
        })
      )
      .handle("put", ({ params, payload }) => write(params.organization_id, params.repository_id, payload))
      .handle("reset", ({ params }) => reset(params.organization_id, params.repository_id, params.group))
  })
)

/**
 * Configuration at the organization and the repository level
 * (docs/interface.md: Organization endpoints). Reading needs membership; writing and resetting a
 * group need ADMIN and answer 204; the write itself (its checks, audit and rediscovery) is the
 * `ConfigurationWriter`'s. A repository of another organization is 404. A discovery a write queued
 * wakes the Scheduler after the commit.
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
  NotFound,
  type RepositoryConfiguration
} from "@bosun/domain"
import { Effect, Option } from "effect"
import { Sharding } from "effect/cluster"
import { HttpServerResponse } from "effect/http"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import { AgentConnectionsRepo } from "./AgentConnectionsRepo.ts"
import type { ConfigurationRefused } from "./ConfigurationRepo.ts"
import { ConfigurationRepo } from "./ConfigurationRepo.ts"
import { ConfigurationWriter } from "./ConfigurationWriter.ts"
import { withModelInForce } from "./ModelCheck.ts"

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
    const writer = yield* ConfigurationWriter
    const connections = yield* AgentConnectionsRepo
    const readForm = (organizationId: string, repositoryId: string | null, read: RepositoryConfiguration) =>
      withModelInForce(organizationId, repositoryId, read).pipe(
        Effect.provideService(AgentConnectionsRepo, connections)
      )
    const sharding = yield* Sharding.Sharding
    const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, sharding)

    const repositoryOf = (organizationId: string, repositoryId: string) =>
      Effect.flatMap(repositories.find(organizationId, repositoryId), (found) =>
        Option.isNone(found) ? repositoryNotFound : Effect.void
      )

    /** ADMIN of the organization, and the repository (when named) is one of its own. */
    const writerOf = (organizationId: string, repositoryId: string | null) =>
      Effect.gen(function* () {
        yield* access.require(organizationId, "ADMIN")
        const user = yield* CurrentUser
        if (repositoryId !== null) yield* repositoryOf(organizationId, repositoryId)
        return { kind: "user" as const, userId: user.userId }
      })

    const write = (organizationId: string, repositoryId: string | null, patch: ConfigurationUpdate) =>
      Effect.gen(function* () {
        const actor = yield* writerOf(organizationId, repositoryId)
        const queued = yield* writer
          .update(organizationId, repositoryId, patch, actor)
          .pipe(Effect.mapError(asHttpError))
        if (queued) yield* wake
        return HttpServerResponse.empty({ status: 204 })
      })

    const reset = (organizationId: string, repositoryId: string | null, name: ConfigurationGroup) =>
      Effect.gen(function* () {
        const actor = yield* writerOf(organizationId, repositoryId)
        if (yield* writer.reset(organizationId, repositoryId, name, actor)) yield* wake
        return HttpServerResponse.empty({ status: 204 })
      })

    return handlers
      .handle("getOrganization", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const read = yield* configuration.effective(params.organization_id, null)
          return { data: yield* readForm(params.organization_id, null, read) }
        })
      )
      .handle("putOrganization", ({ params, payload }) => write(params.organization_id, null, payload))
      .handle("resetOrganization", ({ params }) => reset(params.organization_id, null, params.group))
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          yield* repositoryOf(params.organization_id, params.repository_id)
          const read = yield* configuration.effective(params.organization_id, params.repository_id)
          return { data: yield* readForm(params.organization_id, params.repository_id, read) }
        })
      )
      .handle("put", ({ params, payload }) => write(params.organization_id, params.repository_id, payload))
      .handle("reset", ({ params }) => reset(params.organization_id, params.repository_id, params.group))
  })
)

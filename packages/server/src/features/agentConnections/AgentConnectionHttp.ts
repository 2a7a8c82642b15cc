/**
 * The agent connection endpoints (docs/interface.md: Organization endpoints `opencode-connection`;
 * Authentication 3, 7). Writes need ADMIN or SUPER_USER and are audited with the credential's
 * fingerprint (never its value); the optional `repository_id` query parameter selects the
 * repository's override, which leaves the organization's credentials untouched. An import keeps
 * only `auth` and lists every other top-level section it dropped in `excluded_sections`. A write
 * queues a catalog discovery run in its transaction and wakes the Scheduler after the commit.
 * `usage/{provider_id}` asks the organization's UsageCache entity (60 s TTL, single-flight) what
 * the provider reports about the organization's key; its failure reasons map to 404 and 502.
 * `test` (ADMIN, audited) runs one minimal agent turn with the credentials and model in force and
 * answers its result, passed or not (a failed turn is a result, not an error); `setup` is the
 * organization's first-day checklist.
 */

import { lookupUsage } from "@bosun/actors/coordination/UsageCache"
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { BadGateway, BosunApi, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import { AgentConnectionsRepo, type ProviderCredentials } from "./AgentConnectionsRepo.ts"
import { makeConnectionTest } from "./ConnectionTest.ts"

export const AgentConnectionHttp = group(
  BosunApi,
  "agentConnection",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const repositories = yield* RepositoriesRepo
    const connections = yield* AgentConnectionsRepo
    const audit = yield* AuditLog
    const sql = yield* SqlClient.SqlClient
    const sharding = yield* Sharding.Sharding
    const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, sharding)
    const tests = yield* makeConnectionTest

    const requireRepository = (organizationId: string, repositoryId: string | undefined) =>
      repositoryId === undefined
        ? Effect.void
        : Effect.flatMap(repositories.find(organizationId, repositoryId), (found) =>
            Option.isNone(found)
              ? Effect.fail(NotFound.fromCode(ErrorCodes.notFound, "No repository has this id in this organization"))
              : Effect.void
          )

    const writeScope = (
      organizationId: string,
      repositoryId: string | undefined,
      action: string,
      change: (current: ProviderCredentials) => ProviderCredentials
    ) =>
      Effect.gen(function* () {
        yield* access.require(organizationId, "ADMIN")
        yield* requireRepository(organizationId, repositoryId)
        const user = yield* CurrentUser
        const written = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* connections.write(organizationId, repositoryId ?? null, change, user.userId)
              const written = yield* connections.view(organizationId, repositoryId ?? null)
              yield* audit.record({
                organizationId,
                actor: { kind: "user", userId: user.userId },
                action,
                target:
                  repositoryId === undefined ? "agent_connection:organization" : `agent_connection:${repositoryId}`,
                details: { fingerprint: written.auth.fingerprint, version: written.auth.active_version }
              })
              return written
            })
          )
          .pipe(Effect.orDie)
        // The write queued a catalog discovery run; the answer shows the connection as committed.
        yield* wake
        return written
      })

    return handlers
      .handle("usage", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const usage = yield* lookupUsage(params.organization_id, params.provider_id).pipe(
            Effect.provideService(Sharding.Sharding, sharding),
            Effect.mapError((failure): NotFound | BadGateway => {
              switch (failure.reason) {
                case "NO_CREDENTIAL":
                  return NotFound.fromCode(ErrorCodes.providerCredentialMissing, failure.message)
                case "NOT_REPORTED":
                  return NotFound.fromCode(ErrorCodes.usageNotReported, failure.message)
                case "PROVIDER_ERROR":
                  return BadGateway.fromCode(ErrorCodes.providerUnavailable, failure.message)
              }
            })
          )
          return { data: usage }
        })
      )
      .handle("get", ({ params, query }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          yield* requireRepository(params.organization_id, query.repository_id)
          return { data: yield* connections.view(params.organization_id, query.repository_id ?? null) }
        })
      )
      .handle("setApiKey", ({ params, query, payload }) =>
        Effect.map(
          writeScope(params.organization_id, query.repository_id, "agent_connection.api_key", (current) => ({
            ...current,
            [params.provider_id]: { type: "api", key: payload.api_key }
          })),
          (connection) => ({ data: { connection, excluded_sections: [] } })
        )
      )
      .handle("import", ({ params, query, payload }) => {
        const { auth, ...rest } = payload
        const excluded = Object.keys(rest).sort()
        return Effect.map(
          writeScope(params.organization_id, query.repository_id, "agent_connection.import", () => auth),
          (connection) => ({ data: { connection, excluded_sections: excluded } })
        )
      })
      .handle("test", ({ params, query }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          yield* requireRepository(params.organization_id, query.repository_id)
          const user = yield* CurrentUser
          const result = yield* tests.run(params.organization_id, query.repository_id ?? null)
          yield* audit
            .record({
              organizationId: params.organization_id,
              actor: { kind: "user", userId: user.userId },
              action: "agent_connection.test",
              target:
                query.repository_id === undefined
                  ? `organization:${params.organization_id}`
                  : `repository:${query.repository_id}`,
              details: { model: result.model, ok: result.ok }
            })
            .pipe(Effect.orDie)
          return { data: result }
        })
      )
      .handle("lastTest", ({ params, query }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          yield* requireRepository(params.organization_id, query.repository_id)
          return { data: yield* tests.last(params.organization_id, query.repository_id ?? null) }
        })
      )
      .handle("setup", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          return { data: yield* tests.checklist(params.organization_id) }
        })
      )
  })
)

/**
 * Every configuration write, from the API and from the `bosun config` command alike: a level's
 * fields set or dropped, or a group reset, with the checks that need more than the body (fields
 * only one level holds, secondary repositories of this organization, the model against the
 * catalog) in the write's own transaction — a refused write stores nothing — audited, and a
 * catalog discovery queued when the configuration a connection was discovered with changed.
 * Who may write is the caller's check; waking the Scheduler for a queued discovery too.
 */
import { type ConfigurationGroup, type ConfigurationUpdate, ErrorCodes } from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import { AgentConnectionsRepo } from "./AgentConnectionsRepo.ts"
import { configurationFingerprint } from "./CatalogDiscoveryWorkflow.ts"
import { ConfigurationRefused, ConfigurationRepo } from "./ConfigurationRepo.ts"
import { checkModelFields } from "./ModelCheck.ts"

/** Who wrote: a signed-in user, or the operator at the server's shell. */
export type ConfigurationActor = { readonly kind: "user"; readonly userId: string } | { readonly kind: "operator" }

export class ConfigurationWriter extends Context.Service<
  ConfigurationWriter,
  {
    /** Applies `patch` to one level (`repositoryId` null: the organization's); answers whether a discovery was queued. */
    readonly update: (
      organizationId: string,
      repositoryId: string | null,
      patch: ConfigurationUpdate,
      actor: ConfigurationActor
    ) => Effect.Effect<boolean, ConfigurationRefused>
    /** Drops one level's values of a group; answers whether a discovery was queued. */
    readonly reset: (
      organizationId: string,
      repositoryId: string | null,
      group: ConfigurationGroup,
      actor: ConfigurationActor
    ) => Effect.Effect<boolean>
  }
>()("bosun/server/configuration/ConfigurationWriter") {
  static readonly layer = Layer.effect(
    ConfigurationWriter,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const configuration = yield* ConfigurationRepo
      const connections = yield* AgentConnectionsRepo
      const repositories = yield* RepositoriesRepo
      const audit = yield* AuditLog

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

      const record = (
        organizationId: string,
        repositoryId: string | null,
        actor: ConfigurationActor,
        details: Record<string, string>
      ) =>
        audit.record({
          organizationId,
          actor,
          action: repositoryId === null ? "organization.configure" : "repository.configure",
          target: repositoryId === null ? `organization:${organizationId}` : `repository:${repositoryId}`,
          details
        })

      const update = Effect.fn("ConfigurationWriter.update")(function* (
        organizationId: string,
        repositoryId: string | null,
        patch: ConfigurationUpdate,
        actor: ConfigurationActor
      ) {
        yield* checkLevel(organizationId, repositoryId, patch)
        const userId = actor.kind === "user" ? actor.userId : null
        return yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* configuration.update(organizationId, repositoryId, patch, userId)
              const after = yield* configuration.effective(organizationId, repositoryId)
              yield* checkModelFields(organizationId, repositoryId, patch, after).pipe(
                Effect.provideService(AgentConnectionsRepo, connections)
              )
              // Which fields changed, never their values (MCP headers are secrets).
              yield* record(organizationId, repositoryId, actor, { fields: Object.keys(patch).sort().join(",") })
              return yield* rediscoverIfChanged(organizationId, repositoryId)
            })
          )
          .pipe(Effect.catchTag("SqlError", Effect.die))
      })

      const reset = Effect.fn("ConfigurationWriter.reset")(function* (
        organizationId: string,
        repositoryId: string | null,
        group: ConfigurationGroup,
        actor: ConfigurationActor
      ) {
        const userId = actor.kind === "user" ? actor.userId : null
        return yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* configuration.reset(organizationId, repositoryId, group, userId)
              yield* record(organizationId, repositoryId, actor, { reset: group })
              return yield* rediscoverIfChanged(organizationId, repositoryId)
            })
          )
          .pipe(Effect.orDie)
      })

      return ConfigurationWriter.of({ update, reset })
    })
  )
}

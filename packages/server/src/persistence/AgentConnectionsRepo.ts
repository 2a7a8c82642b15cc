/**
 * Agent connections and their catalog discoveries (spec: Resources "Agent connection";
 * Authentication 3, 7). The credentials of a scope (the organization, or one repository's
 * override) are one sealed JSON object, provider id -> credential, bound to its row; a write
 * opens it, changes it, seals it again, raises the version and queues a discovery, all in the
 * caller's transaction under a row lock. Reads return fingerprints and versions, never plaintext.
 * Every query filters by the organization.
 */
import { createHash, randomUUID } from "node:crypto"
import type { AgentConnection } from "@bosun/domain"
import { canonicalJson } from "@bosun/domain"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Secrets } from "../crypto/Secrets.ts"
import { iso } from "./Timestamps.ts"

export type ProviderCredentials = Readonly<Record<string, Readonly<Record<string, unknown>>>>

const Credentials = Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Unknown))
const decodeCredentials = Schema.decodeUnknownEffect(Schema.fromJsonString(Credentials))

const place = (rowId: string) => ({ table: "agent_connections", column: "auth", rowId })

/** Names a credential set without revealing it: the first 16 hex digits of its SHA-256. */
export const fingerprintOf = (credentials: ProviderCredentials) =>
  `sha256:${createHash("sha256").update(canonicalJson(credentials)).digest("hex").slice(0, 16)}`

interface ScopeRow {
  readonly id: string
  readonly repository_id: string | null
  readonly auth: Uint8Array
  readonly auth_version: number
  readonly auth_fingerprint: string
  readonly provider_ids: ReadonlyArray<string>
}

interface DiscoveryRow {
  readonly id: string
  readonly status: "QUEUED" | "RUNNING" | "SUCCEEDED" | "FAILED"
  readonly repository_id: string | null
  readonly credential_fingerprint: string | null
  readonly configuration_fingerprint: string | null
  readonly catalog: AgentConnection["catalog"]["catalog"]
  readonly provider_version: string | null
  readonly error: string | null
  readonly workflow_run_id: string | null
  readonly started_at: Date | null
  readonly finished_at: Date | null
  readonly last_successful_at: Date | null
  readonly updated_at: Date | null
}

export class AgentConnectionsRepo extends Context.Service<
  AgentConnectionsRepo,
  {
    /** The connection as seen from the organization, or from one repository (its own or inherited). */
    readonly view: (organizationId: string, repositoryId: string | null) => Effect.Effect<AgentConnection>
    /** Changes the credentials of one scope with `change`, in the caller's transaction. */
    readonly write: (
      organizationId: string,
      repositoryId: string | null,
      change: (current: ProviderCredentials) => ProviderCredentials,
      userId: string
    ) => Effect.Effect<void>
  }
>()("bosun/server/persistence/AgentConnectionsRepo") {
  static readonly layer = Layer.effect(
    AgentConnectionsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets
      const scopeColumns = sql.literal("id, repository_id, auth, auth_version, auth_fingerprint, provider_ids")

      const scopeRow = (organizationId: string, repositoryId: string | null, lock: boolean) =>
        sql<ScopeRow>`
          SELECT ${scopeColumns} FROM agent_connections
          WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${repositoryId ?? ""}
          ${lock ? sql`FOR UPDATE` : sql``}`.pipe(
          Effect.map((rows) => Option.fromUndefinedOr(rows[0])),
          Effect.orDie
        )

      const view = Effect.fn("AgentConnectionsRepo.view")(function* (
        organizationId: string,
        repositoryId: string | null
      ) {
        const own =
          repositoryId === null ? Option.none<ScopeRow>() : yield* scopeRow(organizationId, repositoryId, false)
        const organization = yield* scopeRow(organizationId, null, false)
        const effective = Option.orElse(own, () => organization)
        const scopeRepositoryId = Option.isSome(own) ? repositoryId : null
        const [discovery] = yield* sql<DiscoveryRow>`
          SELECT id, status, repository_id, credential_fingerprint, configuration_fingerprint, catalog, provider_version,
                 error, workflow_run_id, started_at, finished_at, last_successful_at, updated_at
          FROM agent_catalog_discoveries
          WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${scopeRepositoryId ?? ""}
          ORDER BY updated_at DESC, id LIMIT 1`.pipe(Effect.orDie)
        const configured = Option.isSome(effective)
        return {
          auth: {
            active_version: Option.match(effective, { onNone: () => 0, onSome: (row) => row.auth_version }),
            configured,
            fingerprint: Option.match(effective, { onNone: () => null, onSome: (row) => row.auth_fingerprint }),
            inherited: repositoryId !== null && Option.isNone(own),
            mode: configured ? ("CREDENTIALS" as const) : ("NONE" as const),
            provider_ids: Option.match(effective, { onNone: () => [], onSome: (row) => [...row.provider_ids] }),
            source_scope: Option.isSome(own) ? ("REPOSITORY" as const) : ("ORGANIZATION" as const)
          },
          catalog: {
            catalog: discovery?.catalog ?? { providers: [], runtime_version: "" },
            configuration_fingerprint: discovery?.configuration_fingerprint ?? null,
            credential_fingerprint: discovery?.credential_fingerprint ?? null,
            error: discovery?.error ?? null,
            finished_at: iso(discovery?.finished_at ?? null),
            id: discovery?.id ?? null,
            last_successful_at: iso(discovery?.last_successful_at ?? null),
            organization_id: organizationId,
            provider_version: discovery?.provider_version ?? null,
            repository_id: discovery?.repository_id ?? null,
            started_at: iso(discovery?.started_at ?? null),
            status: discovery?.status ?? null,
            updated_at: iso(discovery?.updated_at ?? null),
            workflow_run_id: discovery?.workflow_run_id ?? null
          },
          // Provider configuration (models, options) is not written by these endpoints yet.
          configuration: {
            active_version: 0,
            configured: false,
            fingerprint: null,
            inherited: repositoryId !== null,
            source_scope: "ORGANIZATION" as const
          },
          organization_id: organizationId,
          ready: configured && discovery?.status === "SUCCEEDED",
          repository_id: repositoryId
        }
      })

      const write = Effect.fn("AgentConnectionsRepo.write")(function* (
        organizationId: string,
        repositoryId: string | null,
        change: (current: ProviderCredentials) => ProviderCredentials,
        userId: string
      ) {
        // Two first writes of one scope have no row to lock yet: serialise them on the scope's
        // owner (the repository, or the organization) so the second sees the first's row.
        yield* (
          repositoryId === null
            ? sql`SELECT id FROM organizations WHERE id = ${organizationId} FOR UPDATE`
            : sql`SELECT id FROM repositories WHERE organization_id = ${organizationId} AND id = ${repositoryId} FOR UPDATE`
        ).pipe(Effect.orDie)
        const existing = yield* scopeRow(organizationId, repositoryId, true)
        const id = Option.match(existing, { onNone: () => randomUUID(), onSome: (row) => row.id })
        const current = yield* Option.match(existing, {
          onNone: () => Effect.succeed<ProviderCredentials>({}),
          onSome: (row) =>
            secrets.open(row.auth, place(row.id)).pipe(
              Effect.flatMap((plain) => decodeCredentials(Redacted.value(plain))),
              Effect.orDie
            )
        })
        const next = change(current)
        const sealed = yield* secrets.seal(JSON.stringify(next), place(id))
        const fingerprint = fingerprintOf(next)
        const providers = Object.keys(next).sort()
        const version = Option.match(existing, { onNone: () => 1, onSome: (row) => row.auth_version + 1 })
        yield* sql`
          INSERT INTO agent_connections (id, organization_id, repository_id, auth, auth_version, auth_fingerprint,
                                         provider_ids, updated_by)
          VALUES (${id}, ${organizationId}, ${repositoryId}, ${sealed}, ${version}, ${fingerprint},
                  ${providers}::text[], ${userId})
          ON CONFLICT (id) DO UPDATE SET auth = excluded.auth, auth_version = excluded.auth_version,
            auth_fingerprint = excluded.auth_fingerprint, provider_ids = excluded.provider_ids,
            updated_by = excluded.updated_by, updated_at = now()`.pipe(Effect.orDie)
        yield* sql`
          INSERT INTO agent_catalog_discoveries (organization_id, repository_id, credential_fingerprint)
          VALUES (${organizationId}, ${repositoryId}, ${fingerprint})`.pipe(Effect.orDie)
      })

      return AgentConnectionsRepo.of({ view, write })
    })
  )
}

/**
 * Agent connections and their catalog discoveries (docs/interface.md: Resources "Agent connection";
 * Authentication 3, 7). The credentials of a scope (the organization, or one repository's override)
 * are one sealed JSON object, provider id -> credential, bound to its row; a write opens it,
 * changes it, seals it again, raises the version and queues a discovery, all in the caller's
 * transaction under a row lock. Reads return fingerprints and versions, never plaintext; only the
 * catalog_discovery workflow opens the credentials (`credentials`), to hand them to the agent CLI
 * in its sandbox. Every query filters by the organization. A fingerprint is a random label of one
 * written version, not derived from the credentials: it cannot confirm a guessed key, and
 * master-key rotation has nothing to re-derive.
 *
 * A discovery is a row plus a run of workflow_type catalog_discovery (one per scope at a time:
 * the runs of a scope share a session key, so they run in order). The row records QUEUED at
 * creation and SUCCEEDED with the catalog when the run publishes; RUNNING and FAILED are read
 * from the run itself (a run that failed or was cancelled is a FAILED discovery with the run's
 * error), so no failure path of the cluster has to remember to update the row. While a newer
 * discovery has not succeeded, the last successful catalog stays on show; `ready` needs the
 * newest discovery — the one for the current credentials — to have succeeded.
 */
import { randomBytes, randomUUID } from "node:crypto"
import { RunQueue } from "@bosun/actors/jobs/RunQueue"
import type { AgentConnection, CatalogOutput } from "@bosun/domain"
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Secrets } from "../../platform/crypto/Secrets.ts"
import { iso } from "../../platform/db/Timestamps.ts"

export type ProviderCredentials = Readonly<Record<string, Readonly<Record<string, unknown>>>>

const Credentials = Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Unknown))
const decodeCredentials = Schema.decodeUnknownEffect(Schema.fromJsonString(Credentials))

const place = (rowId: string) => ({ table: "agent_connections", column: "auth", rowId })

/**
 * Names one written version of a scope's credentials: 64 random bits. A hash of the credentials,
 * even truncated, would let anyone who reads it test a guessed key offline; a label only says
 * which write a discovery or an audit event is about (equal credentials written twice differ).
 */
const newFingerprint = () => `fp:${randomBytes(8).toString("hex")}`

interface ScopeRow {
  readonly id: string
  readonly repository_id: string | null
  readonly auth: Uint8Array
  readonly auth_version: number
  readonly auth_fingerprint: string
  readonly provider_ids: ReadonlyArray<string>
}

/** The workflow type of a catalog discovery run. */
export const CATALOG_DISCOVERY = "catalog_discovery"

export interface DiscoveryRecord {
  readonly id: string
  readonly repositoryId: string | null
  readonly credentialFingerprint: string | null
  readonly workflowRunId: string | null
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

type Sql = SqlClient.SqlClient

/** Reads one scope's row (`lock`: FOR UPDATE, in the caller's transaction). */
const scopeRowReader = (sql: Sql) => {
  const scopeColumns = sql.literal("id, repository_id, auth, auth_version, auth_fingerprint, provider_ids")
  return (organizationId: string, repositoryId: string | null, lock: boolean) =>
    sql<ScopeRow>`
      SELECT ${scopeColumns} FROM agent_connections
      WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${repositoryId ?? ""}
      ${lock ? sql`FOR UPDATE` : sql``}`.pipe(
      Effect.map((rows) => Option.fromUndefinedOr(rows[0])),
      Effect.orDie
    )
}

type ScopeRowReader = ReturnType<typeof scopeRowReader>

/** The connection as one scope sees it: its credentials' state and its newest discovery. */
const connectionView = (sql: Sql, scopeRow: ScopeRowReader) =>
  Effect.fn("AgentConnectionsRepo.view")(function* (organizationId: string, repositoryId: string | null) {
    const own = repositoryId === null ? Option.none<ScopeRow>() : yield* scopeRow(organizationId, repositoryId, false)
    const organization = yield* scopeRow(organizationId, null, false)
    const effective = Option.orElse(own, () => organization)
    const scopeRepositoryId = Option.isSome(own) ? repositoryId : null
    const scopeKey = scopeRepositoryId ?? ""
    const [discovery] = yield* sql<DiscoveryRow>`
      SELECT d.id, d.repository_id, d.credential_fingerprint, d.configuration_fingerprint, d.catalog,
             d.provider_version, d.workflow_run_id, d.updated_at,
             CASE WHEN d.status IN ('SUCCEEDED', 'FAILED') THEN d.status
                  WHEN r.status IN ('FAILED', 'CANCELLED') THEN 'FAILED'
                  WHEN r.status = 'RUNNING' THEN 'RUNNING'
                  ELSE d.status END AS status,
             coalesce(d.error, CASE WHEN r.status = 'CANCELLED' THEN 'The discovery run was cancelled'
                                    WHEN r.status = 'FAILED'
                                    THEN coalesce(r.error_message, 'The discovery run failed') END) AS error,
             coalesce(d.started_at, r.started_at) AS started_at,
             coalesce(d.finished_at, CASE WHEN r.status IN ('FAILED', 'CANCELLED') THEN r.finished_at END)
               AS finished_at,
             (SELECT max(s.last_successful_at) FROM agent_catalog_discoveries s
              WHERE s.organization_id = d.organization_id
                AND coalesce(s.repository_id, '') = coalesce(d.repository_id, '')) AS last_successful_at
      FROM agent_catalog_discoveries d
      LEFT JOIN workflow_runs r ON r.id = d.workflow_run_id AND r.organization_id = d.organization_id
      WHERE d.organization_id = ${organizationId} AND coalesce(d.repository_id, '') = ${scopeKey}
      ORDER BY d.created_at DESC, d.id LIMIT 1`.pipe(Effect.orDie)
    // The catalog on show: this discovery's, or while it has not succeeded, the last one that did.
    const shown =
      discovery === undefined || discovery.status === "SUCCEEDED"
        ? discovery?.catalog
        : (yield* sql<{ catalog: AgentConnection["catalog"]["catalog"] }>`
            SELECT catalog FROM agent_catalog_discoveries
            WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${scopeKey}
              AND status = 'SUCCEEDED'
            ORDER BY last_successful_at DESC LIMIT 1`.pipe(Effect.orDie))[0]?.catalog
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
        catalog: shown ?? { providers: [], runtime_version: "" },
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

/** Credential writes: sealing a scope's new credentials and queueing the discovery they need. */
const credentialWriters = (
  sql: Sql,
  scopeRow: ScopeRowReader,
  secrets: Secrets["Service"],
  runQueue: RunQueue["Service"]
) => {
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
    const fingerprint = newFingerprint()
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
    yield* queueDiscovery(organizationId, repositoryId)
  })

  const queueDiscovery = Effect.fn("AgentConnectionsRepo.queueDiscovery")(function* (
    organizationId: string,
    repositoryId: string | null
  ) {
    const scope = yield* scopeRow(organizationId, repositoryId, false)
    if (Option.isNone(scope)) return Option.none<DiscoveryRecord>()
    const [row] = yield* sql<{ id: string }>`
      INSERT INTO agent_catalog_discoveries (organization_id, repository_id, credential_fingerprint)
      VALUES (${organizationId}, ${repositoryId}, ${scope.value.auth_fingerprint})
      RETURNING id`.pipe(Effect.orDie)
    const discoveryId = row?.id ?? ""
    const queued = yield* runQueue.enqueue({
      organizationId,
      repositoryId,
      workflowType: CATALOG_DISCOVERY,
      lane: "AGENT",
      // One discovery of a scope at a time, in the order they were asked for.
      sessionKey: `catalog:${organizationId}:${repositoryId ?? "-"}`,
      inputSnapshot: { discovery_id: discoveryId }
    })
    yield* sql`
      UPDATE agent_catalog_discoveries SET workflow_run_id = ${queued.runId}
      WHERE organization_id = ${organizationId} AND id = ${discoveryId}`.pipe(Effect.orDie)
    return Option.some<DiscoveryRecord>({
      id: discoveryId,
      repositoryId,
      credentialFingerprint: scope.value.auth_fingerprint,
      workflowRunId: queued.runId
    })
  })
  return { write, queueDiscovery }
}

/** Reads of one discovery and of a scope's plaintext credentials. */
const discoveryReaders = (sql: Sql, scopeRow: ScopeRowReader, secrets: Secrets["Service"]) => {
  const discovery = Effect.fn("AgentConnectionsRepo.discovery")(function* (
    organizationId: string,
    discoveryId: string
  ) {
    const rows = yield* sql<{
      id: string
      repository_id: string | null
      credential_fingerprint: string | null
      workflow_run_id: string | null
    }>`
      SELECT id, repository_id, credential_fingerprint, workflow_run_id FROM agent_catalog_discoveries
      WHERE organization_id = ${organizationId} AND id = ${discoveryId}`.pipe(Effect.orDie)
    return Option.map(
      Option.fromUndefinedOr(rows[0]),
      (row): DiscoveryRecord => ({
        id: row.id,
        repositoryId: row.repository_id,
        credentialFingerprint: row.credential_fingerprint,
        workflowRunId: row.workflow_run_id
      })
    )
  })

  const credentials = Effect.fn("AgentConnectionsRepo.credentials")(function* (
    organizationId: string,
    repositoryId: string | null
  ) {
    const scope = yield* scopeRow(organizationId, repositoryId, false)
    if (Option.isNone(scope)) return Option.none()
    const plain = yield* secrets.open(scope.value.auth, place(scope.value.id)).pipe(Effect.orDie)
    const opened = yield* decodeCredentials(Redacted.value(plain)).pipe(Effect.orDie)
    return Option.some({ credentials: opened, fingerprint: scope.value.auth_fingerprint })
  })
  return { discovery, credentials }
}

/** What a discovery run records on its row. */
const discoveryRecorders = (sql: Sql) => {
  const recordConfiguration = Effect.fn("AgentConnectionsRepo.recordConfiguration")(function* (
    organizationId: string,
    discoveryId: string,
    configurationFingerprint: string
  ) {
    yield* sql`
      UPDATE agent_catalog_discoveries SET configuration_fingerprint = ${configurationFingerprint}, updated_at = now()
      WHERE organization_id = ${organizationId} AND id = ${discoveryId}`.pipe(Effect.orDie)
  })

  const recordCatalog = Effect.fn("AgentConnectionsRepo.recordCatalog")(function* (
    organizationId: string,
    discoveryId: string,
    runId: string,
    output: CatalogOutput
  ) {
    yield* sql`
      UPDATE agent_catalog_discoveries
      SET status = 'SUCCEEDED', catalog = ${JSON.stringify(output.catalog)}::jsonb,
          provider_version = ${output.provider_version}, error = NULL,
          started_at = coalesce(started_at, (SELECT started_at FROM workflow_runs
                                             WHERE organization_id = ${organizationId} AND id = ${runId})),
          finished_at = now(), last_successful_at = now(), updated_at = now()
      WHERE organization_id = ${organizationId} AND id = ${discoveryId} AND workflow_run_id = ${runId}
        AND status <> 'SUCCEEDED'`.pipe(Effect.orDie)
  })
  return { recordConfiguration, recordCatalog }
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
    /** Queues a discovery of one scope's catalog (a row and its run), in the caller's transaction. */
    readonly queueDiscovery: (
      organizationId: string,
      repositoryId: string | null
    ) => Effect.Effect<Option.Option<DiscoveryRecord>>
    readonly discovery: (organizationId: string, discoveryId: string) => Effect.Effect<Option.Option<DiscoveryRecord>>
    /** The plaintext credentials of exactly this scope (no inheritance), for the discovery run only. */
    readonly credentials: (
      organizationId: string,
      repositoryId: string | null
    ) => Effect.Effect<Option.Option<{ readonly credentials: ProviderCredentials; readonly fingerprint: string }>>
    readonly recordConfiguration: (
      organizationId: string,
      discoveryId: string,
      configurationFingerprint: string
    ) => Effect.Effect<void>
    /** Records a discovery run's catalog; a repeat for the same run changes nothing. */
    readonly recordCatalog: (
      organizationId: string,
      discoveryId: string,
      runId: string,
      output: CatalogOutput
    ) => Effect.Effect<void>
  }
>()("bosun/server/persistence/AgentConnectionsRepo") {
  static readonly layer = Layer.effect(
    AgentConnectionsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const runQueue = yield* RunQueue
      const secrets = yield* Secrets
      const scopeRow = scopeRowReader(sql)
      return AgentConnectionsRepo.of({
        view: connectionView(sql, scopeRow),
        ...credentialWriters(sql, scopeRow, secrets, runQueue),
        ...discoveryReaders(sql, scopeRow, secrets),
        ...discoveryRecorders(sql)
      })
    })
  )
}

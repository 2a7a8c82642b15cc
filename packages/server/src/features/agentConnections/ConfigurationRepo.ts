/**
 * Configuration groups, their MCP secrets, the repository's `.bosun.yaml` as last read, and
 * sandbox-readiness findings (docs/interface.md: Resources "Repository configuration";
 * Trust boundaries 3; Errors 6). A level (the organization, or one repository) stores only the
 * fields it sets, so `effective` overlays Bosun's defaults, the organization's fields, the
 * repository's and the file's, field by field. Writes run in the caller's transaction under a row
 * lock; checks that need the catalog live in the configuration service. Every query filters by the
 * organization.
 */
import {
  AGENT_ONE_ON_PLATFORM_CONTAINER,
  CONFIGURATION_GROUPS,
  type ConfigFileStatus,
  type ConfigurationGroup,
  type ConfigurationSource,
  type ConfigurationUpdate,
  DEFAULT_CONFIGURATION,
  type McpServer,
  type PathInstruction,
  type RepositoryConfiguration
} from "@bosun/domain"
import { Context, Effect, Layer, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Secrets } from "../../platform/crypto/Secrets.ts"
import { iso } from "../../platform/db/Timestamps.ts"

type GroupValues = Record<string, unknown>

const AGENT_ONE_FINDING = "agent_one_on_platform_container"

/** Which group each writable field belongs to. */
const GROUP_OF: Record<keyof ConfigurationUpdate, ConfigurationGroup> = Object.fromEntries(
  CONFIGURATION_GROUPS.flatMap((group) => Object.keys(DEFAULT_CONFIGURATION[group]).map((field) => [field, group]))
) as Record<keyof ConfigurationUpdate, ConfigurationGroup>

/** The settings a valid `.bosun.yaml` gives (what the file's schema decodes to). */
export interface FileSettings {
  readonly review_policy?: Readonly<Record<string, unknown>>
  readonly custom_instructions?: string
  readonly path_instructions?: ReadonlyArray<PathInstruction>
}

/** A write Bosun refuses before anything is stored. */
export class ConfigurationRefused extends Schema.TaggedError<ConfigurationRefused>()("ConfigurationRefused", {
  status: Schema.Literals([400, 409]),
  code: Schema.String,
  message: Schema.String
}) {}

const Headers = Schema.Record(Schema.String, Schema.String)
const decodeHeaders = Schema.decodeUnknownEffect(Schema.fromJsonString(Headers))

interface GroupRow {
  readonly group_name: ConfigurationGroup
  readonly value: GroupValues
  readonly repository_level: boolean
}

interface FileRow {
  readonly path: string
  readonly ref: string
  readonly found: boolean
  readonly settings: FileSettings | null
  readonly error: string | null
  readonly read_at: Date
}

/** What the repository's `.bosun.yaml` said when it was last read. */
export interface ConfigFileReading {
  readonly path: string
  readonly ref: string
  readonly found: boolean
  readonly settings: FileSettings | null
  readonly error: string | null
}

type Sql = SqlClient.SqlClient

/** One group's values at each level that can set it, lowest first: the organization's, the repository's, the file's. */
const groupLevels = (rows: ReadonlyArray<GroupRow>, group: ConfigurationGroup, fileSettings: FileSettings) => {
  const own = rows.find((row) => row.group_name === group && row.repository_level)?.value ?? {}
  const organization = rows.find((row) => row.group_name === group && !row.repository_level)?.value ?? {}
  const fromFile: GroupValues =
    group === "instructions"
      ? fileSettings.custom_instructions === undefined
        ? {}
        : { custom_instructions: fileSettings.custom_instructions }
      : group === "review_policy" && fileSettings.review_policy !== undefined
        ? { review_policy: fileSettings.review_policy }
        : {}
  return { own, organization, fromFile }
}

/** Overlays Bosun's defaults, the stored levels and the file, and says where each group comes from. */
const mergeConfiguration = (
  rows: ReadonlyArray<GroupRow>,
  file: FileRow | undefined,
  repositoryId: string | null
): RepositoryConfiguration => {
  const fileSettings = file?.settings ?? {}
  const merged: Record<string, unknown> = {}
  const overrides: Record<string, boolean> = {}
  const sources: Record<string, ConfigurationSource> = {}
  for (const group of CONFIGURATION_GROUPS) {
    const { own, organization, fromFile } = groupLevels(rows, group, fileSettings)
    const levels = [organization, own, fromFile]
    if (group === "review_policy") {
      merged.review_policy = Object.assign(
        {},
        DEFAULT_CONFIGURATION.review_policy.review_policy,
        ...levels.map((level) => (level.review_policy as GroupValues | undefined) ?? {})
      )
    } else {
      Object.assign(merged, DEFAULT_CONFIGURATION[group], ...levels)
    }
    const sets = (level: GroupValues) =>
      group === "review_policy"
        ? Object.keys((level.review_policy as GroupValues | undefined) ?? {}).length > 0
        : Object.keys(level).length > 0
    const fileSetsGroup =
      sets(fromFile) || (group === "instructions" && (fileSettings.path_instructions ?? []).length > 0)
    overrides[group] = repositoryId === null ? sets(organization) : sets(own)
    sources[group] = fileSetsGroup ? "FILE" : sets(own) ? "REPOSITORY" : sets(organization) ? "ORGANIZATION" : "DEFAULT"
  }
  const agentOwn = rows.find((row) => row.group_name === "agent" && row.repository_level)?.value ?? {}
  const agentOrganization = rows.find((row) => row.group_name === "agent" && !row.repository_level)?.value ?? {}
  // The default pick needs the catalog: readers that have it fill it in (`withModelInForce`).
  const modelSource: ConfigurationSource | null =
    merged.model === ""
      ? null
      : typeof agentOwn.model === "string"
        ? "REPOSITORY"
        : typeof agentOrganization.model === "string"
          ? "ORGANIZATION"
          : "DEFAULT"
  const configFile: ConfigFileStatus | null =
    file === undefined
      ? null
      : { path: file.path, ref: file.ref, found: file.found, read_at: iso(file.read_at) ?? "", error: file.error }
  return {
    ...merged,
    mcp_servers: ((merged.mcp_servers as ReadonlyArray<GroupValues>) ?? []).map((server) => ({
      name: String(server.name),
      url: String(server.url),
      header_names: Array.isArray(server.header_names) ? server.header_names.map(String) : []
    })),
    path_instructions: fileSettings.path_instructions ?? [],
    overrides,
    sources,
    model_in_force: modelSource === null ? null : { id: merged.model, source: modelSource },
    config_file: configFile
  } as unknown as RepositoryConfiguration
}

/** Applies a `review_policy` patch to a level's values: a null key drops that key, a null policy the field. */
const patchReviewPolicy = (level: GroupValues, value: unknown) => {
  if (value === null) {
    delete level.review_policy
    return
  }
  const policy: GroupValues = { ...((level.review_policy as GroupValues | undefined) ?? {}) }
  for (const [key, v] of Object.entries(value as GroupValues)) {
    if (v === null) delete policy[key]
    else if (v !== undefined) policy[key] = v
  }
  if (Object.keys(policy).length === 0) delete level.review_policy
  else level.review_policy = policy
}

/** The rows of the levels: each group's stored values, the file as last read, and the level's lock. */
const levelStore = (sql: Sql) => {
  const deleteGroup = (organizationId: string, repositoryId: string | null, group: ConfigurationGroup) =>
    sql`
      DELETE FROM configuration_groups
      WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${repositoryId ?? ""}
        AND group_name = ${group}`.pipe(Effect.asVoid)

  return {
    groupRows: (organizationId: string, repositoryId: string | null) =>
      // With no repository, `repository_id = NULL` matches nothing: the organization's groups alone.
      sql<GroupRow>`
        SELECT group_name, value, repository_id IS NOT NULL AS repository_level FROM configuration_groups
        WHERE organization_id = ${organizationId} AND (repository_id IS NULL OR repository_id = ${repositoryId})`.pipe(
        Effect.orDie
      ),

    fileRow: (organizationId: string, repositoryId: string | null) =>
      repositoryId === null
        ? Effect.succeed(undefined)
        : sql<FileRow>`
            SELECT path, ref, found, settings, error, read_at FROM repository_config_files
            WHERE organization_id = ${organizationId} AND repository_id = ${repositoryId}`.pipe(
            Effect.map((rows) => rows[0]),
            Effect.orDie
          ),

    upsertGroup: (
      organizationId: string,
      repositoryId: string | null,
      group: ConfigurationGroup,
      value: GroupValues,
      userId: string | null
    ) =>
      Object.keys(value).length === 0
        ? deleteGroup(organizationId, repositoryId, group)
        : sql`
            INSERT INTO configuration_groups (organization_id, repository_id, group_name, value, updated_by)
            VALUES (${organizationId}, ${repositoryId}, ${group}, ${JSON.stringify(value)}::jsonb, ${userId})
            ON CONFLICT (organization_id, coalesce(repository_id, ''), group_name)
            DO UPDATE SET value = excluded.value, updated_by = excluded.updated_by, updated_at = now()`.pipe(
            Effect.asVoid
          ),

    deleteGroup,

    /** Serializes writers of one level: the organization's row, or the repository's. */
    lockLevel: (organizationId: string, repositoryId: string | null) =>
      repositoryId === null
        ? sql`SELECT id FROM organizations WHERE id = ${organizationId} FOR UPDATE`
        : sql`SELECT id FROM repositories WHERE organization_id = ${organizationId} AND id = ${repositoryId} FOR UPDATE`,

    ownGroups: (organizationId: string, repositoryId: string | null) =>
      Effect.map(
        sql<{ group_name: ConfigurationGroup; value: GroupValues }>`
          SELECT group_name, value FROM configuration_groups
          WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${repositoryId ?? ""}`,
        (rows) => new Map(rows.map((row) => [row.group_name, { ...row.value }]))
      )
  }
}

type LevelStore = ReturnType<typeof levelStore>

const secretPlace = (rowId: string) => ({ table: "mcp_server_secrets", column: "headers", rowId })

/** A level's MCP server headers, sealed in rows of their own apart from the group's stored names. */
const mcpHeaderStore = (sql: Sql, secrets: Secrets["Service"]) => {
  const storedHeaders = (organizationId: string, repositoryId: string | null) =>
    Effect.gen(function* () {
      const rows = yield* sql<{ id: string; server_name: string; headers: Uint8Array }>`
        SELECT id, server_name, headers FROM mcp_server_secrets
        WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${repositoryId ?? ""}`
      const opened = new Map<string, Record<string, string>>()
      for (const row of rows) {
        const plain = yield* secrets.open(row.headers, secretPlace(row.id)).pipe(Effect.orDie)
        opened.set(row.server_name, yield* decodeHeaders(Redacted.value(plain)).pipe(Effect.orDie))
      }
      return opened
    })

  /** The level's MCP servers as stored (names of headers only), their headers sealed apart. */
  const writeMcpServers = Effect.fnUntraced(function* (
    organizationId: string,
    repositoryId: string | null,
    servers: NonNullable<ConfigurationUpdate["mcp_servers"]> | null
  ) {
    const before = yield* storedHeaders(organizationId, repositoryId)
    const listed = servers ?? []
    const names = new Set<string>()
    const stored: Array<GroupValues> = []
    for (const server of listed) {
      if (names.has(server.name)) {
        return yield* new ConfigurationRefused({
          status: 400,
          code: "invalid_body",
          message: `Invalid body field "mcp_servers": the name "${server.name}" is used twice`
        })
      }
      names.add(server.name)
      const headers: Record<string, string> = {}
      for (const [header, value] of Object.entries(server.headers ?? {})) {
        const kept = value ?? before.get(server.name)?.[header]
        if (kept === undefined) {
          return yield* new ConfigurationRefused({
            status: 400,
            code: "mcp_header_unknown",
            message: `Invalid body field "mcp_servers": header "${header}" of server "${server.name}" is null (keep) but no value is stored for it`
          })
        }
        headers[header] = kept
      }
      stored.push({ name: server.name, url: server.url, header_names: Object.keys(headers).sort() })
      if (Object.keys(headers).length === 0) continue
      const [row] = yield* sql<{ id: string }>`
        INSERT INTO mcp_server_secrets (organization_id, repository_id, server_name, headers)
        VALUES (${organizationId}, ${repositoryId}, ${server.name}, '\\x'::bytea)
        ON CONFLICT (organization_id, coalesce(repository_id, ''), server_name)
        DO UPDATE SET updated_at = now()
        RETURNING id`
      if (row === undefined) return yield* Effect.die(new Error("mcp_server_secrets upsert returned no row"))
      const sealed = yield* secrets.seal(JSON.stringify(headers), secretPlace(row.id))
      yield* sql`UPDATE mcp_server_secrets SET headers = ${sealed} WHERE id = ${row.id}`
    }
    const keep = listed.filter((server) => Object.keys(server.headers ?? {}).length > 0).map((s) => s.name)
    yield* sql`
      DELETE FROM mcp_server_secrets
      WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${repositoryId ?? ""}
        AND server_name NOT IN (SELECT jsonb_array_elements_text(${JSON.stringify(keep)}::jsonb))`
    return stored
  })

  return { storedHeaders, writeMcpServers }
}

type McpHeaderStore = ReturnType<typeof mcpHeaderStore>

/**
 * Sandbox readiness after a write to `repositoryId`'s level, or to the organization's (every
 * repository): AGENT_ONE cannot run on PLATFORM_CONTAINER.
 */
const readinessRefresh = (sql: Sql, effective: ConfigurationRepo["Service"]["effective"]) => {
  const refreshReadiness = Effect.fnUntraced(function* (organizationId: string, repositoryId: string) {
    const now = yield* effective(organizationId, repositoryId)
    if (now.agent_provider === "AGENT_ONE" && now.sandbox_provider === "PLATFORM_CONTAINER") {
      yield* sql`
        INSERT INTO readiness_findings (organization_id, repository_id, code, severity, message)
        VALUES (${organizationId}, ${repositoryId}, ${AGENT_ONE_FINDING}, 'BLOCKING', ${AGENT_ONE_ON_PLATFORM_CONTAINER})
        ON CONFLICT (repository_id, code) DO UPDATE SET message = excluded.message, created_at = now()`
    } else {
      yield* sql`DELETE FROM readiness_findings
                 WHERE organization_id = ${organizationId} AND repository_id = ${repositoryId}
                   AND code = ${AGENT_ONE_FINDING}`
    }
    yield* sql`
      UPDATE repositories SET readiness_status = CASE
          WHEN EXISTS (SELECT 1 FROM readiness_findings f WHERE f.repository_id = repositories.id AND f.severity = 'BLOCKING')
            THEN 'BLOCKING'
          WHEN readiness_status = 'BLOCKING' THEN 'NOT_RUN'
          ELSE readiness_status END,
        updated_at = now()
      WHERE organization_id = ${organizationId} AND id = ${repositoryId}`
  })

  return Effect.fnUntraced(function* (organizationId: string, repositoryId: string | null) {
    const affected =
      repositoryId === null
        ? (yield* sql<{ id: string }>`SELECT id FROM repositories WHERE organization_id = ${organizationId}`).map(
            (row) => row.id
          )
        : [repositoryId]
    for (const id of affected) yield* refreshReadiness(organizationId, id)
  })
}

type RefreshReadiness = ReturnType<typeof readinessRefresh>

/** The writes that patch or drop a level's groups, then refresh readiness when agent or sandbox moved. */
const groupWriters = (sql: Sql, store: LevelStore, mcp: McpHeaderStore, refreshReadinessAfter: RefreshReadiness) => {
  const update = Effect.fn("ConfigurationRepo.update")(function* (
    organizationId: string,
    repositoryId: string | null,
    patch: ConfigurationUpdate,
    userId: string | null
  ) {
    yield* store.lockLevel(organizationId, repositoryId).pipe(Effect.orDie)
    const groups = yield* store.ownGroups(organizationId, repositoryId).pipe(Effect.orDie)
    const touched = new Set<ConfigurationGroup>()
    for (const [field, value] of Object.entries(patch) as Array<[keyof ConfigurationUpdate, unknown]>) {
      if (value === undefined) continue
      const group = GROUP_OF[field]
      const level = groups.get(group) ?? {}
      touched.add(group)
      if (field === "review_policy") {
        patchReviewPolicy(level, value)
      } else if (field === "mcp_servers") {
        const stored = yield* mcp
          .writeMcpServers(organizationId, repositoryId, patch.mcp_servers ?? null)
          .pipe(Effect.catchTag("SqlError", Effect.die))
        if (value === null) delete level.mcp_servers
        else level.mcp_servers = stored
      } else if (field === "skills" && value !== null) {
        const names = (value as ReadonlyArray<{ readonly name: string }>).map((skill) => skill.name)
        const twice = names.find((name, index) => names.indexOf(name) !== index)
        if (twice !== undefined) {
          return yield* new ConfigurationRefused({
            status: 400,
            code: "invalid_body",
            message: `Invalid body field "skills": the name "${twice}" is used twice`
          })
        }
        level.skills = value
      } else if (value === null) {
        delete level[field]
      } else {
        level[field] = value
      }
      groups.set(group, level)
    }
    for (const group of touched) {
      yield* store.upsertGroup(organizationId, repositoryId, group, groups.get(group) ?? {}, userId).pipe(Effect.orDie)
    }
    if (touched.has("agent") || touched.has("sandbox")) {
      yield* refreshReadinessAfter(organizationId, repositoryId).pipe(Effect.orDie)
    }
  })

  const reset = Effect.fn("ConfigurationRepo.reset")(function* (
    organizationId: string,
    repositoryId: string | null,
    group: ConfigurationGroup,
    _userId: string | null
  ) {
    yield* store.lockLevel(organizationId, repositoryId)
    yield* store.deleteGroup(organizationId, repositoryId, group)
    if (group === "mcp") {
      yield* sql`
        DELETE FROM mcp_server_secrets
        WHERE organization_id = ${organizationId} AND coalesce(repository_id, '') = ${repositoryId ?? ""}`
    }
    if (group === "agent" || group === "sandbox") yield* refreshReadinessAfter(organizationId, repositoryId)
  }, Effect.orDie)

  return { update, reset }
}

/** The writes to one repository's level that come from Bosun itself: approved context and the file as read. */
const repositoryWriters = (sql: Sql, store: LevelStore, effective: ConfigurationRepo["Service"]["effective"]) => {
  const addSecondaryRepository = Effect.fn("ConfigurationRepo.addSecondaryRepository")(function* (
    organizationId: string,
    repositoryId: string,
    secondaryRepositoryId: string,
    userId: string
  ) {
    yield* store.lockLevel(organizationId, repositoryId)
    // Only a repository of the same organization can be context.
    const [sibling] = yield* sql`
      SELECT id FROM repositories WHERE organization_id = ${organizationId} AND id = ${secondaryRepositoryId}`
    if (sibling === undefined) return
    const current = yield* effective(organizationId, repositoryId)
    if (current.secondary_repository_ids.includes(secondaryRepositoryId)) return
    const agent = (yield* store.ownGroups(organizationId, repositoryId)).get("agent") ?? {}
    yield* store.upsertGroup(
      organizationId,
      repositoryId,
      "agent",
      { ...agent, secondary_repository_ids: [...current.secondary_repository_ids, secondaryRepositoryId] },
      userId
    )
  }, Effect.orDie)

  const recordConfigFile = Effect.fn("ConfigurationRepo.recordConfigFile")(function* (
    organizationId: string,
    repositoryId: string,
    file: ConfigFileReading
  ) {
    const settings = file.settings === null ? null : JSON.stringify(file.settings)
    yield* sql`
      INSERT INTO repository_config_files (repository_id, organization_id, path, ref, found, settings, error)
      SELECT id, organization_id, ${file.path}, ${file.ref}, ${file.found}, ${settings}::jsonb, ${file.error}
      FROM repositories WHERE organization_id = ${organizationId} AND id = ${repositoryId}
      ON CONFLICT (repository_id) DO UPDATE SET path = excluded.path, ref = excluded.ref, found = excluded.found,
        settings = excluded.settings, error = excluded.error, read_at = now()`
  }, Effect.orDie)

  return { addSecondaryRepository, recordConfigFile }
}

export class ConfigurationRepo extends Context.Service<
  ConfigurationRepo,
  {
    /** The configuration in force for a repository, or for the organization as a whole (null). */
    readonly effective: (organizationId: string, repositoryId: string | null) => Effect.Effect<RepositoryConfiguration>
    /**
     * Applies a flat, partial update to one level (`repositoryId` null: the organization's): a
     * named field is set, a `null` one dropped so it inherits. Needs the caller's transaction.
     */
    readonly update: (
      organizationId: string,
      repositoryId: string | null,
      update: ConfigurationUpdate,
      userId: string | null
    ) => Effect.Effect<void, ConfigurationRefused>
    /** Drops one level's values of a group (and its MCP secrets), so the group inherits again. */
    readonly reset: (
      organizationId: string,
      repositoryId: string | null,
      group: ConfigurationGroup,
      userId: string | null
    ) => Effect.Effect<void>
    /**
     * Adds a repository to `secondary_repository_ids` (an approved context suggestion) at the
     * repository's level.
     */
    readonly addSecondaryRepository: (
      organizationId: string,
      repositoryId: string,
      secondaryRepositoryId: string,
      userId: string
    ) => Effect.Effect<void>
    /** Replaces an organization-wide group's stored fields as given (set-up in tests and tools). */
    readonly setOrganizationGroup: (
      organizationId: string,
      group: ConfigurationGroup,
      value: GroupValues,
      userId: string | null
    ) => Effect.Effect<void>
    /** The MCP servers in force for a run, with their headers opened (for the run's request only). */
    readonly mcpServersForRun: (
      organizationId: string,
      repositoryId: string | null
    ) => Effect.Effect<ReadonlyArray<typeof McpServer.Type>>
    /** Records what the repository's `.bosun.yaml` said when it was last read. */
    readonly recordConfigFile: (
      organizationId: string,
      repositoryId: string,
      file: ConfigFileReading
    ) => Effect.Effect<void>
  }
>()("bosun/server/persistence/ConfigurationRepo") {
  static readonly layer = Layer.effect(
    ConfigurationRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const store = levelStore(sql)
      const mcp = mcpHeaderStore(sql, yield* Secrets)

      const effective = Effect.fn("ConfigurationRepo.effective")(function* (
        organizationId: string,
        repositoryId: string | null
      ) {
        const rows = yield* store.groupRows(organizationId, repositoryId)
        const file = yield* store.fileRow(organizationId, repositoryId)
        return mergeConfiguration(rows, file, repositoryId)
      })

      const mcpServersForRun = Effect.fn("ConfigurationRepo.mcpServersForRun")(function* (
        organizationId: string,
        repositoryId: string | null
      ) {
        const configuration = yield* effective(organizationId, repositoryId)
        // The servers come whole from the level the group is in force at; so do their headers.
        const level = configuration.sources.mcp === "REPOSITORY" ? repositoryId : null
        const headers = yield* mcp.storedHeaders(organizationId, level)
        return configuration.mcp_servers.map((server) => ({
          name: server.name,
          url: server.url,
          headers: headers.get(server.name) ?? {}
        }))
      }, Effect.orDie)

      return ConfigurationRepo.of({
        effective,
        ...groupWriters(sql, store, mcp, readinessRefresh(sql, effective)),
        ...repositoryWriters(sql, store, effective),
        mcpServersForRun,
        setOrganizationGroup: (organizationId, group, value, userId) =>
          store.upsertGroup(organizationId, null, group, value, userId).pipe(Effect.orDie)
      })
    })
  )
}

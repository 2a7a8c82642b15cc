/**
 * Configuration groups and sandbox-readiness findings (spec: Resources "Repository
 * configuration"; Trust boundaries 3; Errors 6). `effective` overlays Bosun's defaults, the
 * organization's groups and the repository's groups; `updateRepository` writes the repository's
 * overrides and re-derives its readiness in the caller's transaction. Every query filters by the
 * organization.
 */
import {
  AGENT_ONE_ON_PLATFORM_CONTAINER,
  CONFIGURATION_GROUPS,
  type ConfigurationGroup,
  DEFAULT_CONFIGURATION,
  type RepositoryConfiguration,
  type RepositoryConfigurationUpdate
} from "@bosun/domain"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

type GroupValues = Record<string, unknown>

const AGENT_ONE_FINDING = "agent_one_on_platform_container"

export class ConfigurationRepo extends Context.Service<
  ConfigurationRepo,
  {
    /** The configuration in force for a repository, or for the organization as a whole (null). */
    readonly effective: (organizationId: string, repositoryId: string | null) => Effect.Effect<RepositoryConfiguration>
    readonly updateRepository: (
      organizationId: string,
      repositoryId: string,
      update: RepositoryConfigurationUpdate,
      userId: string
    ) => Effect.Effect<void>
    /**
     * Adds a repository to `secondary_repository_ids` (an approved context suggestion); the
     * repository takes over its agent group if it did not yet.
     */
    readonly addSecondaryRepository: (
      organizationId: string,
      repositoryId: string,
      secondaryRepositoryId: string,
      userId: string
    ) => Effect.Effect<void>
    /** Sets an organization-wide group (the organization settings' write; tests use it too). */
    readonly setOrganizationGroup: (
      organizationId: string,
      group: ConfigurationGroup,
      value: GroupValues,
      userId: string | null
    ) => Effect.Effect<void>
  }
>()("bosun/server/persistence/ConfigurationRepo") {
  static readonly layer = Layer.effect(
    ConfigurationRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const effective = Effect.fn("ConfigurationRepo.effective")(function* (
        organizationId: string,
        repositoryId: string | null
      ) {
        // With no repository, `repository_id = NULL` matches nothing: the organization's groups alone.
        const rows = yield* sql<{ group_name: ConfigurationGroup; value: GroupValues; repository_level: boolean }>`
          SELECT group_name, value, repository_id IS NOT NULL AS repository_level FROM configuration_groups
          WHERE organization_id = ${organizationId} AND (repository_id IS NULL OR repository_id = ${repositoryId})`.pipe(
          Effect.orDie
        )
        const merged: Record<string, unknown> = {}
        const overrides: Record<string, boolean> = {}
        const sources: Record<string, string> = {}
        for (const group of CONFIGURATION_GROUPS) {
          const own = rows.find((row) => row.group_name === group && row.repository_level)
          const organization = rows.find((row) => row.group_name === group && !row.repository_level)
          if (group === "review_policy") {
            // Field by field: a partial policy (and the guidance only an organization sets) still
            // leaves every field defined.
            merged.review_policy = {
              ...DEFAULT_CONFIGURATION.review_policy.review_policy,
              ...((organization?.value.review_policy as GroupValues | undefined) ?? {}),
              ...((own?.value.review_policy as GroupValues | undefined) ?? {})
            }
          } else {
            Object.assign(merged, DEFAULT_CONFIGURATION[group], organization?.value ?? {}, own?.value ?? {})
          }
          overrides[group] = own !== undefined
          sources[group] = own !== undefined ? "REPOSITORY" : organization !== undefined ? "ORGANIZATION" : "DEFAULT"
        }
        return { ...merged, overrides, sources } as unknown as RepositoryConfiguration
      })

      const upsertGroup = (
        organizationId: string,
        repositoryId: string | null,
        group: ConfigurationGroup,
        value: GroupValues,
        userId: string | null
      ) =>
        sql`
          INSERT INTO configuration_groups (organization_id, repository_id, group_name, value, updated_by)
          VALUES (${organizationId}, ${repositoryId}, ${group}, ${JSON.stringify(value)}::jsonb, ${userId})
          ON CONFLICT (organization_id, coalesce(repository_id, ''), group_name)
          DO UPDATE SET value = excluded.value, updated_by = excluded.updated_by, updated_at = now()`.pipe(
          Effect.asVoid
        )

      const lockRepository = (organizationId: string, repositoryId: string) =>
        sql`SELECT id FROM repositories WHERE organization_id = ${organizationId} AND id = ${repositoryId} FOR UPDATE`

      const pick = (source: RepositoryConfiguration, group: ConfigurationGroup): GroupValues =>
        Object.fromEntries(
          Object.keys(DEFAULT_CONFIGURATION[group]).map((key) => [key, source[key as keyof RepositoryConfiguration]])
        )

      const updateRepository = Effect.fn("ConfigurationRepo.updateRepository")(function* (
        organizationId: string,
        repositoryId: string,
        update: RepositoryConfigurationUpdate,
        userId: string
      ) {
        // One writer per repository at a time: the groups are read, changed and written whole.
        yield* lockRepository(organizationId, repositoryId)
        // A repository override holds its whole group: start from what it inherits now.
        const current = yield* effective(organizationId, repositoryId)
        const agent = {
          ...pick(current, "agent"),
          agent_provider: update.agent_provider,
          automatic_pr_description: update.automatic_pr_description,
          issue_pull_request_mode: update.issue_pull_request_mode
        }
        // The guidance stays the organization's: the PUT does not carry it.
        const reviewPolicy = { review_policy: update.review_policy }
        const sandbox = { sandbox_config: update.sandbox_config, sandbox_provider: update.sandbox_provider }
        yield* upsertGroup(organizationId, repositoryId, "agent", agent, userId)
        yield* upsertGroup(organizationId, repositoryId, "review_policy", reviewPolicy, userId)
        yield* upsertGroup(organizationId, repositoryId, "sandbox", sandbox, userId)
        // Sandbox readiness, from the configuration now in effect: AGENT_ONE cannot run on
        // PLATFORM_CONTAINER (spec: Trust boundaries 3).
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
      }, Effect.orDie)

      const addSecondaryRepository = Effect.fn("ConfigurationRepo.addSecondaryRepository")(function* (
        organizationId: string,
        repositoryId: string,
        secondaryRepositoryId: string,
        userId: string
      ) {
        yield* lockRepository(organizationId, repositoryId)
        // Only a repository of the same organization can be context.
        const [sibling] = yield* sql`
          SELECT id FROM repositories WHERE organization_id = ${organizationId} AND id = ${secondaryRepositoryId}`
        if (sibling === undefined) return
        const current = yield* effective(organizationId, repositoryId)
        if (current.secondary_repository_ids.includes(secondaryRepositoryId)) return
        yield* upsertGroup(
          organizationId,
          repositoryId,
          "agent",
          {
            ...pick(current, "agent"),
            secondary_repository_ids: [...current.secondary_repository_ids, secondaryRepositoryId]
          },
          userId
        )
      }, Effect.orDie)

      return ConfigurationRepo.of({
        effective,
        updateRepository,
        addSecondaryRepository,
        setOrganizationGroup: (organizationId, group, value, userId) =>
          upsertGroup(organizationId, null, group, value, userId).pipe(Effect.orDie)
      })
    })
  )
}

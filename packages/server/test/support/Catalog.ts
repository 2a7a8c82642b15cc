/**
 * A catalog discovery recorded as the catalog_discovery run records a successful one, for tests
 * that need a catalog in force without running an agent CLI: the newest SUCCEEDED discovery of a
 * scope is its catalog.
 */
import type { AgentCatalog } from "@bosun/domain"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const recordDiscoveredCatalog = (
  org: string,
  catalog: AgentCatalog,
  options: { readonly repositoryId?: string | null; readonly credentialFingerprint?: string } = {}
) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      INSERT INTO agent_catalog_discoveries (organization_id, repository_id, status, credential_fingerprint, catalog,
                                             provider_version, started_at, finished_at, last_successful_at)
      VALUES (${org}, ${options.repositoryId ?? null}, 'SUCCEEDED',
              ${options.credentialFingerprint ?? "fp:0011223344556677"}, ${JSON.stringify(catalog)}::jsonb,
              'opencode 1.18.33', clock_timestamp(), clock_timestamp(), clock_timestamp())`
  ).pipe(Effect.orDie, Effect.asVoid)

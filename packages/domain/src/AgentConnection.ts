/**
 * Agent connections (spec: Resources "Agent connection"; Organization endpoints
 * `opencode-connection`; Authentication 3, 7). Credentials are written per organization or, with
 * the query parameter `repository_id`, as a repository override that leaves the organization's
 * untouched; they are sealed and never returned — only fingerprints, versions and where they
 * come from. `auth.active_version` counts the writes of that scope. The catalog discovery is
 * QUEUED after each write until the runtime discovers the providers' models; `ready` needs
 * configured credentials and a successful discovery.
 */
import { Schema } from "effect"
import { AgentCatalog } from "./runtime/Protocol.ts"

export const ConnectionScope = Schema.Literals(["ORGANIZATION", "REPOSITORY"])
export const ConnectionMode = Schema.Literals(["NONE", "CREDENTIALS"])
export const DiscoveryStatus = Schema.Literals(["QUEUED", "RUNNING", "SUCCEEDED", "FAILED"])

const Text = Schema.NullOr(Schema.String)

export const AgentConnection = Schema.Struct({
  auth: Schema.Struct({
    active_version: Schema.Int,
    configured: Schema.Boolean,
    fingerprint: Text,
    inherited: Schema.Boolean,
    mode: ConnectionMode,
    provider_ids: Schema.Array(Schema.String),
    source_scope: ConnectionScope
  }),
  catalog: Schema.Struct({
    catalog: AgentCatalog,
    configuration_fingerprint: Text,
    credential_fingerprint: Text,
    error: Text,
    finished_at: Text,
    id: Text,
    last_successful_at: Text,
    organization_id: Schema.String,
    provider_version: Text,
    repository_id: Text,
    started_at: Text,
    status: Schema.NullOr(DiscoveryStatus),
    updated_at: Text,
    workflow_run_id: Text
  }),
  configuration: Schema.Struct({
    active_version: Schema.Int,
    configured: Schema.Boolean,
    fingerprint: Text,
    inherited: Schema.Boolean,
    source_scope: ConnectionScope
  }),
  organization_id: Schema.String,
  ready: Schema.Boolean,
  repository_id: Text
})
export type AgentConnection = typeof AgentConnection.Type

export const AgentConnectionWrite = Schema.Struct({
  connection: AgentConnection,
  excluded_sections: Schema.Array(Schema.String)
})

/**
 * One reading of what a provider reports about an organization's key (credit used, limit left,
 * rate limits), in the provider's own field names under `figures`; at most the UsageCache TTL old.
 */
export const ProviderUsage = Schema.Struct({
  provider: Schema.String,
  /** ISO 8601, when the provider was asked. */
  fetched_at: Schema.String,
  figures: Schema.Record(Schema.String, Schema.Unknown)
})
export type ProviderUsage = typeof ProviderUsage.Type

export const ApiKeyUpdate = Schema.Struct({
  api_key: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096))
})

/** An OpenCode `auth.json`-shaped object under `auth`; other top-level sections are excluded. */
export const AgentImport = Schema.StructWithRest(
  Schema.Struct({
    auth: Schema.Record(
      Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9._-]{0,127}$/)),
      Schema.Record(Schema.String, Schema.Unknown)
    ).check(Schema.makeFilter((auth) => (Object.keys(auth).length > 0 ? undefined : "must name at least one provider")))
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)

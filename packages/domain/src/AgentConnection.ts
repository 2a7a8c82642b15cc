/**
 * Agent connections (docs/interface.md: Resources "Agent connection"; Organization endpoints
 * `opencode-connection`; Authentication 3, 7). Credentials are written per organization or, with
 * the query parameter `repository_id`, as a repository override that leaves the organization's
 * untouched; they are sealed and never returned — only fingerprints, versions and where they
 * come from. `auth.active_version` counts the writes of that scope. The catalog discovery is
 * QUEUED after each write until the runtime discovers the providers' models; `ready` needs
 * configured credentials and a successful discovery.
 */
import { Schema } from "effect"
import { isCredentialedUrl } from "./CredentialedUrl.ts"
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

const URL_EXPECTED =
  "must be an https:// URL (plain http:// only on a loopback host), without spaces or control characters"

/**
 * Where the agent sends a provider's key: https, or plain http only on a loopback host. The text
 * is checked as given, not as the URL parser would clean it up (it drops tabs and line breaks),
 * because the agent receives the text. Which addresses a hostname may reach is the sandbox's
 * egress rules' business, not this check's.
 */
export const ProviderBaseUrl = Schema.String.check(
  Schema.makeFilter((text: string) => {
    const url = text.length <= 2048 && /^[\x21-\x7e]+$/.test(text) && URL.canParse(text) ? new URL(text) : undefined
    return url !== undefined && isCredentialedUrl(url) ? undefined : URL_EXPECTED
  })
)

/** RFC 9110 `token`: a header name. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/
/** RFC 9110 `field-value` without folding: visible characters, spaces and tabs, no CR, LF or NUL. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]{0,8192}$/

/**
 * Headers the agent adds to each request to the provider. A value may be a secret: failures name
 * the header, never its value; a name that is not a token is refused without repeating it.
 */
export const ProviderHeaders = Schema.Record(Schema.String, Schema.String).check(
  Schema.makeFilter((headers: Readonly<Record<string, string>>) => {
    const names = Object.keys(headers)
    if (names.some((name) => !HEADER_NAME.test(name))) {
      return "header names must be HTTP tokens (letters, digits and !#$%&'*+-.^_`|~)"
    }
    return names
      .filter((name) => !HEADER_VALUE.test(headers[name] ?? ""))
      .map((name) => ({ path: [name], issue: "must be an HTTP header value: no CR, LF or other control characters" }))
  })
)

/**
 * One provider's entry of an import: the auth.json fields pass through (the agent's adapter
 * checks them), but `base_url` and `headers`, which decide where and how the key is sent, are
 * checked here.
 */
export const AgentImportProvider = Schema.StructWithRest(
  Schema.Struct({
    base_url: Schema.optionalKey(ProviderBaseUrl),
    headers: Schema.optionalKey(ProviderHeaders)
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)

/** An OpenCode `auth.json`-shaped object under `auth`; other top-level sections are excluded. */
export const AgentImport = Schema.StructWithRest(
  Schema.Struct({
    auth: Schema.Record(
      Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9._-]{0,127}$/)),
      AgentImportProvider
    ).check(Schema.makeFilter((auth) => (Object.keys(auth).length > 0 ? undefined : "must name at least one provider")))
  }),
  [Schema.Record(Schema.String, Schema.Unknown)]
)

/**
 * One minimal agent turn with a scope's credentials and the model in force (the "Test" of an
 * agent connection, and `bosun doctor`'s model check): whether the model answered, which model,
 * and the provider's own error when it did not.
 */
export const ModelTurnResult = Schema.Struct({
  ok: Schema.Boolean,
  /** `provider/model`; empty when no model could be chosen. */
  model: Schema.String,
  /** One line: the model's answer, or what failed in the provider's own words. */
  message: Schema.String,
  tested_at: Schema.String,
  duration_ms: Schema.Int
})
export type ModelTurnResult = typeof ModelTurnResult.Type

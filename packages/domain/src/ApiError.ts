/**
 * The error envelope every Bosun response uses (docs/interface.md: Errors 1-3):
 * `{"error": {"code", "message"}}`.
 *
 * Each class is one HTTP status. They are `Schema.Error` classes rather than `Schema.TaggedError`
 * so that the encoded body is exactly the error envelope with no `_tag` beside it; the runtime
 * `_tag` is a plain class field, so `Effect.catchTag` still works on the server side.
 */
import { Schema } from "effect"

export const ErrorBody = Schema.Struct({
  code: Schema.String,
  message: Schema.String
})
export type ErrorBody = typeof ErrorBody.Type

const envelope = { error: ErrorBody }

export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(envelope, { httpApiStatus: 400 }) {
  readonly _tag = "BadRequest"
  static fromCode(code: string, message: string) {
    return new BadRequest({ error: { code, message } })
  }
}

export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(envelope, { httpApiStatus: 401 }) {
  readonly _tag = "Unauthorized"
  static fromCode(code: string, message: string) {
    return new Unauthorized({ error: { code, message } })
  }
}

export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(envelope, { httpApiStatus: 403 }) {
  readonly _tag = "Forbidden"
  static fromCode(code: string, message: string) {
    return new Forbidden({ error: { code, message } })
  }
}

export class NotFound extends Schema.Error<NotFound>("NotFound")(envelope, { httpApiStatus: 404 }) {
  readonly _tag = "NotFound"
  static fromCode(code: string, message: string) {
    return new NotFound({ error: { code, message } })
  }
}

export class Conflict extends Schema.Error<Conflict>("Conflict")(envelope, { httpApiStatus: 409 }) {
  readonly _tag = "Conflict"
  static fromCode(code: string, message: string) {
    return new Conflict({ error: { code, message } })
  }
}

export class BadGateway extends Schema.Error<BadGateway>("BadGateway")(envelope, { httpApiStatus: 502 }) {
  readonly _tag = "BadGateway"
  static fromCode(code: string, message: string) {
    return new BadGateway({ error: { code, message } })
  }
}

export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("ServiceUnavailable")(envelope, {
  httpApiStatus: 503
}) {
  readonly _tag = "ServiceUnavailable"
  static fromCode(code: string, message: string) {
    return new ServiceUnavailable({ error: { code, message } })
  }
}

/** Codes Bosun itself emits outside any endpoint's own errors (routing, validation, defects). */
export const ErrorCodes = {
  notFound: "not_found",
  routeNotFound: "route_not_found",
  methodNotAllowed: "method_not_allowed",
  invalidParams: "invalid_path_parameter",
  invalidQuery: "invalid_query_parameter",
  invalidHeaders: "invalid_header",
  invalidBody: "invalid_body",
  payloadTooLarge: "payload_too_large",
  /** A body that is not declared JSON (no or another `Content-Type`) on a JSON route (415). */
  unsupportedMediaType: "unsupported_media_type",
  internal: "internal_error",
  migrationsPending: "migrations_pending",
  databaseUnavailable: "database_unavailable",
  unauthorized: "unauthorized",
  bootstrapTokenUnset: "bootstrap_token_unset",
  rotationInProgress: "rotation_in_progress",
  sessionRequired: "session_required",
  originMismatch: "origin_mismatch",
  forbidden: "forbidden",
  organizationRequired: "organization_required",
  githubAppUnconfigured: "github_app_unconfigured",
  invalidOauthState: "invalid_oauth_state",
  invalidOauthCode: "invalid_oauth_code",
  githubUnavailable: "github_unavailable",
  githubAppNotInstalled: "github_app_not_installed",
  defaultBranchNotFound: "default_branch_not_found",
  repositoryUnavailable: "repository_unavailable",
  memoryNotApproved: "memory_not_approved",
  /** The memory was approved or rejected already (409). */
  memoryAlreadyDecided: "memory_already_decided",
  invalidCursor: "invalid_cursor",
  actionNotAvailable: "action_not_available",
  suggestionAlreadyDecided: "suggestion_already_decided",
  /** The deep-scan finding was accepted or rejected already (409). */
  findingAlreadyDecided: "finding_already_decided",
  /** A deep-scan schedule's cron expression is not five cron fields (400). */
  invalidCron: "invalid_cron",
  /** A deep scan's fix needs at least one accepted finding (409). */
  noAcceptedFindings: "no_accepted_findings",
  /** No `BOSUN_COMPOSIO_API_KEY` is configured (503). */
  composioUnconfigured: "composio_unconfigured",
  /** Composio refused the configured API key (503: the operator must fix it). */
  composioCredentialsRejected: "composio_credentials_rejected",
  /** Composio could not be reached, timed out, failed or answered something unreadable (502). */
  composioUnavailable: "composio_unavailable",
  /** Composio has no toolkit with the requested slug (404). */
  composioToolkitNotFound: "composio_toolkit_not_found",
  /** The toolkit needs authentication Composio does not manage: an auth config must be created in Composio (409). */
  composioAuthConfigRequired: "composio_auth_config_required",
  /** The organization's connection has no credential for this provider (404). */
  providerCredentialMissing: "provider_credential_missing",
  /** The provider has no usage endpoint Bosun knows (404). */
  usageNotReported: "usage_not_reported",
  /** The provider's usage endpoint failed or refused the key (502). */
  providerUnavailable: "provider_unavailable",
  /** The Linear workspace is connected to another organization (409). */
  linearWorkspaceTaken: "linear_workspace_taken",
  /** Linear refused the access token (400). */
  linearTokenInvalid: "linear_token_invalid",
  /**
   * The access token is not of the Linear workspace named (400): the same answer whether that
   * workspace exists, is connected elsewhere or not, so nobody learns which ids are taken.
   */
  linearWorkspaceMismatch: "linear_workspace_mismatch",
  /** Linear could not be reached or failed (502). */
  linearUnavailable: "linear_unavailable",
  /** The Slack workspace is connected to another organization (409). */
  slackWorkspaceTaken: "slack_workspace_taken",
  /** Slack refused the bot token (400). */
  slackTokenInvalid: "slack_token_invalid",
  /** Slack could not be reached or failed (502). */
  slackUnavailable: "slack_unavailable",
  /** No model catalog has been discovered for the agent credentials in force (409). */
  modelCatalogUnavailable: "model_catalog_unavailable",
  /** The model is not in the catalog of the credentials in force (400; the message lists close matches). */
  unknownModel: "unknown_model",
  /** The model variant is not one the catalog lists for the model (400). */
  unknownModelVariant: "unknown_model_variant",
  /** The catalog says the model does not reason, so it takes no reasoning effort (400). */
  reasoningNotSupported: "reasoning_not_supported",
  /** A field that belongs to one level only (a repository's secondary repositories) set at the other (400). */
  invalidConfigurationField: "invalid_configuration_field",
  /** An MCP header sent as null (keep) that has no stored value (400). */
  mcpHeaderUnknown: "mcp_header_unknown"
} as const

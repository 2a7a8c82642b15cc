/**
 * An organization's connection to Linear, the issue tracker (docs/interface.md names no
 * endpoint for it, so Bosun defines `PUT/GET/DELETE .../linear-connection`, docs/connect-linear.md). The
 * webhook signing secret and the API token are write-only: sealed on arrival, never returned.
 */
import { Schema } from "effect"
import { HeaderSafeText } from "./HeaderSafe.ts"

const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

export const LinearOAuthGrant = Schema.Struct({
  /** The Linear OAuth application's client id and secret. */
  client_id: Text(256),
  client_secret: Text(1024),
  refresh_token: Text(4096),
  /** Seconds the access token is valid from now, as Linear's token answer gives it. */
  expires_in: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 315_360_000 }))
})
export type LinearOAuthGrant = typeof LinearOAuthGrant.Type

export const LinearConnectionSettings = Schema.Struct({
  /** The Linear workspace (`organizationId` of its webhook payloads). */
  linear_organization_id: Text(128),
  /** The signing secret of the workspace's webhook pointing at `/api/v1/linear/webhooks`. */
  webhook_secret: Text(1024),
  /**
   * A Linear API key or OAuth access token Bosun comments and moves issues with. Required: Linear's
   * answer to it (`organization { id }`) is what proves the workspace is the connecting
   * organization's.
   */
  access_token: HeaderSafeText(4096),
  /**
   * For an OAuth access token that expires: what renews it. Bosun refreshes it at Linear's token
   * endpoint shortly before it expires (or when Linear refuses it), one refresh per organization
   * at a time, and keeps the rotated refresh token. Needs `access_token`.
   */
  oauth: Schema.optional(LinearOAuthGrant),
  /** Bosun's own Linear user: an issue assigned to it, or a comment mentioning it, is Bosun's work. */
  app_user_id: Schema.optional(Text(128)),
  /** That user's name as mentions write it (`@bosun`). */
  app_user_name: Schema.optional(Text(128))
})
export type LinearConnectionSettings = typeof LinearConnectionSettings.Type

export const LinearConnection = Schema.Struct({
  linear_organization_id: Schema.String,
  app_user_id: Schema.NullOr(Schema.String),
  app_user_name: Schema.NullOr(Schema.String),
  has_access_token: Schema.Boolean,
  /** Whether Bosun renews the access token itself (an OAuth grant with a refresh token). */
  refreshable: Schema.Boolean,
  /** When the access token expires; null for a key that does not. */
  access_token_expires_at: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type LinearConnection = typeof LinearConnection.Type

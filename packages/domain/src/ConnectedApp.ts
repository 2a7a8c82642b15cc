/**
 * Connected apps (docs/interface.md: Resources "Connected-app connection result";
 * Organization endpoints `POST .../composio/connections`): a member asks to use a third-party app,
 * named by its Composio toolkit slug, for themselves. A toolkit that needs no authentication is
 * simply usable (ACTIVE, no link); any other answers AUTHORIZATION_REQUIRED with a hosted connect
 * link the user opens before `expires_at`. The statuses are Composio's own words for a connected
 * account. `GET .../composio/connections` lists the member's own apps as `ConnectedApp`: what the
 * dashboard shows, never the link (a bearer URL) nor any Composio id.
 */
import { Schema } from "effect"

/** A Composio toolkit slug as Bosun accepts it: lowercase, 1..64 characters. */
export const ToolkitSlug = Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9_-]{0,63}$/))

export const ConnectedAppStatus = Schema.Literals(["ACTIVE", "AUTHORIZATION_REQUIRED"])
export type ConnectedAppStatus = typeof ConnectedAppStatus.Type

export const ConnectedAppConnectionRequest = Schema.Struct({ toolkit_slug: ToolkitSlug })

export const ConnectedAppConnection = Schema.Struct({
  /** When the connect link stops working; null when there is no link. */
  expires_at: Schema.NullOr(Schema.String),
  /** Composio's hosted connect page for this user; null for an app that needs no authorization. */
  redirect_url: Schema.NullOr(Schema.String),
  status: ConnectedAppStatus
})
export type ConnectedAppConnection = typeof ConnectedAppConnection.Type

/** A member's latest connection request for one toolkit in one organization. */
export const ConnectedApp = Schema.Struct({
  created_at: Schema.String,
  /** When the connect link of an AUTHORIZATION_REQUIRED request stops working; null when there is no link. */
  expires_at: Schema.NullOr(Schema.String),
  status: ConnectedAppStatus,
  toolkit_slug: Schema.String,
  /** When the latest request replaced the previous one (equal to created_at after the first). */
  updated_at: Schema.String
})
export type ConnectedApp = typeof ConnectedApp.Type

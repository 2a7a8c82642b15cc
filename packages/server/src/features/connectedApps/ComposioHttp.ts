/**
 * `GET .../composio/connections`: the signed-in member's own connected apps in the
 * organization, by toolkit slug, without links or Composio ids.
 * `POST .../composio/connections` `{toolkit_slug}` (docs/interface.md: Organization endpoints;
 * Resources "Connected-app connection result"). Any member may connect an app for themselves: a
 * toolkit that needs no authentication answers ACTIVE with no link; any other a Composio hosted
 * connect link (AUTHORIZATION_REQUIRED) that brings the member back to `BOSUN_BASE_URL`. Composio
 * is asked first and the outcome recorded after, with its audit event, so a failed request writes
 * nothing. `toHttp` is the one place Composio's failures become HTTP answers.
 */
import {
  BadGateway,
  BosunApi,
  Conflict,
  type ConnectedApp,
  CurrentUser,
  ErrorCodes,
  NotFound,
  ServiceUnavailable
} from "@bosun/domain"
import { Effect, Option } from "effect"
import { Composio, type ComposioError } from "../../outbound/composio/Composio.ts"
import {
  type ComposioConnection,
  type ComposioConnectionRequest,
  ComposioConnectionsRepo
} from "../../outbound/composio/ComposioConnectionsRepo.ts"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"

/**
 * The user id Bosun gives Composio for a member of an organization. Stable (both ids are), and
 * per organization, so an app a member connects in one organization is not usable by the agents
 * of another. Both parts are opaque ids Bosun already shows (the organization id is in every
 * path, the user id in `GET /me` and the logs); no login, name or e-mail goes to Composio. User
 * ids are UUIDs, so the last `:` always separates the two parts.
 */
export const composioUserId = (organizationId: string, userId: string) => `bosun:${organizationId}:${userId}`

const toHttp = (error: ComposioError) => {
  switch (error.reason) {
    case "Unconfigured":
      return ServiceUnavailable.fromCode(ErrorCodes.composioUnconfigured, error.message)
    case "CredentialsRejected":
      return ServiceUnavailable.fromCode(ErrorCodes.composioCredentialsRejected, error.message)
    case "ToolkitNotFound":
      return NotFound.fromCode(ErrorCodes.composioToolkitNotFound, error.message)
    case "ManagedAuthUnavailable":
      return Conflict.fromCode(ErrorCodes.composioAuthConfigRequired, error.message)
    case "Unavailable":
      return BadGateway.fromCode(ErrorCodes.composioUnavailable, error.message)
  }
}

/** What the dashboard sees of a stored connection: no Composio id, no link (it is not stored). */
const toConnectedApp = (connection: ComposioConnection): ConnectedApp => ({
  created_at: connection.createdAt.toISOString(),
  expires_at: connection.redirectExpiresAt?.toISOString() ?? null,
  status: connection.status,
  toolkit_slug: connection.toolkitSlug,
  updated_at: connection.updatedAt.toISOString()
})

export const ComposioHttp = group(
  BosunApi,
  "composio",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const composio = yield* Composio
    const connections = yield* ComposioConnectionsRepo
    const audit = yield* AuditLog
    const callbackUrl = (yield* AppConfig).baseUrl.href

    return handlers
      .handle("list", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const user = yield* CurrentUser
          const mine = yield* connections.listForMember(params.organization_id, user.userId)
          return { data: mine.map(toConnectedApp) }
        })
      )
      .handle("connect", ({ params, payload }) =>
        Effect.gen(function* () {
          const organizationId = params.organization_id
          const toolkitSlug = payload.toolkit_slug
          yield* access.member(organizationId)
          const user = yield* CurrentUser
          const composioUser = composioUserId(organizationId, user.userId)
          const outcome = yield* composio
            .connect({ toolkitSlug, userId: composioUser, callbackUrl })
            .pipe(Effect.mapError(toHttp))
          const request: ComposioConnectionRequest =
            outcome._tag === "NoAuth"
              ? {
                  userId: user.userId,
                  toolkitSlug,
                  composioUserId: composioUser,
                  authConfigId: null,
                  connectedAccountId: null,
                  status: "ACTIVE",
                  redirectExpiresAt: null
                }
              : {
                  userId: user.userId,
                  toolkitSlug,
                  composioUserId: composioUser,
                  authConfigId: outcome.authConfigId,
                  connectedAccountId: outcome.connectedAccountId,
                  status: "AUTHORIZATION_REQUIRED",
                  redirectExpiresAt: outcome.expiresAt
                }
          yield* audit.audited(Effect.map(connections.record(organizationId, request), Option.some), (written) => ({
            organizationId,
            actor: { kind: "user", userId: user.userId },
            action: "composio.connect",
            target: `composio_toolkit:${toolkitSlug}`,
            details: { status: written.status, connected_account_id: written.connectedAccountId }
          }))
          return {
            data:
              outcome._tag === "NoAuth"
                ? { expires_at: null, redirect_url: null, status: "ACTIVE" as const }
                : {
                    expires_at: outcome.expiresAt.toISOString(),
                    redirect_url: outcome.redirectUrl,
                    status: "AUTHORIZATION_REQUIRED" as const
                  }
          }
        })
      )
  })
)

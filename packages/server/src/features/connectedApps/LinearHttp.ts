/**
 * `GET/PUT/DELETE .../linear-connection` (an endpoint Bosun defines; docs/connect-linear.md). Connecting
 * proves the workspace is the caller's: Linear is asked which workspace the access token belongs to
 * (`organization { id }`), as Slack's connection asks `auth.test`. A token Linear refuses is a 400
 * `linear_token_invalid`; a token of another workspace than `linear_organization_id` a 400
 * `linear_workspace_mismatch` — the same answer whether that id is unknown or connected elsewhere,
 * so ids cannot be probed; Linear unreachable a 502. Only a proven owner learns that its workspace
 * is connected to another organization (409: one workspace's deliveries must have one owner).
 * Connecting and disconnecting need ADMIN and are audited without the secrets, which are sealed on
 * arrival and never returned.
 */
import { BadGateway, BadRequest, BosunApi, Conflict, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option, Redacted } from "effect"
import { LinearConnectionsRepo } from "../../outbound/linear/LinearConnectionsRepo.ts"
import { LinearTracker } from "../../outbound/linear/LinearTracker.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"

export const LinearHttp = group(
  BosunApi,
  "linear",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const connections = yield* LinearConnectionsRepo
    const audit = yield* AuditLog
    const linear = yield* LinearTracker
    const actorOf = Effect.map(CurrentUser, (user) => ({ kind: "user" as const, userId: user.userId }))
    return handlers
      .handle("getConnection", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const found = yield* connections.find(params.organization_id)
          if (Option.isNone(found)) {
            return yield* NotFound.fromCode(ErrorCodes.notFound, "This organization is not connected to Linear")
          }
          return { data: found.value }
        })
      )
      .handle("connect", ({ params, payload }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          const actor = yield* actorOf
          const accessToken = Redacted.make(payload.access_token)
          const workspace = yield* linear
            .workspaceOf(accessToken)
            .pipe(
              Effect.mapError((error) =>
                error.reason === "Refused"
                  ? BadRequest.fromCode(
                      ErrorCodes.linearTokenInvalid,
                      `Linear refused the access token (${error.message.replace(/^Linear organization: /, "")})`
                    )
                  : BadGateway.fromCode(
                      ErrorCodes.linearUnavailable,
                      `Linear could not verify the access token: ${error.message}`
                    )
              )
            )
          if (workspace.id !== payload.linear_organization_id) {
            return yield* BadRequest.fromCode(
              ErrorCodes.linearWorkspaceMismatch,
              "The access token does not belong to the Linear workspace linear_organization_id names"
            )
          }
          const saved = yield* audit.audited(
            connections
              .upsert(params.organization_id, {
                linearOrganizationId: payload.linear_organization_id,
                webhookSecret: Redacted.make(payload.webhook_secret),
                accessToken: Option.some(accessToken),
                appUserId: payload.app_user_id ?? null,
                appUserName: payload.app_user_name ?? null,
                oauth: Option.map(Option.fromUndefinedOr(payload.oauth), (grant) => ({
                  clientId: grant.client_id,
                  clientSecret: Redacted.make(grant.client_secret),
                  refreshToken: Redacted.make(grant.refresh_token),
                  expiresAt: new Date(Date.now() + grant.expires_in * 1000)
                }))
              })
              .pipe(Effect.orDie),
            () => ({
              organizationId: params.organization_id,
              actor,
              action: "linear_connection.connect",
              target: `linear_workspace:${payload.linear_organization_id}`
            })
          )
          if (Option.isNone(saved)) {
            return yield* Conflict.fromCode(
              ErrorCodes.linearWorkspaceTaken,
              "This Linear workspace is already connected to another organization"
            )
          }
          return { data: saved.value }
        })
      )
      .handle("disconnect", ({ params }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          const actor = yield* actorOf
          // Audited only when there was a connection to remove.
          const deleted = yield* audit.audited(
            Effect.map(connections.remove(params.organization_id), (removed) =>
              removed ? Option.some(true) : Option.none()
            ),
            () => ({
              organizationId: params.organization_id,
              actor,
              action: "linear_connection.disconnect",
              target: "linear_connection"
            })
          )
          return { data: { deleted: Option.isSome(deleted) } }
        })
      )
  })
)

/**
 * `GET/PUT/DELETE .../linear-connection` (issue 9: connecting Linear through an endpoint Bosun
 * defines; README "Linear"). Connecting and disconnecting need ADMIN and are audited without the
 * secrets, which are sealed on arrival and never returned; a workspace already connected to
 * another organization is a 409 (one workspace's deliveries must have one owner).
 */
import { BosunApi, Conflict, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option, Redacted } from "effect"
import { AuditLog } from "../persistence/AuditLog.ts"
import { LinearConnectionsRepo } from "../persistence/LinearConnectionsRepo.ts"
import { group } from "./ApiGroup.ts"
import { OrgAccess } from "./OrgAccess.ts"

export const LinearHttp = group(
  BosunApi,
  "linear",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const connections = yield* LinearConnectionsRepo
    const audit = yield* AuditLog
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
          const saved = yield* audit.audited(
            connections
              .upsert(params.organization_id, {
                linearOrganizationId: payload.linear_organization_id,
                webhookSecret: Redacted.make(payload.webhook_secret),
                accessToken: Option.map(Option.fromUndefinedOr(payload.access_token), Redacted.make),
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

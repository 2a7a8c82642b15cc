/**
 * `GET/PUT/DELETE .../slack-connection` (an endpoint Bosun defines; docs/connect-slack.md). Connecting
 * asks Slack who the bot token is (`auth.test`): a token Slack refuses is a 400
 * `slack_token_invalid` and nothing is stored; Slack unreachable is a 502. The workspace and bot
 * user come from Slack's answer, so they cannot be mistyped. Connecting and disconnecting need
 * ADMIN and are audited without the secrets, which are sealed on arrival and never returned; a
 * workspace already connected to another organization is a 409.
 */
import { BadGateway, BadRequest, BosunApi, Conflict, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option, Redacted } from "effect"
import { SlackChat } from "../../outbound/slack/SlackChat.ts"
import { SlackConnectionsRepo } from "../../outbound/slack/SlackConnectionsRepo.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"

export const SlackHttp = group(
  BosunApi,
  "slack",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const connections = yield* SlackConnectionsRepo
    const slack = yield* SlackChat
    const audit = yield* AuditLog
    const actorOf = Effect.map(CurrentUser, (user) => ({ kind: "user" as const, userId: user.userId }))
    return handlers
      .handle("getConnection", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const found = yield* connections.find(params.organization_id)
          if (Option.isNone(found)) {
            return yield* NotFound.fromCode(ErrorCodes.notFound, "This organization is not connected to Slack")
          }
          return { data: found.value }
        })
      )
      .handle("connect", ({ params, payload }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          const actor = yield* actorOf
          const botToken = Redacted.make(payload.bot_token)
          const identity = yield* slack
            .identify(botToken)
            .pipe(
              Effect.mapError((error) =>
                error.reason === "Refused"
                  ? BadRequest.fromCode(
                      ErrorCodes.slackTokenInvalid,
                      `Slack refused the bot token (${error.message.replace(/^Slack auth\.test: /, "")})`
                    )
                  : BadGateway.fromCode(
                      ErrorCodes.slackUnavailable,
                      `Slack could not verify the bot token: ${error.message}`
                    )
              )
            )
          const saved = yield* audit.audited(
            connections
              .upsert(params.organization_id, {
                teamId: identity.teamId,
                teamName: identity.teamName,
                botUserId: identity.botUserId,
                botToken,
                signingSecret: Redacted.make(payload.signing_secret)
              })
              .pipe(Effect.orDie),
            () => ({
              organizationId: params.organization_id,
              actor,
              action: "slack_connection.connect",
              target: `slack_team:${identity.teamId}`
            })
          )
          if (Option.isNone(saved)) {
            return yield* Conflict.fromCode(
              ErrorCodes.slackWorkspaceTaken,
              "This Slack workspace is already connected to another organization"
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
              action: "slack_connection.disconnect",
              target: "slack_connection"
            })
          )
          return { data: { deleted: Option.isSome(deleted) } }
        })
      )
  })
)

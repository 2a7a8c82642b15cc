/**
 * `GET .../slack/channels` and `PUT .../slack/channels/{channel_id}/passive-listening`
 * (docs/interface.md: Organization endpoints, Resources "Chat channel"). Turning passive listening
 * on or off needs ADMIN and is audited; a channel Bosun is not in (or of another organization) is
 * 404.
 */
import { BosunApi, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { ChatChannelsRepo } from "./ChatChannelsRepo.ts"

export const ChatHttp = group(
  BosunApi,
  "chat",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const channels = yield* ChatChannelsRepo
    const audit = yield* AuditLog
    return handlers
      .handle("listChannels", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          return { data: yield* channels.list(params.organization_id) }
        })
      )
      .handle("setPassiveListening", ({ params, payload }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          const user = yield* CurrentUser
          const channel = yield* audit.audited(
            channels.setPassive(params.organization_id, params.channel_id, payload.enabled),
            () => ({
              organizationId: params.organization_id,
              actor: { kind: "user", userId: user.userId },
              action: payload.enabled ? "chat_channel.passive_on" : "chat_channel.passive_off",
              target: `chat_channel:${params.channel_id}`
            })
          )
          if (Option.isNone(channel)) {
            return yield* NotFound.fromCode(
              ErrorCodes.notFound,
              "Bosun is in no channel with this id in this organization"
            )
          }
          return { data: channel.value }
        })
      )
  })
)

/**
 * Slack channels of an organization (docs/interface.md: Resources "Chat channel"), always looked up
 * within the organization.
 */
import type { ChatChannel } from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

export class ChatChannelsRepo extends Context.Service<
  ChatChannelsRepo,
  {
    readonly list: (organizationId: string) => Effect.Effect<ReadonlyArray<ChatChannel>>
    readonly setPassive: (
      organizationId: string,
      channelId: string,
      enabled: boolean
    ) => Effect.Effect<Option.Option<ChatChannel>>
    /** Records a channel Bosun was added to (the Slack integration's write; tests use it too). */
    readonly upsert: (
      organizationId: string,
      channel: { readonly id: string; readonly name: string; readonly isPrivate: boolean }
    ) => Effect.Effect<ChatChannel>
    /**
     * The channel an event came from, recorded (its id as its name) when not known yet; a known
     * channel is left as it is. Answers it with its passive-listening switch.
     */
    readonly observe: (
      organizationId: string,
      channel: { readonly id: string; readonly isPrivate: boolean }
    ) => Effect.Effect<ChatChannel>
  }
>()("bosun/server/persistence/ChatChannelsRepo") {
  static readonly layer = Layer.effect(
    ChatChannelsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const columns = sql.literal("id, is_private, name, passive_enabled")
      return ChatChannelsRepo.of({
        list: Effect.fn("ChatChannelsRepo.list")(function* (organizationId: string) {
          return yield* sql<ChatChannel>`
            SELECT ${columns} FROM chat_channels WHERE organization_id = ${organizationId}
            ORDER BY lower(name), id`.pipe(Effect.orDie)
        }),
        setPassive: Effect.fn("ChatChannelsRepo.setPassive")(function* (
          organizationId: string,
          channelId: string,
          enabled: boolean
        ) {
          const [row] = yield* sql<ChatChannel>`
            UPDATE chat_channels SET passive_enabled = ${enabled}, updated_at = now()
            WHERE organization_id = ${organizationId} AND id = ${channelId}
            RETURNING ${columns}`.pipe(Effect.orDie)
          return Option.fromUndefinedOr(row)
        }),
        upsert: Effect.fn("ChatChannelsRepo.upsert")(function* (organizationId, channel) {
          const [row] = yield* sql<ChatChannel>`
            INSERT INTO chat_channels (organization_id, id, name, is_private)
            VALUES (${organizationId}, ${channel.id}, ${channel.name}, ${channel.isPrivate})
            ON CONFLICT (organization_id, id) DO UPDATE SET
              name = excluded.name, is_private = excluded.is_private, updated_at = now()
            RETURNING ${columns}`.pipe(Effect.orDie)
          if (row === undefined) return yield* Effect.die(new Error("channel upsert returned no row"))
          return row
        }),
        observe: Effect.fn("ChatChannelsRepo.observe")(function* (organizationId, channel) {
          const [row] = yield* sql<ChatChannel>`
            INSERT INTO chat_channels (organization_id, id, name, is_private)
            VALUES (${organizationId}, ${channel.id}, ${channel.id}, ${channel.isPrivate})
            ON CONFLICT (organization_id, id) DO UPDATE SET updated_at = chat_channels.updated_at
            RETURNING ${columns}`.pipe(Effect.orDie)
          if (row === undefined) return yield* Effect.die(new Error("channel observe returned no row"))
          return row
        })
      })
    })
  )
}

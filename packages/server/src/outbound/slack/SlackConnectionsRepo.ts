/**
 * An organization's Slack connection (`sql/0026_slack_and_effects.sql`): the bot token
 * and the signing secret sealed under the master key ring, bound to their row; only the Slack
 * client and the events route ever open them.
 */
import type { SlackConnection } from "@bosun/domain"
import { Context, Effect, Layer, Option, type Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Secrets, type SecretsError } from "../../platform/crypto/Secrets.ts"

const place = (organizationId: string, column: string) => ({
  table: "slack_connections",
  column,
  rowId: organizationId
})

export interface SlackConnectionInput {
  readonly teamId: string
  readonly teamName: string | null
  readonly botUserId: string
  readonly botToken: Redacted.Redacted<string>
  readonly signingSecret: Redacted.Redacted<string>
}

/** The organization a Slack team's events belong to, with what verifies them. */
export interface SlackEventsTarget {
  readonly organizationId: string
  readonly signingSecret: Redacted.Redacted<string>
  readonly botUserId: string
}

interface Row {
  readonly team_id: string
  readonly team_name: string | null
  readonly bot_user_id: string
  readonly created_at: Date
  readonly updated_at: Date
}

const toConnection = (row: Row): SlackConnection => ({
  team_id: row.team_id,
  team_name: row.team_name,
  bot_user_id: row.bot_user_id,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString()
})

export class SlackConnectionsRepo extends Context.Service<
  SlackConnectionsRepo,
  {
    /** Creates or replaces the connection; none when another organization has that team. */
    readonly upsert: (
      organizationId: string,
      input: SlackConnectionInput
    ) => Effect.Effect<Option.Option<SlackConnection>, SecretsError>
    readonly find: (organizationId: string) => Effect.Effect<Option.Option<SlackConnection>>
    readonly remove: (organizationId: string) => Effect.Effect<boolean>
    /** The opened bot token, for the Slack client. */
    readonly botToken: (organizationId: string) => Effect.Effect<Option.Option<Redacted.Redacted<string>>, SecretsError>
    readonly eventsTarget: (teamId: string) => Effect.Effect<Option.Option<SlackEventsTarget>, SecretsError>
    /**
     * Every connected workspace's signing secret: a `url_verification` request names no team, so
     * it is verified against each (one per connected organization).
     */
    readonly signingSecrets: () => Effect.Effect<ReadonlyArray<Redacted.Redacted<string>>, SecretsError>
  }
>()("bosun/server/persistence/SlackConnectionsRepo") {
  static readonly layer = Layer.effect(
    SlackConnectionsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets
      const columns = sql`team_id, team_name, bot_user_id, created_at, updated_at`

      const upsert = Effect.fn("SlackConnectionsRepo.upsert")(function* (
        organizationId: string,
        input: SlackConnectionInput
      ) {
        const botToken = yield* secrets.seal(input.botToken, place(organizationId, "bot_token"))
        const signingSecret = yield* secrets.seal(input.signingSecret, place(organizationId, "signing_secret"))
        // A team another organization holds is left alone: nothing is written (a race between two
        // organizations claiming one new team: the unique key refuses one, which dies as a 500).
        const rows = yield* sql<Row>`
          INSERT INTO slack_connections (organization_id, team_id, team_name, bot_user_id, bot_token, signing_secret)
          SELECT ${organizationId}, ${input.teamId}, ${input.teamName}, ${input.botUserId}, ${botToken}, ${signingSecret}
          WHERE NOT EXISTS (
            SELECT 1 FROM slack_connections WHERE team_id = ${input.teamId} AND organization_id <> ${organizationId})
          ON CONFLICT (organization_id) DO UPDATE SET
            team_id = excluded.team_id, team_name = excluded.team_name, bot_user_id = excluded.bot_user_id,
            bot_token = excluded.bot_token, signing_secret = excluded.signing_secret, updated_at = now()
          RETURNING ${columns}`.pipe(Effect.orDie)
        return Option.map(Option.fromNullishOr(rows[0]), toConnection)
      })

      const find = Effect.fn("SlackConnectionsRepo.find")(function* (organizationId: string) {
        const [row] = yield* sql<Row>`
          SELECT ${columns} FROM slack_connections WHERE organization_id = ${organizationId}`.pipe(Effect.orDie)
        return Option.map(Option.fromNullishOr(row), toConnection)
      })

      const remove = Effect.fn("SlackConnectionsRepo.remove")(function* (organizationId: string) {
        const rows = yield* sql<{ organization_id: string }>`
          DELETE FROM slack_connections WHERE organization_id = ${organizationId}
          RETURNING organization_id`.pipe(Effect.orDie)
        return rows.length > 0
      })

      const botToken = Effect.fn("SlackConnectionsRepo.botToken")(function* (organizationId: string) {
        const [row] = yield* sql<{ bot_token: Uint8Array }>`
          SELECT bot_token FROM slack_connections WHERE organization_id = ${organizationId}`.pipe(Effect.orDie)
        if (row === undefined) return Option.none()
        return Option.some(yield* secrets.open(row.bot_token, place(organizationId, "bot_token")))
      })

      const eventsTarget = Effect.fn("SlackConnectionsRepo.eventsTarget")(function* (teamId: string) {
        const [row] = yield* sql<{ organization_id: string; signing_secret: Uint8Array; bot_user_id: string }>`
          SELECT organization_id, signing_secret, bot_user_id FROM slack_connections
          WHERE team_id = ${teamId}`.pipe(Effect.orDie)
        if (row === undefined) return Option.none()
        const signingSecret = yield* secrets.open(row.signing_secret, place(row.organization_id, "signing_secret"))
        return Option.some({ organizationId: row.organization_id, signingSecret, botUserId: row.bot_user_id })
      })

      const signingSecrets = Effect.fn("SlackConnectionsRepo.signingSecrets")(function* () {
        const rows = yield* sql<{ organization_id: string; signing_secret: Uint8Array }>`
          SELECT organization_id, signing_secret FROM slack_connections ORDER BY organization_id`.pipe(Effect.orDie)
        return yield* Effect.forEach(rows, (row) =>
          secrets.open(row.signing_secret, place(row.organization_id, "signing_secret"))
        )
      })

      return SlackConnectionsRepo.of({ upsert, find, remove, botToken, eventsTarget, signingSecrets })
    })
  )
}

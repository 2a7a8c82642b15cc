/**
 * Connected-app connection requests (docs/interface.md: Organization endpoints
 * `composio/connections`): one row per member, organization and Composio toolkit, holding the
 * latest request's outcome — the Composio ids it produced, its status and when its connect link
 * expires. The link itself is a bearer URL and is never stored. Every query filters by the
 * organization; a member reads only their own rows.
 */
import type { ConnectedAppStatus } from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

export interface ComposioConnectionRequest {
  readonly userId: string
  readonly toolkitSlug: string
  readonly composioUserId: string
  readonly authConfigId: string | null
  readonly connectedAccountId: string | null
  readonly status: ConnectedAppStatus
  readonly redirectExpiresAt: Date | null
}

export interface ComposioConnection extends ComposioConnectionRequest {
  readonly id: string
  readonly organizationId: string
  readonly createdAt: Date
  readonly updatedAt: Date
}

interface Row {
  readonly id: string
  readonly organization_id: string
  readonly user_id: string
  readonly toolkit_slug: string
  readonly composio_user_id: string
  readonly composio_auth_config_id: string | null
  readonly composio_connected_account_id: string | null
  readonly status: ConnectedAppStatus
  readonly redirect_expires_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

const toConnection = (row: Row): ComposioConnection => ({
  id: row.id,
  organizationId: row.organization_id,
  userId: row.user_id,
  toolkitSlug: row.toolkit_slug,
  composioUserId: row.composio_user_id,
  authConfigId: row.composio_auth_config_id,
  connectedAccountId: row.composio_connected_account_id,
  status: row.status,
  redirectExpiresAt: row.redirect_expires_at,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

export class ComposioConnectionsRepo extends Context.Service<
  ComposioConnectionsRepo,
  {
    /** Records a request's outcome, replacing the member's previous one for the toolkit. */
    readonly record: (organizationId: string, request: ComposioConnectionRequest) => Effect.Effect<ComposioConnection>
    readonly find: (
      organizationId: string,
      userId: string,
      toolkitSlug: string
    ) => Effect.Effect<Option.Option<ComposioConnection>>
    /** The member's connections in the organization, by toolkit slug. */
    readonly listForMember: (organizationId: string, userId: string) => Effect.Effect<ReadonlyArray<ComposioConnection>>
  }
>()("bosun/server/persistence/ComposioConnectionsRepo") {
  static readonly layer = Layer.effect(
    ComposioConnectionsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const columns = sql.literal(
        `id, organization_id, user_id, toolkit_slug, composio_user_id, composio_auth_config_id,
         composio_connected_account_id, status, redirect_expires_at, created_at, updated_at`
      )
      return ComposioConnectionsRepo.of({
        record: Effect.fn("ComposioConnectionsRepo.record")(function* (
          organizationId: string,
          request: ComposioConnectionRequest
        ) {
          const [row] = yield* sql<Row>`
            INSERT INTO composio_connections (organization_id, user_id, toolkit_slug, composio_user_id,
                                              composio_auth_config_id, composio_connected_account_id, status,
                                              redirect_expires_at)
            VALUES (${organizationId}, ${request.userId}, ${request.toolkitSlug}, ${request.composioUserId},
                    ${request.authConfigId}, ${request.connectedAccountId}, ${request.status},
                    ${request.redirectExpiresAt?.toISOString() ?? null}::timestamptz)
            ON CONFLICT (organization_id, user_id, toolkit_slug) DO UPDATE SET
              composio_user_id = EXCLUDED.composio_user_id,
              composio_auth_config_id = EXCLUDED.composio_auth_config_id,
              composio_connected_account_id = EXCLUDED.composio_connected_account_id,
              status = EXCLUDED.status,
              redirect_expires_at = EXCLUDED.redirect_expires_at,
              updated_at = now()
            RETURNING ${columns}`.pipe(Effect.orDie)
          if (row === undefined) return yield* Effect.die(new Error("composio connection upsert returned no row"))
          return toConnection(row)
        }),
        find: Effect.fn("ComposioConnectionsRepo.find")(function* (
          organizationId: string,
          userId: string,
          toolkitSlug: string
        ) {
          const [row] = yield* sql<Row>`
            SELECT ${columns} FROM composio_connections
            WHERE organization_id = ${organizationId} AND user_id = ${userId} AND toolkit_slug = ${toolkitSlug}`.pipe(
            Effect.orDie
          )
          return Option.map(Option.fromUndefinedOr(row), toConnection)
        }),
        // Served by the unique (organization_id, user_id, toolkit_slug) index, in its order.
        listForMember: Effect.fn("ComposioConnectionsRepo.listForMember")(function* (
          organizationId: string,
          userId: string
        ) {
          const rows = yield* sql<Row>`
            SELECT ${columns} FROM composio_connections
            WHERE organization_id = ${organizationId} AND user_id = ${userId}
            ORDER BY toolkit_slug`.pipe(Effect.orDie)
          return rows.map(toConnection)
        })
      })
    })
  )
}

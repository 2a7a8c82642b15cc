/**
 * An organization's Linear connection (`sql/0025_linear.sql`): the webhook signing secret
 * and the API token sealed under the master key ring, bound to their row; only the webhook route
 * and the Linear client ever open them. An OAuth connection also keeps its refresh token and the
 * OAuth application's client secret sealed (`sql/0031_linear_oauth.sql`); a refresh rewrites the
 * token pair and its expiry in one statement.
 */
import type { LinearConnection } from "@bosun/domain"
import { Context, Effect, Layer, Option, type Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Secrets, type SecretsError } from "../../platform/crypto/Secrets.ts"

const place = (organizationId: string, column: string) => ({
  table: "linear_connections",
  column,
  rowId: organizationId
})

export interface LinearConnectionInput {
  readonly linearOrganizationId: string
  readonly webhookSecret: Redacted.Redacted<string>
  readonly accessToken: Option.Option<Redacted.Redacted<string>>
  readonly appUserId: string | null
  readonly appUserName: string | null
  /** What renews an expiring OAuth access token; none for an API key or a token that does not expire. */
  readonly oauth: Option.Option<LinearOAuthInput>
}

export interface LinearOAuthInput {
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string>
  readonly refreshToken: Redacted.Redacted<string>
  readonly expiresAt: Date
}

/** The opened token Bosun calls Linear with and, for an OAuth grant, what renews it. */
export interface LinearCredentials {
  readonly accessToken: Redacted.Redacted<string>
  readonly oauth: Option.Option<LinearOAuthInput>
}

/** A refresh's outcome: the new token pair (Linear rotates the refresh token) and its expiry. */
export interface LinearRefreshedTokens {
  readonly accessToken: Redacted.Redacted<string>
  readonly refreshToken: Redacted.Redacted<string>
  readonly expiresAt: Date
}

/** The organization whose Linear workspace a delivery names, with what verifies and places it. */
export interface LinearWebhookTarget {
  readonly organizationId: string
  readonly webhookSecret: Redacted.Redacted<string>
}

/** Who Bosun is in an organization's Linear workspace, for the inbox. */
export interface LinearIdentity {
  readonly appUserId: string | null
  readonly appUserName: string | null
}

interface Row {
  readonly linear_organization_id: string
  readonly app_user_id: string | null
  readonly app_user_name: string | null
  readonly has_access_token: boolean
  readonly refreshable: boolean
  readonly access_token_expires_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

const toConnection = (row: Row): LinearConnection => ({
  linear_organization_id: row.linear_organization_id,
  app_user_id: row.app_user_id,
  app_user_name: row.app_user_name,
  has_access_token: row.has_access_token,
  refreshable: row.refreshable,
  access_token_expires_at: row.access_token_expires_at?.toISOString() ?? null,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString()
})

export class LinearConnectionsRepo extends Context.Service<
  LinearConnectionsRepo,
  {
    /** Creates or replaces the connection; `Conflict` when another organization has that workspace. */
    readonly upsert: (
      organizationId: string,
      input: LinearConnectionInput
    ) => Effect.Effect<Option.Option<LinearConnection>, SecretsError>
    readonly find: (organizationId: string) => Effect.Effect<Option.Option<LinearConnection>>
    readonly remove: (organizationId: string) => Effect.Effect<boolean>
    readonly webhookTarget: (
      linearOrganizationId: string
    ) => Effect.Effect<Option.Option<LinearWebhookTarget>, SecretsError>
    readonly identity: (organizationId: string) => Effect.Effect<Option.Option<LinearIdentity>>
    /** The opened API token and refresh grant, for the Linear client; none without a connection or a token. */
    readonly credentials: (organizationId: string) => Effect.Effect<Option.Option<LinearCredentials>, SecretsError>
    /** Stores a refresh's new token pair; false when the connection is gone or no longer refreshable. */
    readonly storeRefreshed: (
      organizationId: string,
      tokens: LinearRefreshedTokens
    ) => Effect.Effect<boolean, SecretsError>
  }
>()("bosun/server/persistence/LinearConnectionsRepo") {
  static readonly layer = Layer.effect(
    LinearConnectionsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets
      const columns = sql`linear_organization_id, app_user_id, app_user_name, access_token IS NOT NULL AS has_access_token,
                          refresh_token IS NOT NULL AS refreshable, access_token_expires_at, created_at, updated_at`

      const upsert = Effect.fn("LinearConnectionsRepo.upsert")(function* (
        organizationId: string,
        input: LinearConnectionInput
      ) {
        const webhookSecret = yield* secrets.seal(input.webhookSecret, place(organizationId, "webhook_secret"))
        const accessToken = Option.isSome(input.accessToken)
          ? yield* secrets.seal(input.accessToken.value, place(organizationId, "access_token"))
          : null
        const oauth = Option.getOrUndefined(input.oauth)
        const refreshToken =
          oauth === undefined ? null : yield* secrets.seal(oauth.refreshToken, place(organizationId, "refresh_token"))
        const clientSecret =
          oauth === undefined
            ? null
            : yield* secrets.seal(oauth.clientSecret, place(organizationId, "oauth_client_secret"))
        // A workspace another organization holds is left alone: nothing is written. (Two
        // organizations claiming one new workspace at the same instant: the unique key refuses one.)
        const rows = yield* sql<Row>`
          INSERT INTO linear_connections
            (organization_id, linear_organization_id, webhook_secret, access_token, app_user_id, app_user_name,
             refresh_token, oauth_client_id, oauth_client_secret, access_token_expires_at)
          SELECT ${organizationId}, ${input.linearOrganizationId}, ${webhookSecret}, ${accessToken},
                 ${input.appUserId}, ${input.appUserName}, ${refreshToken}, ${oauth?.clientId ?? null},
                 ${clientSecret}, ${oauth?.expiresAt ?? null}
          WHERE NOT EXISTS (
            SELECT 1 FROM linear_connections
            WHERE linear_organization_id = ${input.linearOrganizationId} AND organization_id <> ${organizationId})
          ON CONFLICT (organization_id) DO UPDATE SET
            linear_organization_id = excluded.linear_organization_id, webhook_secret = excluded.webhook_secret,
            access_token = excluded.access_token, app_user_id = excluded.app_user_id,
            app_user_name = excluded.app_user_name, refresh_token = excluded.refresh_token,
            oauth_client_id = excluded.oauth_client_id, oauth_client_secret = excluded.oauth_client_secret,
            access_token_expires_at = excluded.access_token_expires_at, access_token_refreshed_at = NULL,
            updated_at = now()
          RETURNING ${columns}`.pipe(Effect.orDie)
        return Option.map(Option.fromNullishOr(rows[0]), toConnection)
      })

      const find = Effect.fn("LinearConnectionsRepo.find")(function* (organizationId: string) {
        const [row] = yield* sql<Row>`
          SELECT ${columns} FROM linear_connections WHERE organization_id = ${organizationId}`.pipe(Effect.orDie)
        return Option.map(Option.fromNullishOr(row), toConnection)
      })

      const remove = Effect.fn("LinearConnectionsRepo.remove")(function* (organizationId: string) {
        const rows = yield* sql<{ organization_id: string }>`
          DELETE FROM linear_connections WHERE organization_id = ${organizationId}
          RETURNING organization_id`.pipe(Effect.orDie)
        return rows.length > 0
      })

      const webhookTarget = Effect.fn("LinearConnectionsRepo.webhookTarget")(function* (linearOrganizationId: string) {
        const [row] = yield* sql<{ organization_id: string; webhook_secret: Uint8Array }>`
          SELECT organization_id, webhook_secret FROM linear_connections
          WHERE linear_organization_id = ${linearOrganizationId}`.pipe(Effect.orDie)
        if (row === undefined) return Option.none()
        const webhookSecret = yield* secrets.open(row.webhook_secret, place(row.organization_id, "webhook_secret"))
        return Option.some({ organizationId: row.organization_id, webhookSecret })
      })

      const identity = Effect.fn("LinearConnectionsRepo.identity")(function* (organizationId: string) {
        const [row] = yield* sql<{ app_user_id: string | null; app_user_name: string | null }>`
          SELECT app_user_id, app_user_name FROM linear_connections
          WHERE organization_id = ${organizationId}`.pipe(Effect.orDie)
        return Option.map(Option.fromNullishOr(row), (found) => ({
          appUserId: found.app_user_id,
          appUserName: found.app_user_name
        }))
      })

      const credentials = Effect.fn("LinearConnectionsRepo.credentials")(function* (organizationId: string) {
        const [row] = yield* sql<{
          access_token: Uint8Array | null
          refresh_token: Uint8Array | null
          oauth_client_id: string | null
          oauth_client_secret: Uint8Array | null
          access_token_expires_at: Date | null
        }>`
          SELECT access_token, refresh_token, oauth_client_id, oauth_client_secret, access_token_expires_at
          FROM linear_connections WHERE organization_id = ${organizationId}`.pipe(Effect.orDie)
        if (row === undefined || row.access_token === null) return Option.none()
        const accessToken = yield* secrets.open(row.access_token, place(organizationId, "access_token"))
        if (
          row.refresh_token === null ||
          row.oauth_client_id === null ||
          row.oauth_client_secret === null ||
          row.access_token_expires_at === null
        ) {
          return Option.some({ accessToken, oauth: Option.none() })
        }
        return Option.some({
          accessToken,
          oauth: Option.some({
            clientId: row.oauth_client_id,
            clientSecret: yield* secrets.open(row.oauth_client_secret, place(organizationId, "oauth_client_secret")),
            refreshToken: yield* secrets.open(row.refresh_token, place(organizationId, "refresh_token")),
            expiresAt: row.access_token_expires_at
          })
        })
      })

      const storeRefreshed = Effect.fn("LinearConnectionsRepo.storeRefreshed")(function* (
        organizationId: string,
        tokens: LinearRefreshedTokens
      ) {
        const accessToken = yield* secrets.seal(tokens.accessToken, place(organizationId, "access_token"))
        const refreshToken = yield* secrets.seal(tokens.refreshToken, place(organizationId, "refresh_token"))
        const rows = yield* sql<{ organization_id: string }>`
          UPDATE linear_connections
          SET access_token = ${accessToken}, refresh_token = ${refreshToken},
              access_token_expires_at = ${tokens.expiresAt}, access_token_refreshed_at = now(), updated_at = now()
          WHERE organization_id = ${organizationId} AND refresh_token IS NOT NULL
          RETURNING organization_id`.pipe(Effect.orDie)
        return rows.length > 0
      })

      return LinearConnectionsRepo.of({ upsert, find, remove, webhookTarget, identity, credentials, storeRefreshed })
    })
  )
}

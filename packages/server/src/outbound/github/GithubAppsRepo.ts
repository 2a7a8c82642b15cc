/**
 * The GitHub App configuration of each organization (docs/interface.md: Bootstrap-token endpoints,
 * Authentication 5). The three credentials are sealed here, bound to their row, and opened only for
 * the provider client that signs GitHub requests; they are never returned by the API.
 *
 * The webhook secrets are kept open for `BOSUN_WEBHOOK_SECRET_CACHE_TTL` because every delivery,
 * signed or forged, needs them: a read is one query and an unseal per App, and unauthenticated
 * senders must not be able to make the server do that at will. So they are read at most once per
 * TTL (one read at a time, concurrent callers share it); an App configured through this process
 * applies at once, one configured through another server within the TTL.
 */
import { Clock, Context, Duration, Effect, Exit, Layer, Option, type Redacted, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { Secrets, type SecretsError } from "../../platform/crypto/Secrets.ts"

export interface GithubAppCredentials {
  readonly githubAppId: number
  readonly slug: string
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string>
  readonly privateKey: Redacted.Redacted<string>
  readonly webhookSecret: Redacted.Redacted<string>
}

const place = (organizationId: string, column: string) => ({ table: "github_apps", column, rowId: organizationId })

/** An organization's App as the table names it, nothing opened. */
export interface GithubAppSummary {
  readonly organizationId: string
  readonly githubAppId: number
  readonly slug: string
}

export interface WebhookSecretCandidate {
  readonly organizationId: string
  /** The GitHub account the organization mirrors; null until its id is known. */
  readonly githubAccountId: number | null
  /** The login of that account, as the operator or GitHub gave it; null when nobody set one. */
  readonly githubLogin: string | null
  readonly webhookSecret: Redacted.Redacted<string>
}

export class GithubAppsRepo extends Context.Service<
  GithubAppsRepo,
  {
    /** Creates or replaces the organization's App configuration, sealing its credentials. */
    readonly upsert: (organizationId: string, app: GithubAppCredentials) => Effect.Effect<void>
    readonly find: (organizationId: string) => Effect.Effect<Option.Option<GithubAppCredentials>, SecretsError>
    /** The App's slug (what `@<slug>` mentions and `<slug>[bot]` name), without opening any secret. */
    readonly slug: (organizationId: string) => Effect.Effect<Option.Option<string>>
    /** The organizations that have an App configured, in id order. */
    readonly configuredOrganizations: Effect.Effect<ReadonlyArray<string>>
    /** Every configured App with its organization, in organization order, without opening any secret. */
    readonly summaries: Effect.Effect<ReadonlyArray<GithubAppSummary>>
    /**
     * The webhook secrets a delivery may be signed with: of the Apps with this GitHub App id (of
     * every App when the delivery does not say), with the GitHub account each organization mirrors.
     * Kept for the secret cache TTL (see the module header).
     */
    readonly webhookSecrets: (
      githubAppId: Option.Option<number>
    ) => Effect.Effect<ReadonlyArray<WebhookSecretCandidate>, SecretsError>
  }
>()("bosun/server/persistence/GithubAppsRepo") {
  static readonly layer = Layer.effect(
    GithubAppsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets
      // Keyed by the App id, 0 for every App. Each entry is one shared read (`Effect.cached`).
      const ttl = Duration.toMillis((yield* AppConfig).webhookSecretCacheTtl)
      const kept = new Map<
        number,
        { readonly at: number; readonly read: Effect.Effect<ReadonlyArray<WebhookSecretCandidate>, SecretsError> }
      >()

      const upsert = Effect.fn("GithubAppsRepo.upsert")(function* (organizationId: string, app: GithubAppCredentials) {
        const clientSecret = yield* secrets.seal(app.clientSecret, place(organizationId, "client_secret"))
        const privateKey = yield* secrets.seal(app.privateKey, place(organizationId, "private_key"))
        const webhookSecret = yield* secrets.seal(app.webhookSecret, place(organizationId, "webhook_secret"))
        yield* sql`
          INSERT INTO github_apps
            (organization_id, github_app_id, slug, client_id, client_secret, private_key, webhook_secret)
          VALUES (${organizationId}, ${app.githubAppId}, ${app.slug}, ${app.clientId},
                  ${clientSecret}, ${privateKey}, ${webhookSecret})
          ON CONFLICT (organization_id) DO UPDATE SET
            github_app_id = excluded.github_app_id, slug = excluded.slug, client_id = excluded.client_id,
            client_secret = excluded.client_secret, private_key = excluded.private_key,
            webhook_secret = excluded.webhook_secret, updated_at = now()`.pipe(Effect.orDie)
        kept.clear()
      })

      const find = Effect.fn("GithubAppsRepo.find")(function* (organizationId: string) {
        const [row] = yield* sql<{
          github_app_id: string
          slug: string
          client_id: string
          client_secret: Uint8Array
          private_key: Uint8Array
          webhook_secret: Uint8Array
        }>`
          SELECT github_app_id::text AS github_app_id, slug, client_id, client_secret, private_key, webhook_secret
          FROM github_apps WHERE organization_id = ${organizationId}`.pipe(Effect.orDie)
        if (row === undefined) return Option.none()
        return Option.some({
          githubAppId: Number(row.github_app_id),
          slug: row.slug,
          clientId: row.client_id,
          clientSecret: yield* secrets.open(row.client_secret, place(organizationId, "client_secret")),
          privateKey: yield* secrets.open(row.private_key, place(organizationId, "private_key")),
          webhookSecret: yield* secrets.open(row.webhook_secret, place(organizationId, "webhook_secret"))
        })
      })

      const slug = Effect.fn("GithubAppsRepo.slug")(function* (organizationId: string) {
        const [row] = yield* sql<{ slug: string }>`
          SELECT slug FROM github_apps WHERE organization_id = ${organizationId}`.pipe(Effect.orDie)
        return Option.map(Option.fromNullishOr(row), (found) => found.slug)
      })

      const configuredOrganizations = sql<{ organization_id: string }>`
        SELECT organization_id FROM github_apps ORDER BY organization_id`.pipe(
        Effect.map((rows) => rows.map((row) => row.organization_id)),
        Effect.orDie,
        Effect.withSpan("GithubAppsRepo.configuredOrganizations")
      )

      const summaries = sql<{ organization_id: string; github_app_id: string; slug: string }>`
        SELECT organization_id, github_app_id::text AS github_app_id, slug
        FROM github_apps ORDER BY organization_id`.pipe(
        Effect.map((rows) =>
          rows.map(
            (row): GithubAppSummary => ({
              organizationId: row.organization_id,
              githubAppId: Number(row.github_app_id),
              slug: row.slug
            })
          )
        ),
        Effect.orDie,
        Effect.withSpan("GithubAppsRepo.summaries")
      )

      const readWebhookSecrets = Effect.fn("GithubAppsRepo.readWebhookSecrets")(function* (
        githubAppId: Option.Option<number>
      ) {
        const rows = yield* sql<{
          organization_id: string
          github_account_id: string | null
          login: string | null
          webhook_secret: Uint8Array
        }>`
          SELECT a.organization_id, o.github_account_id::text AS github_account_id, o.login, a.webhook_secret
          FROM github_apps a JOIN organizations o ON o.id = a.organization_id
          ${Option.isSome(githubAppId) ? sql`WHERE a.github_app_id = ${githubAppId.value}` : sql``}
          ORDER BY a.organization_id`.pipe(Effect.orDie)
        return yield* Effect.forEach(rows, (row) =>
          Effect.map(
            secrets.open(row.webhook_secret, place(row.organization_id, "webhook_secret")),
            (webhookSecret): WebhookSecretCandidate => ({
              organizationId: row.organization_id,
              githubAccountId: row.github_account_id === null ? null : Number(row.github_account_id),
              githubLogin: row.login,
              webhookSecret
            })
          )
        )
      })

      // Deciding whether to read and recording the read is one step under this lock: fibers that
      // find the entry stale together must share one read, not start one each.
      const deciding = yield* Semaphore.make(1)
      const webhookSecrets = (githubAppId: Option.Option<number>) =>
        Effect.gen(function* () {
          const key = Option.getOrElse(githubAppId, () => 0)
          const entry = yield* deciding.withPermits(1)(
            Effect.gen(function* () {
              const now = yield* Clock.currentTimeMillis
              const found = kept.get(key)
              if (found !== undefined && now - found.at < ttl) return found
              const fresh = { at: now, read: yield* Effect.cached(readWebhookSecrets(githubAppId)) }
              kept.set(key, fresh)
              return fresh
            })
          )
          // A failed read is not kept: the next delivery tries again.
          return yield* Effect.onExit(entry.read, (exit) =>
            Effect.sync(() => {
              if (Exit.isFailure(exit) && kept.get(key) === entry) kept.delete(key)
            })
          )
        })

      return GithubAppsRepo.of({ upsert, find, slug, configuredOrganizations, summaries, webhookSecrets })
    })
  )
}

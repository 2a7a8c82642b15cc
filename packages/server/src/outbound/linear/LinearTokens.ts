/**
 * The token Bosun calls Linear with, renewed when it is an expiring OAuth grant (serialized by the
 * Mutex `tracker-token:{org}`; docs/interface.md: Coordinators, Mutex).
 *
 * Linear rotates the refresh token on every refresh: two runners refreshing at once would each
 * spend the same refresh token, and the loser's answer (or, worse, the winner's stored pair) would
 * be invalid. So a refresh runs only under the cluster-wide lock `tracker-token:{org}`, and the
 * holder first reads the row again: if another holder refreshed meanwhile, its token is used as
 * is. A token is refreshed `REFRESH_AHEAD` before it expires, and again whenever Linear refuses it
 * (revoked early) — but only when the token refused is still the stored one.
 *
 * The token endpoint is Linear's `POST /oauth/token` (form-encoded `grant_type=refresh_token`,
 * `refresh_token`, `client_id`, `client_secret`), on the host of `BOSUN_LINEAR_API_URL`. Tokens
 * and Linear's error bodies never reach a message; the OAuth error code (`invalid_grant`) does.
 */
import { withMutex } from "@bosun/actors/coordination/Mutex"
import { NodeHttpClient } from "@effect/platform-node"
import { Cause, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import type { Sharding } from "effect/cluster"
import { HttpClient, HttpClientRequest } from "effect/http"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { ProviderCallError } from "../ProviderCallError.ts"
import { LinearConnectionsRepo, type LinearCredentials, type LinearOAuthInput } from "./LinearConnectionsRepo.ts"

/** How long before its expiry an access token is renewed: no call should start with a token about to lapse. */
export const REFRESH_AHEAD = Duration.minutes(2)
const REQUEST_TIMEOUT = Duration.seconds(15)

/** Linear's token answer (RFC 6749 §5.1); `refresh_token` is absent when Linear keeps the old one. */
const TokenAnswer = Schema.Struct({
  access_token: Schema.String.check(Schema.isMinLength(1)),
  refresh_token: Schema.optional(Schema.String.check(Schema.isMinLength(1))),
  expires_in: Schema.Number.check(Schema.isGreaterThan(0))
})
const decodeTokenAnswer = Schema.decodeUnknownOption(Schema.fromJsonString(TokenAnswer))
const OAuthError = Schema.Struct({ error: Schema.String })
const decodeOAuthError = Schema.decodeUnknownOption(Schema.fromJsonString(OAuthError))

/** The token to call with, and whether Bosun can renew it when Linear refuses it. */
export interface LinearToken {
  readonly token: Redacted.Redacted<string>
  readonly refreshable: boolean
}

const failed = (reason: ProviderCallError["reason"], message: string, retryAfter?: Duration.Duration) =>
  new ProviderCallError({ provider: "linear", reason, message, retryAfter })

export class LinearTokens extends Context.Service<
  LinearTokens,
  {
    /** The organization's token, renewed first when it is an OAuth token about to expire. */
    readonly current: (organizationId: string) => Effect.Effect<LinearToken, ProviderCallError>
    /**
     * Renews the token after Linear refused `refused`; answers the stored token unchanged when
     * someone else renewed it meanwhile. Fails `Refused` for a token that cannot be renewed.
     */
    readonly renew: (
      organizationId: string,
      refused: Redacted.Redacted<string>
    ) => Effect.Effect<LinearToken, ProviderCallError>
  }
>()("bosun/server/providers/LinearTokens") {
  static readonly layer = Layer.effect(
    LinearTokens,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const connections = yield* LinearConnectionsRepo
      const http = yield* HttpClient.HttpClient
      // Captured once: the lock's entity lives on whichever runner holds its shard.
      const context = yield* Effect.context<Sharding.Sharding>()
      const tokenUrl = new URL("/oauth/token", config.linearApiUrl)

      const stored = (organizationId: string) =>
        connections.credentials(organizationId).pipe(
          Effect.mapError(() => failed("NotConnected", "The organization's Linear token could not be opened")),
          Effect.flatMap(
            Option.match({
              onNone: () =>
                Effect.fail(failed("NotConnected", "The organization's Linear connection has no access token")),
              onSome: Effect.succeed
            })
          )
        )

      const tokenOf = (credentials: LinearCredentials): LinearToken => ({
        token: credentials.accessToken,
        refreshable: Option.isSome(credentials.oauth)
      })

      const expiring = (credentials: LinearCredentials, now: number) =>
        Option.isSome(credentials.oauth) &&
        credentials.oauth.value.expiresAt.getTime() - Duration.toMillis(REFRESH_AHEAD) <= now

      /** One call to Linear's token endpoint with the stored grant; answers the new pair. */
      const exchange = (grant: LinearOAuthInput) =>
        http
          .execute(
            HttpClientRequest.post(tokenUrl).pipe(
              HttpClientRequest.acceptJson,
              HttpClientRequest.bodyUrlParams({
                grant_type: "refresh_token",
                refresh_token: Redacted.value(grant.refreshToken),
                client_id: grant.clientId,
                client_secret: Redacted.value(grant.clientSecret)
              })
            )
          )
          .pipe(
            Effect.flatMap((response) =>
              Effect.map(response.text, (text) => ({ status: response.status, headers: response.headers, text }))
            ),
            Effect.timeout(REQUEST_TIMEOUT),
            Effect.mapError((error) =>
              failed(
                "Unavailable",
                Cause.isTimeoutError(error)
                  ? "Linear token refresh: no answer in time"
                  : "Linear token refresh: unreachable"
              )
            ),
            Effect.flatMap(({ status, headers, text }) => {
              if (status === 429) {
                const seconds = Number(headers["retry-after"] ?? "1")
                return Effect.fail(
                  failed(
                    "RateLimited",
                    "Linear token refresh: rate limited",
                    Duration.seconds(Number.isFinite(seconds) && seconds > 0 ? seconds : 1)
                  )
                )
              }
              if (status >= 400 && status < 500) {
                const code = Option.match(decodeOAuthError(text), {
                  onNone: () => `HTTP ${status}`,
                  onSome: (error) => error.error.slice(0, 64)
                })
                return Effect.fail(
                  failed(
                    "Refused",
                    `Linear token refresh: refused (${code}); connect Linear again to grant a new token`
                  )
                )
              }
              if (status < 200 || status >= 300) {
                return Effect.fail(failed("Unavailable", `Linear token refresh: HTTP ${status}`))
              }
              return Option.match(decodeTokenAnswer(text), {
                onNone: () => Effect.fail(failed("Unavailable", "Linear token refresh: an unreadable answer")),
                onSome: (answer) =>
                  Effect.succeed({
                    accessToken: Redacted.make(answer.access_token),
                    refreshToken:
                      answer.refresh_token === undefined ? grant.refreshToken : Redacted.make(answer.refresh_token),
                    expiresAt: new Date(Date.now() + answer.expires_in * 1000)
                  })
              })
            })
          )

      /**
       * Under the lock: read the row again and renew unless `needed` no longer holds for what is
       * stored (another holder renewed it).
       */
      const renewLocked = (organizationId: string, needed: (credentials: LinearCredentials) => boolean) =>
        Effect.gen(function* () {
          const credentials = yield* stored(organizationId)
          if (!needed(credentials)) return tokenOf(credentials)
          if (Option.isNone(credentials.oauth)) {
            return yield* failed("Refused", "Linear refused the organization's token, and it cannot be renewed")
          }
          const renewed = yield* exchange(credentials.oauth.value)
          const kept = yield* connections
            .storeRefreshed(organizationId, renewed)
            .pipe(
              Effect.mapError(() => failed("Unavailable", "Linear token refresh: the new token could not be sealed"))
            )
          if (!kept) return yield* failed("NotConnected", "The organization's Linear connection changed meanwhile")
          yield* Effect.logInfo("linear_token_refreshed").pipe(
            Effect.annotateLogs({ org_id: organizationId, expires_at: renewed.expiresAt.toISOString() })
          )
          return { token: renewed.accessToken, refreshable: true }
        }).pipe(
          withMutex(`tracker-token:${organizationId}`, {
            holder: "linear-token-refresh",
            lease: Duration.seconds(30),
            wait: Duration.seconds(30)
          }),
          Effect.catchTags({
            MutexBusy: () =>
              Effect.fail(failed("Unavailable", "Linear token refresh: another refresh is still running")),
            MutexLeaseLost: () => Effect.fail(failed("Unavailable", "Linear token refresh: the refresh lock was lost"))
          }),
          Effect.provideContext(context)
        )

      const current = Effect.fn("LinearTokens.current")(function* (organizationId: string) {
        const credentials = yield* stored(organizationId)
        if (!expiring(credentials, Date.now())) return tokenOf(credentials)
        return yield* renewLocked(organizationId, (now) => expiring(now, Date.now()))
      })

      const renew = Effect.fn("LinearTokens.renew")(function* (
        organizationId: string,
        refused: Redacted.Redacted<string>
      ) {
        return yield* renewLocked(
          organizationId,
          (now) => Redacted.value(now.accessToken) === Redacted.value(refused) || expiring(now, Date.now())
        )
      })

      return LinearTokens.of({ current, renew })
    })
  ).pipe(Layer.provide(NodeHttpClient.layerUndici))
}

/**
 * The provider side of the UsageCache in production (docs/interface.md: Coordinators, UsageCache;
 * the `UsageSource` port of `@bosun/actors`): what a provider reports about the organization's own
 * key for it, read with that key from the organization's agent connection.
 *
 * Providers with a usage endpoint a key-holder may call:
 * - `openrouter`: `GET {BOSUN_OPENROUTER_API_URL}/key` (OpenRouter's documented "current API key"
 *   endpoint): `figures` is its `data` object — label, usage and limit in credits, limit_remaining,
 *   is_free_tier, rate_limit and whatever OpenRouter adds.
 * Every other provider answers NOT_REPORTED: OpenAI's and Anthropic's usage APIs need an
 * organization admin key, not the API key an agent runs with, and Bosun does not ask for one.
 *
 * Token refresh: the keys of an agent connection are API keys, with nothing to refresh, so
 * `refreshToken` answers NOT_REPORTED; AGENT_ONE's device sign-in tokens refresh in their own
 * AgentDeviceAuth entity, one refresh at a time per scope. The key is never logged or put in an
 * error; a provider's error body is not repeated either (it may echo the key's label).
 */
import { UsageLookupFailed, UsageSource } from "@bosun/actors/coordination/UsageCache"
import { NodeHttpClient } from "@effect/platform-node"
import { Cause, Duration, Effect, Layer, Option, Schema } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { AgentConnectionsRepo } from "./AgentConnectionsRepo.ts"

const REQUEST_TIMEOUT = Duration.seconds(10)

const OpenRouterKey = Schema.Struct({ data: Schema.Record(Schema.String, Schema.Unknown) })
const decodeOpenRouterKey = Schema.decodeUnknownOption(Schema.fromJsonString(OpenRouterKey))

/** The API key of a stored credential: OpenCode's `auth.json` shape, `{type: "api", key}`. */
const apiKeyOf = (credential: Readonly<Record<string, unknown>> | undefined) =>
  credential !== undefined && typeof credential.key === "string" && credential.key.length > 0
    ? Option.some(credential.key)
    : Option.none()

export const UsageSourceLive = Layer.effect(
  UsageSource,
  Effect.gen(function* () {
    const connections = yield* AgentConnectionsRepo
    const config = yield* AppConfig
    const http = yield* HttpClient.HttpClient

    const failed = (organizationId: string, provider: string, reason: UsageLookupFailed["reason"], message: string) =>
      new UsageLookupFailed({ organizationId, provider, reason, message })

    const openRouter = (organizationId: string, key: string) =>
      http
        .execute(
          HttpClientRequest.get(new URL("key", `${config.openRouterApiUrl.href.replace(/\/?$/, "/")}`)).pipe(
            HttpClientRequest.acceptJson,
            HttpClientRequest.bearerToken(key)
          )
        )
        .pipe(
          Effect.flatMap((response) => Effect.map(response.text, (text) => ({ status: response.status, text }))),
          Effect.timeout(REQUEST_TIMEOUT),
          Effect.mapError((error) =>
            failed(
              organizationId,
              "openrouter",
              "PROVIDER_ERROR",
              Cause.isTimeoutError(error) ? "OpenRouter did not answer in time" : "OpenRouter could not be reached"
            )
          ),
          Effect.flatMap(({ status, text }) => {
            if (status === 401 || status === 403) {
              return Effect.fail(
                failed(
                  organizationId,
                  "openrouter",
                  "PROVIDER_ERROR",
                  `OpenRouter refused the organization's key (${status})`
                )
              )
            }
            if (status < 200 || status >= 300) {
              return Effect.fail(
                failed(organizationId, "openrouter", "PROVIDER_ERROR", `OpenRouter answered ${status}`)
              )
            }
            return Option.match(decodeOpenRouterKey(text), {
              onNone: () =>
                Effect.fail(
                  failed(organizationId, "openrouter", "PROVIDER_ERROR", "OpenRouter gave an unreadable answer")
                ),
              onSome: (answer) => Effect.succeed(answer.data)
            })
          })
        )

    const lookup = Effect.fn("ProviderUsage.lookup")(function* (organizationId: string, provider: string) {
      if (provider !== "openrouter") {
        return yield* failed(organizationId, provider, "NOT_REPORTED", `Bosun reads no usage for provider ${provider}`)
      }
      const stored = yield* connections.credentials(organizationId, null)
      const key = Option.flatMap(stored, ({ credentials }) => apiKeyOf(credentials[provider]))
      if (Option.isNone(key)) {
        return yield* failed(
          organizationId,
          provider,
          "NO_CREDENTIAL",
          `The organization's agent connection has no API key for ${provider}`
        )
      }
      const fetchedAt = new Date().toISOString()
      const figures = yield* openRouter(organizationId, key.value)
      return { provider, fetched_at: fetchedAt, figures }
    })

    const refreshToken = Effect.fn("ProviderUsage.refreshToken")(function* (organizationId: string, provider: string) {
      return yield* failed(
        organizationId,
        provider,
        "NOT_REPORTED",
        `The agent connection holds an API key for ${provider}; there is no token to refresh`
      )
    })

    return UsageSource.of({ lookup, refreshToken })
  })
).pipe(Layer.provide(NodeHttpClient.layerUndici))

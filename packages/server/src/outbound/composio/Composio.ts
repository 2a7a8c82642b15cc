/**
 * Composio, for connected apps (docs/interface.md: Organization endpoints `composio/connections`),
 * through Composio's official client `@composio/client` against `BOSUN_COMPOSIO_API_URL`,
 * authenticated by `BOSUN_COMPOSIO_API_KEY` (header `x-api-key`). Of its `/api/v3.1` operations
 * Bosun uses `GET toolkits/{slug}` (exists? needs authentication?), `GET auth_configs` /
 * `POST auth_configs` (reuse or create the toolkit's Composio-managed auth config) and
 * `POST connected_accounts/link` (a hosted connect link for one user).
 *
 * Answers are decoded here (only the fields Bosun reads) rather than trusted from the client's
 * types, and failures keep only the operation and the HTTP status, since what Composio or the
 * client says may quote the request. The client gets an empty environment (`fromEnv({})`, so no
 * ambient `COMPOSIO_*` variable steers it), no logging of its own, one retry and 10 s per attempt,
 * so a member's request fails within seconds when Composio is down.
 */
import ComposioClient, { APIError } from "@composio/client"
import { Context, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { AppConfig } from "../../platform/config/AppConfig.ts"

export class ComposioError extends Data.TaggedError("ComposioError")<{
  /**
   * Unconfigured: no API key; CredentialsRejected: Composio answered 401/403 to the key;
   * ToolkitNotFound: no toolkit has the slug; ManagedAuthUnavailable: the toolkit needs
   * authentication that Composio does not manage and no auth config exists for it;
   * Unavailable: unreachable, timed out, 5xx or any other unexpected answer.
   */
  readonly reason: "Unconfigured" | "CredentialsRejected" | "ToolkitNotFound" | "ManagedAuthUnavailable" | "Unavailable"
  readonly message: string
}> {}

/** What a connection request came to at Composio. */
export type ComposioConnectOutcome =
  | { readonly _tag: "NoAuth" }
  | {
      readonly _tag: "AuthorizationRequired"
      readonly authConfigId: string
      readonly connectedAccountId: string
      readonly redirectUrl: string
      readonly expiresAt: Date
    }

const Timestamp = Schema.String.check(
  Schema.makeFilter((s: string) => (Number.isNaN(Date.parse(s)) ? "must be a timestamp" : undefined))
)

const Toolkit = Schema.Struct({
  slug: Schema.String,
  /** Not in the v3.1 single-toolkit answer today (the list has it); honoured when present. */
  no_auth: Schema.optional(Schema.Boolean),
  composio_managed_auth_schemes: Schema.optional(Schema.Array(Schema.String)),
  auth_config_details: Schema.optional(Schema.Array(Schema.Struct({ mode: Schema.String })))
})

const AuthConfigList = Schema.Struct({
  items: Schema.Array(
    Schema.Struct({
      id: Schema.String,
      status: Schema.String,
      is_composio_managed: Schema.optional(Schema.Boolean),
      toolkit: Schema.Struct({ slug: Schema.String })
    })
  )
})

const AuthConfigCreated = Schema.Struct({ auth_config: Schema.Struct({ id: Schema.String }) })

const LinkCreated = Schema.Struct({
  redirect_url: Schema.String,
  expires_at: Timestamp,
  connected_account_id: Schema.String
})

/**
 * A toolkit needs no authentication when Composio says so, or when it lists no authentication
 * mode but NO_AUTH: there is nothing to build an auth config from (`@composio/core`'s own
 * `toolkits.authorize` gives up on such a toolkit for the same reason).
 */
const needsNoAuth = (toolkit: typeof Toolkit.Type) =>
  toolkit.no_auth ?? (toolkit.auth_config_details ?? []).every((detail) => detail.mode.toUpperCase() === "NO_AUTH")

const statusOf = (cause: unknown) => (cause instanceof APIError ? cause.status : undefined)

/** The client for the configured API key; none when there is no key. */
const clientOf = (config: AppConfig["Service"]) =>
  Option.flatMap(config.composioApiKey, (key) =>
    Redacted.value(key) === ""
      ? Option.none()
      : Option.some(
          ComposioClient.fromEnv(
            {},
            {
              apiKey: Redacted.value(key),
              baseURL: config.composioApiUrl.href.replace(/\/$/, ""),
              maxRetries: 1,
              timeout: 10_000,
              logLevel: "off"
            }
          )
        )
  )

/** A failed call as a `ComposioError`: a status listed in `expected` as given there, else logged. */
const callFailed = (
  operation: string,
  status: number | undefined,
  expected: { readonly 400?: ComposioError; readonly 404?: ComposioError }
) => {
  const known = status === 400 ? expected[400] : status === 404 ? expected[404] : undefined
  if (known !== undefined) return Effect.fail(known)
  const rejected = status === 401 || status === 403
  return Effect.logWarning("composio_request_failed").pipe(
    Effect.annotateLogs({ operation, status: status ?? null }),
    Effect.andThen(
      Effect.fail(
        new ComposioError(
          rejected
            ? {
                reason: "CredentialsRejected",
                message: "Composio refused the configured API key: the operator must check BOSUN_COMPOSIO_API_KEY"
              }
            : {
                reason: "Unavailable",
                message:
                  status === undefined
                    ? `Composio could not be reached (${operation})`
                    : `Composio answered ${operation} with status ${status}`
              }
        )
      )
    )
  )
}

/**
 * One Composio call: the client's promise, interruptible, its answer decoded. Failures become
 * `ComposioError`s (a status listed in `expected` as given there) and every failure Bosun cannot
 * explain to the member is logged with its operation and status only.
 */
const callerOf =
  (client: Option.Option<ComposioClient>) =>
  <A>(
    operation: string,
    schema: Schema.Decoder<A>,
    send: (client: ComposioClient, signal: AbortSignal) => PromiseLike<unknown>,
    expected: { readonly 400?: ComposioError; readonly 404?: ComposioError } = {}
  ): Effect.Effect<A, ComposioError> =>
    Effect.gen(function* () {
      if (Option.isNone(client)) {
        return yield* new ComposioError({
          reason: "Unconfigured",
          message: "Connected apps are not configured: the operator must set BOSUN_COMPOSIO_API_KEY"
        })
      }
      const answer = yield* Effect.tryPromise({
        try: (signal) => send(client.value, signal),
        catch: (cause) => statusOf(cause)
      }).pipe(Effect.catch((status) => callFailed(operation, status, expected)))
      return yield* Schema.decodeUnknownEffect(schema)(answer).pipe(
        Effect.catchTag("SchemaError", () =>
          Effect.logWarning("composio_request_failed").pipe(
            Effect.annotateLogs({ operation, status: "malformed answer" }),
            Effect.andThen(
              Effect.fail(
                new ComposioError({
                  reason: "Unavailable",
                  message: `Composio answered ${operation} with something Bosun cannot read`
                })
              )
            )
          )
        )
      )
    })

type Call = ReturnType<typeof callerOf>

/** The three operations a connection needs: the toolkit, its managed auth config, a connect link. */
const connectionCalls = (call: Call) => {
  const retrieveToolkit = Effect.fn("Composio.retrieveToolkit")(function* (slug: string) {
    return yield* call("GET toolkits/{slug}", Toolkit, (c, signal) => c.toolkits.retrieve(slug, {}, { signal }), {
      404: new ComposioError({ reason: "ToolkitNotFound", message: "Composio has no toolkit with this slug" })
    })
  })

  /** The toolkit's enabled Composio-managed auth config, created when there is none yet. */
  const managedAuthConfig = Effect.fn("Composio.managedAuthConfig")(function* (toolkit: typeof Toolkit.Type) {
    const existing = yield* call("GET auth_configs", AuthConfigList, (c, signal) =>
      c.authConfigs.list({ toolkit_slug: toolkit.slug, is_composio_managed: true }, { signal })
    )
    const reusable = existing.items.find(
      (item) => item.toolkit.slug === toolkit.slug && item.status === "ENABLED" && item.is_composio_managed !== false
    )
    if (reusable !== undefined) return reusable.id
    const unmanaged = new ComposioError({
      reason: "ManagedAuthUnavailable",
      message:
        "Composio does not manage authentication for this toolkit: an auth config for it must be created in Composio first"
    })
    if ((toolkit.composio_managed_auth_schemes ?? []).length === 0) return yield* unmanaged
    const created = yield* call(
      "POST auth_configs",
      AuthConfigCreated,
      (c, signal) =>
        c.authConfigs.create(
          {
            toolkit: { slug: toolkit.slug },
            auth_config: { type: "use_composio_managed_auth", name: `Bosun ${toolkit.slug}` }
          },
          { signal }
        ),
      { 400: unmanaged }
    )
    return created.auth_config.id
  })

  const createLink = Effect.fn("Composio.createLink")(function* (request: {
    readonly authConfigId: string
    readonly userId: string
    readonly callbackUrl: string
  }) {
    return yield* call("POST connected_accounts/link", LinkCreated, (c, signal) =>
      c.link.create(
        { auth_config_id: request.authConfigId, user_id: request.userId, callback_url: request.callbackUrl },
        { signal }
      )
    )
  })

  return { retrieveToolkit, managedAuthConfig, createLink }
}

export class Composio extends Context.Service<
  Composio,
  {
    /**
     * Readies `toolkitSlug` for Composio user `userId`: nothing to do for a no-auth toolkit;
     * otherwise the toolkit's Composio-managed auth config (reused, or created the first time)
     * and a hosted connect link that returns the user to `callbackUrl`.
     */
    readonly connect: (request: {
      readonly toolkitSlug: string
      readonly userId: string
      readonly callbackUrl: string
    }) => Effect.Effect<ComposioConnectOutcome, ComposioError>
  }
>()("bosun/server/providers/Composio") {
  static readonly layer = Layer.effect(
    Composio,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const { retrieveToolkit, managedAuthConfig, createLink } = connectionCalls(callerOf(clientOf(config)))

      return Composio.of({
        connect: Effect.fn("Composio.connect")(function* ({ toolkitSlug, userId, callbackUrl }) {
          const toolkit = yield* retrieveToolkit(toolkitSlug)
          if (needsNoAuth(toolkit)) return { _tag: "NoAuth" } as const
          const authConfigId = yield* managedAuthConfig(toolkit)
          const link = yield* createLink({ authConfigId, userId, callbackUrl })
          return {
            _tag: "AuthorizationRequired",
            authConfigId,
            connectedAccountId: link.connected_account_id,
            redirectUrl: link.redirect_url,
            expiresAt: new Date(link.expires_at)
          } as const
        })
      })
    })
  )
}

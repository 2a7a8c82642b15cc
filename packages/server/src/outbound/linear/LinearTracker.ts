/**
 * Bosun's side of Linear's API (docs/interface.md: What the service does 3, 9): commenting on an
 * issue and moving it to a workflow state, through the official `@linear/sdk` client at
 * `BOSUN_LINEAR_API_URL`, with the organization's token (LinearTokens: opened per call, an expiring
 * OAuth token renewed first). A token that starts with `lin_api_` is a personal API key (sent as
 * is); anything else is an OAuth access token (sent as a bearer token). When Linear refuses an
 * OAuth token (revoked before its expiry), it is renewed and the call made once more.
 *
 * A comment is created with an id of Bosun's choosing, derived from the effect's idempotency key
 * (Linear accepts a client-chosen UUID on create), so a retry after a timeout first looks the
 * comment up by that id and never posts it twice (were it made meanwhile, Linear would refuse the
 * same id a second time anyway). The SDK's `RatelimitedLinearError` carries
 * Linear's `Retry-After`, which the effects consumer waits out (ProviderCallError).
 */
import { createHash } from "node:crypto"
import { LinearClient, LinearError, LinearErrorType, RatelimitedLinearError } from "@linear/sdk"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { ProviderCallError } from "../ProviderCallError.ts"
import { LinearTokens } from "./LinearTokens.ts"

/** A UUID (version 4 layout) determined by `key`: the id of the comment an effect creates. */
export const commentIdFor = (key: string): string => {
  const hex = createHash("sha256").update(`bosun-linear-comment:${key}`).digest("hex")
  const variant = ((Number.parseInt(hex.slice(16, 17), 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

const REFUSED: ReadonlySet<string> = new Set([
  LinearErrorType.AuthenticationError,
  LinearErrorType.Forbidden,
  LinearErrorType.InvalidInput,
  LinearErrorType.FeatureNotAccessible,
  LinearErrorType.UsageLimitExceeded,
  LinearErrorType.GraphqlError
])

/** Linear said the token is not (or no longer) good. */
const isAuthentication = (cause: unknown) =>
  cause instanceof LinearError && cause.type === LinearErrorType.AuthenticationError

const failure = (operation: string, cause: unknown): ProviderCallError => {
  if (cause instanceof RatelimitedLinearError) {
    const seconds = cause.retryAfter ?? 1
    return new ProviderCallError({
      provider: "linear",
      reason: "RateLimited",
      message: `Linear ${operation}: rate limited (Retry-After ${seconds} s)`,
      retryAfter: Duration.seconds(seconds)
    })
  }
  if (cause instanceof LinearError) {
    const type = cause.type ?? "unknown"
    return new ProviderCallError({
      provider: "linear",
      reason: REFUSED.has(type) ? "Refused" : "Unavailable",
      message: `Linear ${operation}: ${type}${cause.status === undefined ? "" : ` (HTTP ${cause.status})`}`
    })
  }
  return new ProviderCallError({
    provider: "linear",
    reason: "Unavailable",
    message: `Linear ${operation}: unreachable`
  })
}

export class LinearTracker extends Context.Service<
  LinearTracker,
  {
    /**
     * Comments on the issue once per `key` (with `lookFirst`, a comment made by an earlier call
     * is found by its id instead); answers the comment's id.
     */
    readonly comment: (
      organizationId: string,
      comment: { readonly issueId: string; readonly body: string; readonly key: string; readonly lookFirst: boolean }
    ) => Effect.Effect<string, ProviderCallError>
    /**
     * The Linear workspace the token belongs to (`organization { id name }`): what proves that an
     * organization connecting a workspace holds a credential of it.
     */
    readonly workspaceOf: (
      token: Redacted.Redacted<string>
    ) => Effect.Effect<{ readonly id: string; readonly name: string | null }, ProviderCallError>
    /** Moves the issue to the workflow state (idempotent: the same state twice is one change). */
    readonly setState: (
      organizationId: string,
      change: { readonly issueId: string; readonly stateId: string }
    ) => Effect.Effect<void, ProviderCallError>
  }
>()("bosun/server/providers/LinearTracker") {
  static readonly layer = Layer.effect(
    LinearTracker,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const tokens = yield* LinearTokens

      const clientWith = (token: Redacted.Redacted<string>) => {
        const value = Redacted.value(token)
        return new LinearClient({
          ...(value.startsWith("lin_api_") ? { apiKey: value } : { accessToken: value }),
          apiUrl: config.linearApiUrl.href
        })
      }

      /**
       * Runs `run` with a client for the organization's token; a refused OAuth token is renewed
       * and `run` tried once more with the new one.
       */
      const withClient = <A>(organizationId: string, operation: string, run: (client: LinearClient) => Promise<A>) =>
        Effect.gen(function* () {
          const first = yield* tokens.current(organizationId)
          const attempt = (token: Redacted.Redacted<string>) =>
            Effect.tryPromise({ try: () => run(clientWith(token)), catch: (cause) => cause })
          const answered = yield* Effect.result(attempt(first.token))
          if (answered._tag === "Success") return answered.success
          if (!(first.refreshable && isAuthentication(answered.failure))) {
            return yield* failure(operation, answered.failure)
          }
          const renewed = yield* tokens.renew(organizationId, first.token)
          return yield* attempt(renewed.token).pipe(Effect.mapError((cause) => failure(operation, cause)))
        })

      return LinearTracker.of({
        workspaceOf: Effect.fn("LinearTracker.workspaceOf")(function* (token: Redacted.Redacted<string>) {
          const answer = yield* Effect.tryPromise({
            try: () =>
              clientWith(token).client.rawRequest<
                { readonly organization?: { readonly id?: unknown; readonly name?: unknown } },
                Record<string, never>
              >("query BosunWorkspace { organization { id name } }"),
            catch: (cause) => failure("organization", cause)
          })
          const organization = answer.data?.organization
          if (typeof organization?.id !== "string" || organization.id.length === 0) {
            return yield* new ProviderCallError({
              provider: "linear",
              reason: "Refused",
              message: "Linear organization: the answer names no workspace"
            })
          }
          return { id: organization.id, name: typeof organization.name === "string" ? organization.name : null }
        }),
        comment: Effect.fn("LinearTracker.comment")(function* (
          organizationId: string,
          comment: {
            readonly issueId: string
            readonly body: string
            readonly key: string
            readonly lookFirst: boolean
          }
        ) {
          const id = commentIdFor(comment.key)
          if (comment.lookFirst) {
            const existing = yield* withClient(organizationId, "comments", (client) =>
              client.comments({ filter: { id: { eq: id } } })
            )
            if (existing.nodes.length > 0) return id
          }
          const created = yield* withClient(organizationId, "commentCreate", (client) =>
            client.createComment({ id, issueId: comment.issueId, body: comment.body })
          )
          if (!created.success) {
            return yield* new ProviderCallError({
              provider: "linear",
              reason: "Refused",
              message: "Linear commentCreate: not successful"
            })
          }
          return id
        }),
        setState: Effect.fn("LinearTracker.setState")(function* (
          organizationId: string,
          change: { readonly issueId: string; readonly stateId: string }
        ) {
          const updated = yield* withClient(organizationId, "issueUpdate", (client) =>
            client.updateIssue(change.issueId, { stateId: change.stateId })
          )
          if (!updated.success) {
            return yield* new ProviderCallError({
              provider: "linear",
              reason: "Refused",
              message: "Linear issueUpdate: not successful"
            })
          }
        })
      })
    })
  )
}

/**
 * How Bosun calls GitHub (REST and GraphQL) and what a failure means. Every call goes through
 * Octokit with GitHub's own plugins: `@octokit/plugin-throttling` paces writes and waits out
 * primary and secondary rate limits (`X-RateLimit-Reset`, `Retry-After`), `@octokit/plugin-retry`
 * retries 5xx and network failures with backoff (not a POST that creates something: its caller
 * looks for it first, then makes it again), `@octokit/plugin-paginate-rest` follows `Link`.
 *
 * A failure becomes a `GitHubAppError` whose reason says what to do with it: `Unavailable`
 * (unreachable, 5xx, 408) and `RateLimited` (a limit longer than Bosun waits within one call) are
 * worth calling again later; `Refused` (GraphQL errors, 400, 401, 403 that is not a rate limit,
 * 410, 422, 451) and `NotFound` are not. Messages quote GitHub's own text and the endpoint, never
 * the request: an Octokit error can quote the token.
 */
import { Octokit } from "@octokit/core"
import { paginateRest } from "@octokit/plugin-paginate-rest"
import { retry } from "@octokit/plugin-retry"
import { throttling } from "@octokit/plugin-throttling"
import Bottleneck from "bottleneck"
import { Context, Data, Duration, Effect, Layer, Redacted } from "effect"
import { AppConfig } from "../../platform/config/AppConfig.ts"

export class GitHubAppError extends Data.TaggedError("GitHubAppError")<{
  /**
   * NotConfigured: the organization has no App (or its private key does not sign);
   * NotInstalled: the App is not installed on the repository; NotFound: GitHub has no such
   * resource; Refused: GitHub answered that the request or the credentials are wrong (calling
   * again changes nothing); RateLimited: GitHub asked to wait longer than one call waits;
   * Unavailable: GitHub failed (5xx) or could not be reached.
   */
  readonly reason: "NotConfigured" | "NotInstalled" | "NotFound" | "Refused" | "RateLimited" | "Unavailable"
  readonly message: string
  /** GitHub's HTTP status, where GitHub answered (absent: not reached, or refused before any request). */
  readonly status?: number | undefined
  /** RateLimited: how long GitHub asked to wait. */
  readonly retryAfter?: Duration.Duration | undefined
}> {}

/** Whether calling GitHub again later may succeed. */
export const retryableGithubError = (error: GitHubAppError) =>
  error.reason === "Unavailable" || error.reason === "RateLimited"

export const BosunOctokit = Octokit.plugin(paginateRest, retry, throttling)
export type GitHubOctokit = InstanceType<typeof BosunOctokit>

export interface GitHubClientSettings {
  readonly apiUrl: URL
  /** The first wait of `@octokit/plugin-retry` (then 4x, 9x): GitHub's 5xx and network failures. */
  readonly retryBase: Duration.Duration
  /** Retries of one call after a 5xx or network failure. */
  readonly retries: number
  /**
   * GitHub's guidance: at least this long between two writes of one installation (three times
   * this between writes that notify people, as Octokit paces them).
   */
  readonly writeInterval: Duration.Duration
  /** The longest rate limit waited out within one call; a longer one fails it as RateLimited. */
  readonly maxRateLimitWait: Duration.Duration
}

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && key in value ? (value as Record<string, unknown>)[key] : undefined

/** The code or message of the connection failure under an Octokit error (`ECONNREFUSED`, a TLS error, ...). */
const connectionCause = (cause: unknown): string => {
  for (let current = cause, depth = 0; current !== undefined && depth < 5; current = field(current, "cause"), depth++) {
    const code = field(current, "code")
    if (typeof code === "string") {
      const message = field(current, "message")
      return typeof message === "string" && message.includes(code) ? message : code
    }
  }
  const message = field(cause, "message")
  return typeof message === "string" && message !== "" ? message : "connection failed"
}

/** The HTTP status an Octokit error carries, if any. */
export const statusOf = (cause: unknown) => {
  const status = field(cause, "status")
  return typeof status === "number" ? status : undefined
}

const header = (cause: unknown, name: string): string | undefined => {
  const value = field(field(field(cause, "response"), "headers"), name)
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : undefined
}

/** How long GitHub asked to wait, from `Retry-After` or `X-RateLimit-Reset`. */
const retryAfterOf = (cause: unknown): Duration.Duration | undefined => {
  const after = Number(header(cause, "retry-after"))
  if (Number.isFinite(after) && after > 0) return Duration.seconds(after)
  const reset = Number(header(cause, "x-ratelimit-reset"))
  if (Number.isFinite(reset) && reset > 0) return Duration.millis(Math.max(0, reset * 1000 - Date.now()) + 1000)
  return undefined
}

const isRateLimit = (cause: unknown, status: number, message: string) =>
  status === 429 || (status === 403 && (header(cause, "x-ratelimit-remaining") === "0" || /rate limit/i.test(message)))

/**
 * What a failed Octokit call means, for `endpoint` (`POST /pulls/{number}/reviews`, `GraphQL
 * reviewThreads`). Only GitHub's own message and status reach the error.
 */
export const githubFailure =
  (endpoint: string) =>
  (cause: unknown): GitHubAppError => {
    const errors = field(cause, "errors")
    if (field(cause, "name") === "GraphqlResponseError" && Array.isArray(errors)) {
      const text = errors
        .map((error) => field(error, "message"))
        .filter((message): message is string => typeof message === "string")
        .join("; ")
      return new GitHubAppError({
        reason: errors.some((error) => field(error, "type") === "NOT_FOUND") ? "NotFound" : "Refused",
        message: `GitHub ${endpoint} answered: ${text === "" ? "an error without a message" : text}`,
        status: 200
      })
    }
    const status = field(cause, "status")
    const rawMessage = field(cause, "message")
    const message = typeof rawMessage === "string" ? rawMessage : "no message"
    // The throttling plugin's own error for GraphQL's RATE_LIMITED, past the waits it allows.
    if (message === "GraphQL Rate Limit Exceeded") {
      return new GitHubAppError({ reason: "RateLimited", message: `GitHub ${endpoint} answered: ${message}` })
    }
    if (typeof status !== "number" || field(cause, "response") === undefined) {
      return new GitHubAppError({ reason: "Unavailable", message: `GitHub unreachable: ${connectionCause(cause)}` })
    }
    const said = `GitHub ${endpoint} answered ${status}: ${message}`
    if (isRateLimit(cause, status, message)) {
      return new GitHubAppError({ reason: "RateLimited", message: said, status, retryAfter: retryAfterOf(cause) })
    }
    if (status === 404) return new GitHubAppError({ reason: "NotFound", message: said, status })
    if (status === 408 || status >= 500) return new GitHubAppError({ reason: "Unavailable", message: said, status })
    return new GitHubAppError({ reason: "Refused", message: said, status })
  }

export class GitHubClient extends Context.Service<
  GitHubClient,
  {
    /**
     * Runs `call` with an Octokit of `key` (an installation, or an App) authenticated with `auth`
     * (an installation token or an App's JWT; none for public reads): GitHub's limits are counted
     * per key, so one busy installation does not slow the others down.
     */
    readonly call: <A>(
      key: string,
      endpoint: string,
      auth: Redacted.Redacted<string> | undefined,
      call: (octokit: GitHubOctokit, signal: AbortSignal) => Promise<A>
    ) => Effect.Effect<A, GitHubAppError>
  }
>()("bosun/server/providers/GitHubClient") {
  static readonly make = (settings: GitHubClientSettings, services: Context.Context<never> = Context.empty()) => {
    const log = Effect.runForkWith(services)
    // One write pacer for the process, keyed per installation by the throttle id.
    const write = new Bottleneck.Group({
      maxConcurrent: 1,
      minTime: Duration.toMillis(settings.writeInterval)
    })
    // Writes that notify people (reviews, comments) are paced three times wider, as Octokit does.
    const notifications = new Bottleneck.Group({
      maxConcurrent: 1,
      minTime: 3 * Duration.toMillis(settings.writeInterval)
    })
    const maxWait = Duration.toSeconds(settings.maxRateLimitWait)
    // The latest Octokit of each key, made again when its credentials change (tokens last an hour).
    const clients = new Map<string, { readonly auth: string | undefined; readonly octokit: GitHubOctokit }>()
    const octokitFor = (key: string, auth: string | undefined) => {
      const known = clients.get(key)
      if (known !== undefined && known.auth === auth) return known.octokit
      const waitOut =
        (kind: string) =>
        (retryAfter: number, options: { method: string; url: string }, _: unknown, retryCount: number) => {
          const wait = retryAfter <= maxWait && retryCount < 2
          log(
            Effect.logWarning(wait ? "github_rate_limited_waiting" : "github_rate_limited").pipe(
              Effect.annotateLogs({
                limit: kind,
                endpoint: `${options.method} ${options.url}`,
                retry_after_s: retryAfter
              })
            )
          )
          return wait
        }
      const octokit = new BosunOctokit({
        baseUrl: settings.apiUrl.href.replace(/\/$/, ""),
        userAgent: "bosun",
        ...(auth === undefined ? {} : { auth }),
        retry: {
          retries: settings.retries,
          retryAfterBaseValue: Duration.toMillis(settings.retryBase),
          // Rate limits (403, 429) are the throttling plugin's to wait out, as GitHub says; the rest
          // of these answers would only be repeated.
          doNotRetry: [400, 401, 403, 404, 410, 422, 429, 451]
        },
        throttle: {
          id: key,
          write,
          notifications,
          onRateLimit: waitOut("primary"),
          onSecondaryRateLimit: waitOut("secondary")
        }
      })
      // A POST creates something (a review, a comment, a check run, a pull request): GitHub may
      // have made it before answering 502 or losing the connection, so it is not repeated here —
      // the caller first looks for what it made (a marker, an external id, a branch), then makes
      // it. GraphQL (reads, and mutations that set a state) and the other methods are idempotent.
      octokit.hook.before("request", (options) => {
        if (options.method === "POST" && !/\/graphql$/.test(options.url)) {
          options.request = { ...options.request, retries: 0 }
        }
      })
      clients.set(key, { auth, octokit })
      return octokit
    }
    return GitHubClient.of({
      call: (key, endpoint, auth, call) =>
        Effect.tryPromise({
          try: (signal) => call(octokitFor(key, auth === undefined ? undefined : Redacted.value(auth)), signal),
          catch: githubFailure(endpoint)
        }).pipe(Effect.withSpan("GitHubClient.call", { attributes: { endpoint } }))
    })
  }

  static readonly layer = Layer.effect(
    GitHubClient,
    Effect.gen(function* () {
      const config = yield* AppConfig
      // Rate-limit waits are logged from Octokit's callbacks, with this layer's logger.
      const services = yield* Effect.context<never>()
      return GitHubClient.make({ apiUrl: config.githubApiUrl, ...config.github }, services)
    })
  )
}

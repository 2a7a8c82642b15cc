/**
 * GitHub, as the organization's GitHub App sees it (spec: Authentication 5; DESIGN: provider
 * clients): the App's JWT from its sealed private key (`@octokit/auth-app`), the installation
 * that reaches a repository, installation access tokens, and the REST reads Bosun makes with
 * them (`@octokit/request`), all against `BOSUN_GITHUB_API_URL` (GitHub Enterprise works the same).
 *
 * Installation tokens are cached sealed in the short-lived cache (Redis when configured, so every
 * replica shares them) until five minutes before GitHub says they expire: an envelope bound to
 * the organization and installation, so a value copied to another key does not open. A cached
 * token that no longer opens (the master key was rotated and the old one retired) is a miss.
 * Which installation reaches a repository is cached, unsealed, for ten minutes.
 */
import { createAppAuth } from "@octokit/auth-app"
import { request as octokitRequest } from "@octokit/request"
import { Context, Data, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { Secrets } from "../crypto/Secrets.ts"
import { GithubAppsRepo } from "../persistence/GithubAppsRepo.ts"
import { Cache } from "../storage/Cache.ts"

export class GitHubAppError extends Data.TaggedError("GitHubAppError")<{
  /**
   * NotConfigured: the organization has no App (or its private key does not sign);
   * NotInstalled: the App is not installed on the repository; NotFound: GitHub has no such
   * branch; Unavailable: GitHub failed or refused the App's credentials.
   */
  readonly reason: "NotConfigured" | "NotInstalled" | "NotFound" | "Unavailable"
  readonly message: string
  /** GitHub's HTTP status, where GitHub answered (absent: not reached, or refused before any request). */
  readonly status?: number | undefined
}> {}

export interface GithubRepositoryRef {
  readonly owner: string
  readonly name: string
}

/** Tokens are used until this long before GitHub's `expires_at`. */
const TOKEN_EXPIRY_MARGIN = Duration.minutes(5)
const INSTALLATION_TTL = Duration.minutes(10)

const CachedToken = Schema.fromJsonString(Schema.Struct({ token: Schema.String, expires_at: Schema.String }))
const decodeCachedToken = Schema.decodeUnknownOption(CachedToken)
const encodeCachedToken = Schema.encodeSync(CachedToken)

/** The HTTP status an Octokit error carries, if any. */
export const statusOf = (cause: unknown) =>
  typeof cause === "object" && cause !== null && "status" in cause && typeof cause.status === "number"
    ? cause.status
    : undefined

/** Only the status reaches the message: an Octokit error can quote the request, credentials included. */
export const unavailable = (what: string) => (cause: unknown) =>
  new GitHubAppError({
    reason: "Unavailable",
    message: `GitHub ${what} failed${statusOf(cause) === undefined ? "" : ` with status ${statusOf(cause)}`}`
  })

/** Whether GitHub answered at all: Octokit's error for a connection that failed carries no response. */
const answered = (cause: unknown) => typeof cause === "object" && cause !== null && "response" in cause

/** The code of the connection failure under an Octokit error (`ECONNREFUSED`, `ENOTFOUND`, ...). */
const connectionCode = (cause: unknown): string | undefined => {
  if (typeof cause !== "object" || cause === null) return undefined
  const code = "code" in cause && typeof cause.code === "string" ? cause.code : undefined
  return code ?? ("cause" in cause ? connectionCode(cause.cause) : undefined)
}

/** A failed call to `endpoint`: NotFound for GitHub's 404, else Unavailable with the status only. */
export const githubFailure = (endpoint: string) => (cause: unknown) => {
  const error = unavailable(endpoint)(cause)
  return statusOf(cause) === 404 ? new GitHubAppError({ reason: "NotFound", message: error.message }) : error
}

export class GitHubApp extends Context.Service<
  GitHubApp,
  {
    /** An installation access token of the App installation that reaches `repository`. */
    readonly installationToken: (
      organizationId: string,
      repository: GithubRepositoryRef
    ) => Effect.Effect<Redacted.Redacted<string>, GitHubAppError>
    /**
     * `GET /app` as the organization's App: GitHub's answer proves that the stored private key
     * signs for the stored App id (`bosun doctor`). Unavailable carries GitHub's status, or none
     * when GitHub was not reached.
     */
    readonly app: (
      organizationId: string
    ) => Effect.Effect<{ readonly id: number; readonly slug: string }, GitHubAppError>
    /** The commit SHA at the head of `branch` of `repository`. */
    readonly branchHead: (
      organizationId: string,
      repository: GithubRepositoryRef,
      branch: string
    ) => Effect.Effect<string, GitHubAppError>
  }
>()("bosun/server/providers/GitHubApp") {
  static readonly layer = Layer.effect(
    GitHubApp,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const apps = yield* GithubAppsRepo
      const secrets = yield* Secrets
      const cache = yield* Cache
      const request = octokitRequest.defaults({
        baseUrl: config.githubApiUrl.href.replace(/\/$/, ""),
        headers: { "user-agent": "bosun" }
      })

      const appJwt = Effect.fn("GitHubApp.appJwt")(function* (organizationId: string) {
        const app = yield* apps
          .find(organizationId)
          .pipe(
            Effect.mapError(
              () => new GitHubAppError({ reason: "NotConfigured", message: "The GitHub App's credentials do not open" })
            )
          )
        if (Option.isNone(app)) {
          return yield* new GitHubAppError({
            reason: "NotConfigured",
            message: "This organization has no GitHub App configured"
          })
        }
        const { githubAppId, privateKey } = app.value
        const { token } = yield* Effect.tryPromise({
          try: () =>
            createAppAuth({ appId: githubAppId, privateKey: Redacted.value(privateKey), request })({ type: "app" }),
          catch: () =>
            new GitHubAppError({
              reason: "NotConfigured",
              message: "The GitHub App's private key cannot sign a token; set it again with PUT .../github-app"
            })
        })
        return Redacted.make(token)
      })

      const asBearer = (jwt: Redacted.Redacted<string>) => ({ authorization: `bearer ${Redacted.value(jwt)}` })

      const installationId = Effect.fn("GitHubApp.installationId")(function* (
        organizationId: string,
        repository: GithubRepositoryRef
      ) {
        const key = `github:installation:${organizationId}:${repository.owner}/${repository.name}`
        const cached = yield* cache.get(key).pipe(Effect.orElseSucceed(() => Option.none<string>()))
        if (Option.isSome(cached)) return Number(cached.value)
        const jwt = yield* appJwt(organizationId)
        const { data } = yield* Effect.tryPromise({
          try: () =>
            request("GET /repos/{owner}/{repo}/installation", {
              owner: repository.owner,
              repo: repository.name,
              headers: asBearer(jwt)
            }),
          catch: (cause) =>
            statusOf(cause) === 404
              ? new GitHubAppError({
                  reason: "NotInstalled",
                  message: `The GitHub App is not installed on ${repository.owner}/${repository.name}`
                })
              : unavailable("GET /repos/{owner}/{repo}/installation")(cause)
        })
        yield* cache.set(key, String(data.id), INSTALLATION_TTL).pipe(Effect.ignore)
        return data.id
      })

      const installationToken = Effect.fn("GitHubApp.installationToken")(function* (
        organizationId: string,
        repository: GithubRepositoryRef
      ) {
        const installation = yield* installationId(organizationId, repository)
        const place = {
          table: "cache",
          column: "github_installation_token",
          rowId: `${organizationId}:${installation}`
        }
        const key = `github:installation-token:${organizationId}:${installation}`
        const cached = yield* cache.get(key).pipe(Effect.orElseSucceed(() => Option.none<string>()))
        if (Option.isSome(cached)) {
          const opened = yield* secrets.open(Buffer.from(cached.value, "base64"), place).pipe(Effect.option)
          const entry = Option.flatMap(opened, (plaintext) => decodeCachedToken(Redacted.value(plaintext)))
          if (Option.isSome(entry)) return Redacted.make(entry.value.token)
        }
        const jwt = yield* appJwt(organizationId)
        const { data } = yield* Effect.tryPromise({
          try: () =>
            request("POST /app/installations/{installation_id}/access_tokens", {
              installation_id: installation,
              headers: asBearer(jwt)
            }),
          catch: unavailable("POST /app/installations/{installation_id}/access_tokens")
        })
        const ttl = Duration.subtract(Duration.millis(Date.parse(data.expires_at) - Date.now()), TOKEN_EXPIRY_MARGIN)
        if (Duration.isGreaterThan(ttl, Duration.seconds(1))) {
          const sealed = yield* secrets.seal(
            Redacted.make(encodeCachedToken({ token: data.token, expires_at: data.expires_at })),
            place
          )
          yield* cache.set(key, Buffer.from(sealed).toString("base64"), ttl).pipe(Effect.ignore)
        }
        return Redacted.make(data.token)
      })

      const branchHead = Effect.fn("GitHubApp.branchHead")(function* (
        organizationId: string,
        repository: GithubRepositoryRef,
        branch: string
      ) {
        const token = yield* installationToken(organizationId, repository)
        const { data } = yield* Effect.tryPromise({
          try: () =>
            request("GET /repos/{owner}/{repo}/branches/{branch}", {
              owner: repository.owner,
              repo: repository.name,
              branch,
              headers: { authorization: `token ${Redacted.value(token)}` }
            }),
          catch: (cause) =>
            statusOf(cause) === 404
              ? new GitHubAppError({
                  reason: "NotFound",
                  message: `GitHub has no branch ${branch} in ${repository.owner}/${repository.name}`
                })
              : unavailable("GET /repos/{owner}/{repo}/branches/{branch}")(cause)
        })
        return data.commit.sha
      })

      const app = Effect.fn("GitHubApp.app")(function* (organizationId: string) {
        const jwt = yield* appJwt(organizationId)
        const { data } = yield* Effect.tryPromise({
          try: (signal) => request("GET /app", { headers: asBearer(jwt), request: { signal } }),
          catch: (cause) =>
            new GitHubAppError({
              reason: "Unavailable",
              message: answered(cause)
                ? unavailable("GET /app")(cause).message
                : `GitHub GET /app could not be reached (${connectionCode(cause) ?? "connection failed"})`,
              status: answered(cause) ? statusOf(cause) : undefined
            })
        })
        return { id: data?.id ?? 0, slug: data?.slug ?? "" }
      })

      return GitHubApp.of({ installationToken, branchHead, app })
    })
  )
}

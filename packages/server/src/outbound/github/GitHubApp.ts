/**
 * GitHub, as the organization's GitHub App sees it (docs/interface.md: Authentication 5;
 * Design rules): the App's JWT from its sealed private key (`@octokit/auth-app`), the installation
 * that reaches a repository, installation access tokens, and the REST reads Bosun makes with
 * them (GitHubClient: Octokit with GitHub's retry and throttling plugins), all against `BOSUN_GITHUB_API_URL` (GitHub Enterprise works the same).
 *
 * Installation tokens are cached sealed in the short-lived cache (Redis when configured, so every
 * replica shares them) until five minutes before GitHub says they expire: an envelope bound to
 * the organization and installation, so a value copied to another key does not open. A cached
 * token that no longer opens (the master key was rotated and the old one retired) is a miss.
 * Which installation reaches a repository is cached, unsealed, for ten minutes.
 */
import { createAppAuth } from "@octokit/auth-app"
import { request as octokitRequest } from "@octokit/request"
import { Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { Secrets } from "../../platform/crypto/Secrets.ts"
import { Cache } from "../../platform/storage/Cache.ts"
import { GitHubAppError, GitHubClient } from "./GitHubClient.ts"
import { GithubAppsRepo } from "./GithubAppsRepo.ts"

export interface GithubRepositoryRef {
  readonly owner: string
  readonly name: string
}

/** GitHub counts an App's own calls (as the App, with its JWT) apart from its installations'. */
const appKey = (organizationId: string) => `app:${organizationId}`
/** An installation covers one account: its rate limits and write pacing are counted per account. */
export const installationKey = (organizationId: string, repository: GithubRepositoryRef) =>
  `installation:${organizationId}:${repository.owner.toLowerCase()}`

/** Tokens are used until this long before GitHub's `expires_at`. */
const TOKEN_EXPIRY_MARGIN = Duration.minutes(5)
const INSTALLATION_TTL = Duration.minutes(10)

const CachedToken = Schema.fromJsonString(Schema.Struct({ token: Schema.String, expires_at: Schema.String }))
const decodeCachedToken = Schema.decodeUnknownOption(CachedToken)
const encodeCachedToken = Schema.encodeSync(CachedToken)

/** The App's own JWT, signed with the organization's stored private key. */
const appJwtOf = (config: AppConfig["Service"], apps: GithubAppsRepo["Service"]) => {
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
  return appJwt
}

type AppJwt = ReturnType<typeof appJwtOf>

/** The installation that reaches a repository and its access tokens, both cached. */
const installationTokens = (
  cache: Cache["Service"],
  secrets: Secrets["Service"],
  client: GitHubClient["Service"],
  appJwt: AppJwt
) => {
  const installationId = Effect.fn("GitHubApp.installationId")(function* (
    organizationId: string,
    repository: GithubRepositoryRef
  ) {
    const key = `github:installation:${organizationId}:${repository.owner}/${repository.name}`
    const cached = yield* cache.get(key).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    if (Option.isSome(cached)) return Number(cached.value)
    const jwt = yield* appJwt(organizationId)
    const { data } = yield* client
      .call(appKey(organizationId), "GET /repos/{owner}/{repo}/installation", jwt, (octokit, signal) =>
        octokit.request("GET /repos/{owner}/{repo}/installation", {
          owner: repository.owner,
          repo: repository.name,
          request: { signal }
        })
      )
      .pipe(
        Effect.mapError((error) =>
          error.reason === "NotFound"
            ? new GitHubAppError({
                reason: "NotInstalled",
                message: `The GitHub App is not installed on ${repository.owner}/${repository.name}`,
                status: 404
              })
            : error
        )
      )
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
    const { data } = yield* client.call(
      appKey(organizationId),
      "POST /app/installations/{installation_id}/access_tokens",
      jwt,
      (octokit, signal) =>
        octokit.request("POST /app/installations/{installation_id}/access_tokens", {
          installation_id: installation,
          request: { signal }
        })
    )
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
  return installationToken
}

/** Reads as the App (`GET /app`) and with an installation token (a branch's head). */
const repositoryReads = (
  client: GitHubClient["Service"],
  appJwt: AppJwt,
  installationToken: ReturnType<typeof installationTokens>
) => {
  const branchHead = Effect.fn("GitHubApp.branchHead")(function* (
    organizationId: string,
    repository: GithubRepositoryRef,
    branch: string
  ) {
    const token = yield* installationToken(organizationId, repository)
    const { data } = yield* client
      .call(
        installationKey(organizationId, repository),
        "GET /repos/{owner}/{repo}/branches/{branch}",
        token,
        (octokit, signal) =>
          octokit.request("GET /repos/{owner}/{repo}/branches/{branch}", {
            owner: repository.owner,
            repo: repository.name,
            branch,
            request: { signal }
          })
      )
      .pipe(
        Effect.mapError((error) =>
          error.reason === "NotFound"
            ? new GitHubAppError({
                reason: "NotFound",
                message: `GitHub has no branch ${branch} in ${repository.owner}/${repository.name}`,
                status: 404
              })
            : error
        )
      )
    return data.commit.sha
  })

  const app = Effect.fn("GitHubApp.app")(function* (organizationId: string) {
    const jwt = yield* appJwt(organizationId)
    const { data } = yield* client.call(appKey(organizationId), "GET /app", jwt, (octokit, signal) =>
      octokit.request("GET /app", { request: { signal } })
    )
    return { id: data?.id ?? 0, slug: data?.slug ?? "" }
  })
  return { branchHead, app }
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
      const client = yield* GitHubClient
      const appJwt = appJwtOf(config, apps)
      const installationToken = installationTokens(cache, secrets, client, appJwt)
      return GitHubApp.of({ installationToken, ...repositoryReads(client, appJwt, installationToken) })
    })
  ).pipe(Layer.provideMerge(GitHubClient.layer))
}

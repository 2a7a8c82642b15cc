/**
 * GitHub, as the user signing in sees it (login with the GitHub App's OAuth credentials). The web
 * flow's URL and code exchange use Octokit's `@octokit/oauth-methods`, the user's profile,
 * installations and organization role `@octokit/request`, all against `BOSUN_GITHUB_API_URL`
 * (github.com, or a GitHub Enterprise Server's `/api/v3`; the OAuth host is derived from it the way
 * Octokit does). User tokens stay `Redacted` and are never stored.
 */
import { exchangeWebFlowCode, getWebFlowAuthorizationUrl } from "@octokit/oauth-methods"
import { request as octokitRequest } from "@octokit/request"
import { Context, Data, Effect, Layer, Redacted } from "effect"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { statusOf } from "./GitHubClient.ts"

/** A GitHub user as sign-in reads them. */
export interface GithubUser {
  readonly githubUserId: number
  readonly login: string
  readonly name: string | null
  readonly avatarUrl: string | null
}

export class GitHubOAuthError extends Data.TaggedError("GitHubOAuthError")<{
  /** InvalidCode: GitHub refused the code (expired, reused, forged); Unavailable: anything else. */
  readonly reason: "InvalidCode" | "Unavailable"
  readonly message: string
}> {}

export interface GithubAccount {
  readonly id: number
  readonly login: string
  readonly type: "User" | "Organization"
}

export interface GithubInstallation {
  readonly id: number
  readonly account: GithubAccount
}

/** Only the status reaches the message: an Octokit error can quote the request, credentials included. */
const unavailable = (what: string) => (cause: unknown) =>
  new GitHubOAuthError({
    reason: "Unavailable",
    message: `GitHub ${what} failed${statusOf(cause) === undefined ? "" : ` with status ${statusOf(cause)}`}`
  })

export class GitHubOAuth extends Context.Service<
  GitHubOAuth,
  {
    readonly authorizationUrl: (options: {
      readonly clientId: string
      readonly redirectUrl: string
      readonly state: string
    }) => string
    readonly exchangeCode: (options: {
      readonly clientId: string
      readonly clientSecret: Redacted.Redacted<string>
      readonly code: string
      readonly redirectUrl: string
    }) => Effect.Effect<Redacted.Redacted<string>, GitHubOAuthError>
    readonly user: (token: Redacted.Redacted<string>) => Effect.Effect<GithubUser, GitHubOAuthError>
    /** The App's installations the user can reach (GET /user/installations). */
    readonly installations: (
      token: Redacted.Redacted<string>
    ) => Effect.Effect<ReadonlyArray<GithubInstallation>, GitHubOAuthError>
    /** The user's role in a GitHub organization, or undefined when GitHub does not say. */
    readonly organizationRole: (
      token: Redacted.Redacted<string>,
      organization: string
    ) => Effect.Effect<"admin" | "member" | undefined, GitHubOAuthError>
  }
>()("bosun/server/providers/GitHubOAuth") {
  static readonly layer = Layer.effect(
    GitHubOAuth,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const request = octokitRequest.defaults({
        baseUrl: config.githubApiUrl.href.replace(/\/$/, ""),
        headers: { "user-agent": "bosun" }
      })
      const asUser = (token: Redacted.Redacted<string>) => ({ authorization: `token ${Redacted.value(token)}` })

      return GitHubOAuth.of({
        authorizationUrl: ({ clientId, redirectUrl, state }) =>
          getWebFlowAuthorizationUrl({ clientType: "github-app", clientId, redirectUrl, state, request }).url,
        exchangeCode: Effect.fn("GitHubOAuth.exchangeCode")(function* (options) {
          const result = yield* Effect.tryPromise({
            try: () =>
              exchangeWebFlowCode({
                clientType: "github-app",
                clientId: options.clientId,
                clientSecret: Redacted.value(options.clientSecret),
                code: options.code,
                redirectUrl: options.redirectUrl,
                request
              }),
            catch: (cause) =>
              statusOf(cause) === 400
                ? new GitHubOAuthError({ reason: "InvalidCode", message: "GitHub refused the authorization code" })
                : unavailable("code exchange")(cause)
          })
          return Redacted.make(result.authentication.token)
        }),
        user: Effect.fn("GitHubOAuth.user")(function* (token) {
          const { data } = yield* Effect.tryPromise({
            try: () => request("GET /user", { headers: asUser(token) }),
            catch: unavailable("GET /user")
          })
          return {
            githubUserId: Number(data.id),
            login: data.login,
            name: data.name ?? null,
            avatarUrl: data.avatar_url === "" ? null : data.avatar_url
          }
        }),
        installations: Effect.fn("GitHubOAuth.installations")(function* (token) {
          const { data } = yield* Effect.tryPromise({
            try: () => request("GET /user/installations", { headers: asUser(token), per_page: 100 }),
            catch: unavailable("GET /user/installations")
          })
          return data.installations.flatMap((installation) => {
            const account = installation.account
            if (account === null || !("login" in account)) return []
            return [
              {
                id: installation.id,
                account: {
                  id: Number(account.id),
                  login: account.login,
                  type: account.type === "Organization" ? ("Organization" as const) : ("User" as const)
                }
              }
            ]
          })
        }),
        organizationRole: Effect.fn("GitHubOAuth.organizationRole")(function* (token, organization) {
          return yield* Effect.tryPromise({
            try: () => request("GET /user/memberships/orgs/{org}", { org: organization, headers: asUser(token) }),
            catch: (cause) => cause
          }).pipe(
            Effect.map(({ data }) =>
              data.state === "active" ? (data.role === "admin" ? ("admin" as const) : ("member" as const)) : undefined
            ),
            // 403/404: GitHub does not tell this user; they still reach the installation.
            Effect.catch((cause) =>
              statusOf(cause) === 403 || statusOf(cause) === 404
                ? Effect.succeed(undefined)
                : Effect.fail(unavailable("GET /user/memberships/orgs")(cause))
            )
          )
        })
      })
    })
  )
}

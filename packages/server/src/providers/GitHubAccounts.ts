/**
 * GitHub accounts by login (`GET /users/{username}`, public, no credentials): what an operator's
 * `bosun organizations link` resolves, so an organization records the account id it was set up
 * for before any installation names one. It reads nothing else about the account.
 */
import { request as octokitRequest } from "@octokit/request"
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { type GitHubAppError, statusOf, unavailable } from "./GitHubApp.ts"

export interface GithubAccount {
  readonly id: number
  readonly login: string
  readonly type: string
}

export class GitHubAccounts extends Context.Service<
  GitHubAccounts,
  {
    /** The account with this login (GitHub compares logins case-insensitively); none for GitHub's 404. */
    readonly byLogin: (login: string) => Effect.Effect<Option.Option<GithubAccount>, GitHubAppError>
  }
>()("bosun/server/providers/GitHubAccounts") {
  static readonly layer = Layer.effect(
    GitHubAccounts,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const request = octokitRequest.defaults({
        baseUrl: config.githubApiUrl.href.replace(/\/$/, ""),
        headers: { "user-agent": "bosun" }
      })
      const byLogin = Effect.fn("GitHubAccounts.byLogin")(function* (login: string) {
        return yield* Effect.tryPromise({
          try: (signal) => request("GET /users/{username}", { username: login, request: { signal } }),
          catch: (cause) => cause
        }).pipe(
          // Account ids are far below 2^53; the description types them as number | bigint.
          Effect.map(({ data }) =>
            Option.some<GithubAccount>({ id: Number(data.id), login: data.login, type: data.type })
          ),
          Effect.catch((cause) =>
            statusOf(cause) === 404
              ? Effect.succeed(Option.none<GithubAccount>())
              : Effect.fail(unavailable("GET /users/{username}")(cause))
          )
        )
      })
      return GitHubAccounts.of({ byLogin })
    })
  )
}

/**
 * GitHub accounts by login (`GET /users/{username}`, public, no credentials): what an operator's
 * `bosun organizations link` resolves, so an organization records the account id it was set up
 * for before any installation names one. It reads nothing else about the account.
 */
import { Context, Effect, Layer, Option } from "effect"
import { type GitHubAppError, GitHubClient } from "./GitHubClient.ts"

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
      const client = yield* GitHubClient
      const byLogin = Effect.fn("GitHubAccounts.byLogin")(function* (login: string) {
        return yield* client
          .call("public", "GET /users/{username}", undefined, (octokit, signal) =>
            octokit.request("GET /users/{username}", { username: login, request: { signal } })
          )
          .pipe(
            // Account ids are far below 2^53; the description types them as number | bigint.
            Effect.map(({ data }) =>
              Option.some<GithubAccount>({ id: Number(data.id), login: data.login, type: data.type })
            ),
            Effect.catch((error) =>
              error.reason === "NotFound" ? Effect.succeed(Option.none<GithubAccount>()) : Effect.fail(error)
            )
          )
      })
      return GitHubAccounts.of({ byLogin })
    })
  ).pipe(Layer.provide(GitHubClient.layer))
}

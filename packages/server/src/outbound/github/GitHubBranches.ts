/**
 * Opening a pull request from a change Bosun made (draft or ready per issue_pull_request_mode): the
 * base files of the change (contents), one commit of the new files on the base through GitHub's Git
 * Data API (a tree over the base's tree, a commit), the branch pointed at it, and the pull
 * request — each call with the installation token `GitHubApp` mints for the repository, through
 * GitHubClient (Octokit with GitHub's retry and throttling plugins) at `BOSUN_GITHUB_API_URL`.
 * Nothing is pushed from the sandbox: the agent's workspace never holds a token that can write.
 *
 * Errors carry the endpoint and GitHub's status and nothing of the request (GitHubAppError).
 */
import { Context, Effect, Layer, Option } from "effect"
import { GitHubApp, type GithubRepositoryRef, installationKey } from "./GitHubApp.ts"
import { type GitHubAppError, GitHubClient, type GitHubOctokit } from "./GitHubClient.ts"

export interface RepositoryOf {
  readonly organizationId: string
  readonly repository: GithubRepositoryRef
}

/** A file of the commit: its new text, or null to delete it. */
export interface CommitFile {
  readonly path: string
  readonly content: string | null
  readonly mode: "100644" | "100755"
}

export interface OpenedPull {
  readonly number: number
  readonly url: string
}

export class GitHubBranches extends Context.Service<
  GitHubBranches,
  {
    /** The text of `path` at `ref`; none when the file does not exist there. */
    readonly fileAt: (
      at: RepositoryOf,
      path: string,
      ref: string
    ) => Effect.Effect<Option.Option<string>, GitHubAppError>
    /** One commit of `files` on `base`; answers its SHA. */
    readonly commit: (
      at: RepositoryOf,
      change: { readonly base: string; readonly message: string; readonly files: ReadonlyArray<CommitFile> }
    ) => Effect.Effect<string, GitHubAppError>
    /** Points `branch` at `sha`, creating it or moving it (force: the branch is Bosun's own). */
    readonly pointBranch: (at: RepositoryOf, branch: string, sha: string) => Effect.Effect<void, GitHubAppError>
    /** The pull request whose head is `branch` (any state), if there is one. */
    readonly findPull: (at: RepositoryOf, branch: string) => Effect.Effect<Option.Option<OpenedPull>, GitHubAppError>
    readonly openPull: (
      at: RepositoryOf,
      pull: {
        readonly title: string
        readonly body: string
        readonly head: string
        readonly base: string
        readonly draft: boolean
      }
    ) => Effect.Effect<OpenedPull, GitHubAppError>
  }
>()("bosun/server/providers/GitHubBranches") {
  static readonly layer = Layer.effect(
    GitHubBranches,
    Effect.gen(function* () {
      const app = yield* GitHubApp
      const client = yield* GitHubClient

      const withToken = <A>(
        at: RepositoryOf,
        endpoint: string,
        call: (
          request: GitHubOctokit["request"],
          options: { readonly request: { readonly signal: AbortSignal } }
        ) => Promise<A>
      ) =>
        Effect.flatMap(app.installationToken(at.organizationId, at.repository), (token) =>
          client.call(installationKey(at.organizationId, at.repository), endpoint, token, (octokit, signal) =>
            call(octokit.request, { request: { signal } })
          )
        )

      const repo = (at: RepositoryOf) => ({ owner: at.repository.owner, repo: at.repository.name })

      const fileAt = Effect.fn("GitHubBranches.fileAt")(function* (at: RepositoryOf, path: string, ref: string) {
        const found = yield* withToken(at, "GET /contents/{path}", (request, signal) =>
          request("GET /repos/{owner}/{repo}/contents/{path}", { ...repo(at), path, ref, ...signal })
        ).pipe(
          Effect.map(Option.some),
          Effect.catchIf(
            (error) => error.reason === "NotFound",
            () => Effect.succeed(Option.none())
          )
        )
        if (Option.isNone(found)) return Option.none()
        const data = found.value.data
        if (Array.isArray(data) || data.type !== "file" || !("content" in data)) return Option.none()
        return Option.some(Buffer.from(data.content, "base64").toString("utf8"))
      })

      const commit = Effect.fn("GitHubBranches.commit")(function* (
        at: RepositoryOf,
        change: { readonly base: string; readonly message: string; readonly files: ReadonlyArray<CommitFile> }
      ) {
        const base = yield* withToken(at, "GET /git/commits/{sha}", (request, signal) =>
          request("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", {
            ...repo(at),
            commit_sha: change.base,
            ...signal
          })
        )
        const tree = yield* withToken(at, "POST /git/trees", (request, signal) =>
          request("POST /repos/{owner}/{repo}/git/trees", {
            ...repo(at),
            base_tree: base.data.tree.sha,
            tree: change.files.map((file) =>
              file.content === null
                ? { path: file.path, mode: file.mode, type: "blob" as const, sha: null }
                : { path: file.path, mode: file.mode, type: "blob" as const, content: file.content }
            ),
            ...signal
          })
        )
        const created = yield* withToken(at, "POST /git/commits", (request, signal) =>
          request("POST /repos/{owner}/{repo}/git/commits", {
            ...repo(at),
            message: change.message,
            tree: tree.data.sha,
            parents: [change.base],
            ...signal
          })
        )
        return created.data.sha
      })

      const pointBranch = Effect.fn("GitHubBranches.pointBranch")(function* (
        at: RepositoryOf,
        branch: string,
        sha: string
      ) {
        const existing = yield* withToken(at, "GET /git/ref/{ref}", (request, signal) =>
          request("GET /repos/{owner}/{repo}/git/ref/{ref}", { ...repo(at), ref: `heads/${branch}`, ...signal })
        ).pipe(
          Effect.as(true),
          Effect.catchIf(
            (error) => error.reason === "NotFound",
            () => Effect.succeed(false)
          )
        )
        if (existing) {
          yield* withToken(at, "PATCH /git/refs/{ref}", (request, signal) =>
            request("PATCH /repos/{owner}/{repo}/git/refs/{ref}", {
              ...repo(at),
              ref: `heads/${branch}`,
              sha,
              force: true,
              ...signal
            })
          )
        } else {
          yield* withToken(at, "POST /git/refs", (request, signal) =>
            request("POST /repos/{owner}/{repo}/git/refs", { ...repo(at), ref: `refs/heads/${branch}`, sha, ...signal })
          )
        }
      })

      const findPull = Effect.fn("GitHubBranches.findPull")(function* (at: RepositoryOf, branch: string) {
        const { data } = yield* withToken(at, "GET /pulls", (request, signal) =>
          request("GET /repos/{owner}/{repo}/pulls", {
            ...repo(at),
            head: `${at.repository.owner}:${branch}`,
            state: "all",
            ...signal
          })
        )
        const [pull] = data
        return pull === undefined ? Option.none() : Option.some({ number: pull.number, url: pull.html_url })
      })

      const openPull = Effect.fn("GitHubBranches.openPull")(function* (
        at: RepositoryOf,
        pull: {
          readonly title: string
          readonly body: string
          readonly head: string
          readonly base: string
          readonly draft: boolean
        }
      ) {
        const { data } = yield* withToken(at, "POST /pulls", (request, signal) =>
          request("POST /repos/{owner}/{repo}/pulls", { ...repo(at), ...pull, ...signal })
        )
        return { number: data.number, url: data.html_url }
      })

      return GitHubBranches.of({ fileAt, commit, pointBranch, findPull, openPull })
    })
  )
}

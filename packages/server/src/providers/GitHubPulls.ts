/**
 * The pull-request side of the GitHub App (issue 8: the review run's inputs and what publish
 * posts; spec: What the service does 1, 9): a pull request's changed files, the review with its
 * inline comments, the review threads (GraphQL, the only API that resolves one), check runs that
 * say why a review failed, the description section, and replies — each call made with the
 * installation token `GitHubApp` mints for the repository, through the official `@octokit/request`
 * and `@octokit/graphql` clients at `BOSUN_GITHUB_API_URL` (on GitHub Enterprise, `…/api/v3` for
 * REST and `…/api/graphql`, which `@octokit/graphql` derives from it).
 *
 * Errors carry the endpoint and GitHub's status and nothing of the request: a failed attempt's
 * check run quotes them, and Octokit's own errors can quote the token.
 */
import { graphql as octokitGraphql } from "@octokit/graphql"
import { request as octokitRequest } from "@octokit/request"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import type { ChangedFile } from "../review/ReviewPlan.ts"
import { GitHubApp, GitHubAppError, type GithubRepositoryRef, githubFailure } from "./GitHubApp.ts"

export interface PullRef {
  readonly organizationId: string
  readonly repository: GithubRepositoryRef
  readonly number: number
}

export interface PullDetails {
  readonly title: string
  readonly headSha: string
  readonly baseSha: string
  readonly body: string
  readonly draft: boolean
  readonly state: "open" | "closed"
  /** How many files the pull request changes, as GitHub counts them. */
  readonly changedFiles: number
}

/** An inline comment of a review: `line` (and `startLine` for a range) on `side` of the diff. */
export interface ReviewCommentDraft {
  readonly path: string
  readonly body: string
  readonly line: number
  readonly side: "LEFT" | "RIGHT"
  readonly startLine?: number | undefined
}

export interface PostedReviewComment {
  readonly id: number
  readonly path: string
  readonly line: number | null
  readonly body: string
}

export interface ReviewThread {
  readonly id: string
  readonly isResolved: boolean
  /** REST ids of the thread's comments, first the one that opened it. */
  readonly commentIds: ReadonlyArray<number>
}

export interface CheckRunDraft {
  readonly name: string
  readonly headSha: string
  readonly conclusion: "success" | "failure" | "neutral" | "action_required"
  readonly title: string
  readonly summary: string
  /** Ours: the run it reports on, so a retry finds the check run it already created. */
  readonly externalId: string
}

/** GitHub lists at most 3,000 files of a pull request, 100 a page. */
const FILES_PAGE = 100
const MAX_FILE_PAGES = 30
const REVIEWS_PAGE = 100
const COMPARE_FILE_LIMIT = 300

const failed = githubFailure

interface ThreadsPage {
  readonly repository: {
    readonly pullRequest: {
      readonly reviewThreads: {
        readonly pageInfo: { readonly hasNextPage: boolean; readonly endCursor: string | null }
        readonly nodes: ReadonlyArray<{
          readonly id: string
          readonly isResolved: boolean
          /** `fullDatabaseId` is GitHub's `BigInt` scalar, a decimal string in JSON. */
          readonly comments: { readonly nodes: ReadonlyArray<{ readonly fullDatabaseId: string | null }> }
        }>
      }
    } | null
  } | null
}

/**
 * A comment's id from `fullDatabaseId`: GitHub deprecates the 32-bit `databaseId`, which cannot
 * hold the ids github.com issues now (above 2^31). REST carries the same ids as JSON numbers, exact
 * in JavaScript below 2^53, so that is the bound kept here too; anything else is no id.
 */
const commentIdOf = (fullDatabaseId: string | null): number | undefined => {
  if (fullDatabaseId === null || !/^\d{1,19}$/.test(fullDatabaseId)) return undefined
  const id = BigInt(fullDatabaseId)
  return id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : undefined
}

const THREADS_QUERY = `query ($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { id isResolved comments(first: 1) { nodes { fullDatabaseId } } }
      }
    }
  }
}`

const RESOLVE_MUTATION = `mutation ($threadId: ID!) {
  resolveReviewThread(input: { threadId: $threadId }) { thread { id isResolved } }
}`

export class GitHubPulls extends Context.Service<
  GitHubPulls,
  {
    readonly details: (pr: PullRef) => Effect.Effect<PullDetails, GitHubAppError>
    /** Every changed file with its patch (GitHub omits the patch of binary and very large files). */
    readonly files: (pr: PullRef) => Effect.Effect<ReadonlyArray<ChangedFile>, GitHubAppError>
    /**
     * The paths `head` changed since `base` (compare `base...head`, GitHub's three-dot form: what a
     * push added to the pull request). NotFound when GitHub no longer has `base` (a force push);
     * Unavailable when the comparison is longer than the 300 files GitHub lists.
     */
    readonly changedPaths: (
      pr: PullRef,
      base: string,
      head: string
    ) => Effect.Effect<ReadonlyArray<string>, GitHubAppError>
    /** Posts one review (event COMMENT) with its inline comments on `commitId`; answers its id. */
    readonly createReview: (
      pr: PullRef,
      review: { readonly commitId: string; readonly body: string; readonly comments: ReadonlyArray<ReviewCommentDraft> }
    ) => Effect.Effect<number, GitHubAppError>
    /** The review whose body contains `marker`, if GitHub has one (reconciling a publish that may have posted). */
    readonly findReview: (pr: PullRef, marker: string) => Effect.Effect<Option.Option<number>, GitHubAppError>
    readonly reviewComments: (
      pr: PullRef,
      reviewId: number
    ) => Effect.Effect<ReadonlyArray<PostedReviewComment>, GitHubAppError>
    readonly reviewThreads: (pr: PullRef) => Effect.Effect<ReadonlyArray<ReviewThread>, GitHubAppError>
    readonly resolveThread: (pr: PullRef, threadId: string) => Effect.Effect<void, GitHubAppError>
    /** Creates the check run unless one with the same external id exists on the commit; answers its id. */
    readonly checkRun: (
      organizationId: string,
      repository: GithubRepositoryRef,
      check: CheckRunDraft
    ) => Effect.Effect<number, GitHubAppError>
    readonly updateBody: (pr: PullRef, body: string) => Effect.Effect<void, GitHubAppError>
    readonly comment: (pr: PullRef, body: string) => Effect.Effect<number, GitHubAppError>
    /** The conversation comment whose body contains `marker`, if there is one. */
    readonly findComment: (pr: PullRef, marker: string) => Effect.Effect<Option.Option<number>, GitHubAppError>
    readonly replyToReviewComment: (
      pr: PullRef,
      commentId: number,
      body: string
    ) => Effect.Effect<number, GitHubAppError>
  }
>()("bosun/server/providers/GitHubPulls") {
  static readonly layer = Layer.effect(
    GitHubPulls,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const app = yield* GitHubApp
      const defaults = { baseUrl: config.githubApiUrl.href.replace(/\/$/, ""), headers: { "user-agent": "bosun" } }
      const request = octokitRequest.defaults(defaults)
      const gql = octokitGraphql.defaults(defaults)

      /** Runs `call` with the installation token of the repository. */
      const withToken = <A>(
        organizationId: string,
        repository: GithubRepositoryRef,
        endpoint: string,
        call: (headers: { readonly authorization: string }) => Promise<A>
      ) =>
        Effect.flatMap(app.installationToken(organizationId, repository), (token) =>
          Effect.tryPromise({
            try: () => call({ authorization: `token ${Redacted.value(token)}` }),
            catch: failed(endpoint)
          })
        )

      const repo = (pr: { readonly repository: GithubRepositoryRef }) => ({
        owner: pr.repository.owner,
        repo: pr.repository.name
      })

      const details = Effect.fn("GitHubPulls.details")(function* (pr: PullRef) {
        const { data } = yield* withToken(pr.organizationId, pr.repository, "GET /pulls/{number}", (headers) =>
          request("GET /repos/{owner}/{repo}/pulls/{pull_number}", { ...repo(pr), pull_number: pr.number, headers })
        )
        return {
          title: data.title,
          headSha: data.head.sha,
          baseSha: data.base.sha,
          body: data.body ?? "",
          draft: data.draft ?? false,
          state: data.state === "closed" ? "closed" : "open",
          changedFiles: data.changed_files
        } satisfies PullDetails
      })

      const files = Effect.fn("GitHubPulls.files")(function* (pr: PullRef) {
        const all: Array<ChangedFile> = []
        for (let page = 1; page <= MAX_FILE_PAGES; page++) {
          const { data } = yield* withToken(pr.organizationId, pr.repository, "GET /pulls/{number}/files", (headers) =>
            request("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
              ...repo(pr),
              pull_number: pr.number,
              per_page: FILES_PAGE,
              page,
              headers
            })
          )
          for (const file of data) {
            all.push({
              path: file.filename,
              status: file.status,
              patch: file.patch,
              additions: file.additions,
              deletions: file.deletions
            })
          }
          if (data.length < FILES_PAGE) break
        }
        return all
      })

      const changedPaths = Effect.fn("GitHubPulls.changedPaths")(function* (pr: PullRef, base: string, head: string) {
        const { data } = yield* withToken(pr.organizationId, pr.repository, "GET /compare/{basehead}", (headers) =>
          request("GET /repos/{owner}/{repo}/compare/{basehead}", {
            ...repo(pr),
            basehead: `${base}...${head}`,
            headers
          })
        )
        const files = data.files ?? []
        // GitHub lists at most 300 files of a comparison, all on its first page: a longer list is incomplete.
        if (files.length >= COMPARE_FILE_LIMIT) {
          return yield* new GitHubAppError({
            reason: "Unavailable",
            message: `GitHub GET /compare/{basehead} lists only ${COMPARE_FILE_LIMIT} of the changed files`
          })
        }
        return files.map((file) => file.filename)
      })

      const createReview = Effect.fn("GitHubPulls.createReview")(function* (
        pr: PullRef,
        review: {
          readonly commitId: string
          readonly body: string
          readonly comments: ReadonlyArray<ReviewCommentDraft>
        }
      ) {
        const { data } = yield* withToken(pr.organizationId, pr.repository, "POST /pulls/{number}/reviews", (headers) =>
          request("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
            ...repo(pr),
            pull_number: pr.number,
            commit_id: review.commitId,
            body: review.body,
            event: "COMMENT",
            comments: review.comments.map((comment) => ({
              path: comment.path,
              body: comment.body,
              line: comment.line,
              side: comment.side,
              ...(comment.startLine !== undefined && comment.startLine < comment.line
                ? { start_line: comment.startLine, start_side: comment.side }
                : {})
            })),
            headers
          })
        )
        return Number(data.id)
      })

      const findReview = Effect.fn("GitHubPulls.findReview")(function* (pr: PullRef, marker: string) {
        for (let page = 1; ; page++) {
          const { data } = yield* withToken(
            pr.organizationId,
            pr.repository,
            "GET /pulls/{number}/reviews",
            (headers) =>
              request("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
                ...repo(pr),
                pull_number: pr.number,
                per_page: REVIEWS_PAGE,
                page,
                headers
              })
          )
          const found = data.find((review) => (review.body ?? "").includes(marker))
          if (found !== undefined) return Option.some(Number(found.id))
          if (data.length < REVIEWS_PAGE) return Option.none<number>()
        }
      })

      const reviewComments = Effect.fn("GitHubPulls.reviewComments")(function* (pr: PullRef, reviewId: number) {
        const all: Array<PostedReviewComment> = []
        for (let page = 1; ; page++) {
          const { data } = yield* withToken(
            pr.organizationId,
            pr.repository,
            "GET /pulls/{number}/reviews/{id}/comments",
            (headers) =>
              request("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments", {
                ...repo(pr),
                pull_number: pr.number,
                review_id: reviewId,
                per_page: REVIEWS_PAGE,
                page,
                headers
              })
          )
          for (const comment of data) {
            all.push({ id: Number(comment.id), path: comment.path, line: comment.line ?? null, body: comment.body })
          }
          if (data.length < REVIEWS_PAGE) return all
        }
      })

      const graphql =
        (organizationId: string, repository: GithubRepositoryRef, operation: string) =>
        <A>(query: string, variables: Record<string, unknown>) =>
          withToken(organizationId, repository, `GraphQL ${operation}`, (headers) =>
            gql<A>(query, { ...variables, headers: { ...headers, "user-agent": "bosun" } })
          )

      const reviewThreads = Effect.fn("GitHubPulls.reviewThreads")(function* (pr: PullRef) {
        const threads: Array<ReviewThread> = []
        let after: string | null = null
        for (;;) {
          const page: ThreadsPage = yield* graphql(
            pr.organizationId,
            pr.repository,
            "reviewThreads"
          )<ThreadsPage>(THREADS_QUERY, {
            owner: pr.repository.owner,
            name: pr.repository.name,
            number: pr.number,
            after
          })
          const connection = page.repository?.pullRequest?.reviewThreads
          if (connection === undefined) return threads
          for (const node of connection.nodes) {
            threads.push({
              id: node.id,
              isResolved: node.isResolved,
              commentIds: node.comments.nodes.flatMap((comment) => {
                const id = commentIdOf(comment.fullDatabaseId)
                return id === undefined ? [] : [id]
              })
            })
          }
          if (!connection.pageInfo.hasNextPage || connection.pageInfo.endCursor === null) return threads
          after = connection.pageInfo.endCursor
        }
      })

      const resolveThread = Effect.fn("GitHubPulls.resolveThread")(function* (pr: PullRef, threadId: string) {
        yield* graphql(pr.organizationId, pr.repository, "resolveReviewThread")(RESOLVE_MUTATION, { threadId })
      })

      const checkRun = Effect.fn("GitHubPulls.checkRun")(function* (
        organizationId: string,
        repository: GithubRepositoryRef,
        check: CheckRunDraft
      ) {
        const { data: existing } = yield* withToken(
          organizationId,
          repository,
          "GET /commits/{sha}/check-runs",
          (headers) =>
            request("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
              owner: repository.owner,
              repo: repository.name,
              ref: check.headSha,
              check_name: check.name,
              // GitHub's default, "latest", hides every earlier check run of the name: a retry would miss its own.
              filter: "all",
              headers
            })
        )
        const same = existing.check_runs.find((run) => run.external_id === check.externalId)
        if (same !== undefined) return Number(same.id)
        const { data } = yield* withToken(organizationId, repository, "POST /check-runs", (headers) =>
          request("POST /repos/{owner}/{repo}/check-runs", {
            owner: repository.owner,
            repo: repository.name,
            name: check.name,
            head_sha: check.headSha,
            external_id: check.externalId,
            status: "completed",
            conclusion: check.conclusion,
            output: { title: check.title, summary: check.summary },
            headers
          })
        )
        return Number(data.id)
      })

      const updateBody = Effect.fn("GitHubPulls.updateBody")(function* (pr: PullRef, body: string) {
        yield* withToken(pr.organizationId, pr.repository, "PATCH /pulls/{number}", (headers) =>
          request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
            ...repo(pr),
            pull_number: pr.number,
            body,
            headers
          })
        )
      })

      const comment = Effect.fn("GitHubPulls.comment")(function* (pr: PullRef, body: string) {
        const { data } = yield* withToken(
          pr.organizationId,
          pr.repository,
          "POST /issues/{number}/comments",
          (headers) =>
            request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
              ...repo(pr),
              issue_number: pr.number,
              body,
              headers
            })
        )
        return Number(data.id)
      })

      const findComment = Effect.fn("GitHubPulls.findComment")(function* (pr: PullRef, marker: string) {
        for (let page = 1; ; page++) {
          const { data } = yield* withToken(
            pr.organizationId,
            pr.repository,
            "GET /issues/{number}/comments",
            (headers) =>
              request("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", {
                ...repo(pr),
                issue_number: pr.number,
                per_page: REVIEWS_PAGE,
                page,
                headers
              })
          )
          const found = data.find((comment) => (comment.body ?? "").includes(marker))
          if (found !== undefined) return Option.some(Number(found.id))
          if (data.length < REVIEWS_PAGE) return Option.none<number>()
        }
      })

      const replyToReviewComment = Effect.fn("GitHubPulls.replyToReviewComment")(function* (
        pr: PullRef,
        commentId: number,
        body: string
      ) {
        const { data } = yield* withToken(
          pr.organizationId,
          pr.repository,
          "POST /pulls/{number}/comments/{id}/replies",
          (headers) =>
            request("POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", {
              ...repo(pr),
              pull_number: pr.number,
              comment_id: commentId,
              body,
              headers
            })
        )
        return Number(data.id)
      })

      return GitHubPulls.of({
        details,
        files,
        changedPaths,
        createReview,
        findReview,
        reviewComments,
        reviewThreads,
        resolveThread,
        checkRun,
        updateBody,
        comment,
        findComment,
        replyToReviewComment
      })
    })
  )
}

/**
 * The pull-request side of the GitHub App (the review run's inputs and what publish posts;
 * docs/interface.md: What the service does 1, 9): a pull request's changed files, the review with
 * its inline comments, the review threads (GraphQL, the only API that resolves one), check runs
 * that say why a review failed, the description section, and replies — each call made with the
 * installation token `GitHubApp` mints for the repository, through `GitHubClient` (Octokit with
 * GitHub's retry, throttling and pagination plugins) at `BOSUN_GITHUB_API_URL` (on GitHub
 * Enterprise, `…/api/v3` for REST and `…/api/graphql`, which Octokit derives from it). Lists are
 * read page by page as GitHub's `Link` headers lead.
 *
 * Errors carry the endpoint, GitHub's status and GitHub's own message, nothing of the request: a
 * failed review's check run quotes them, and Octokit's own errors can quote the token.
 */
import { Context, Effect, Layer, Option } from "effect"
import { GitHubApp, type GithubRepositoryRef, installationKey } from "./GitHubApp.ts"
import { GitHubAppError, GitHubClient, type GitHubOctokit } from "./GitHubClient.ts"

/** A file a pull request changes, as GitHub lists it. */
export interface ChangedFile {
  readonly path: string
  /** GitHub's file status: added, modified, removed, renamed, copied, changed, unchanged. */
  readonly status: string
  /** The unified-diff patch; GitHub leaves it out for binary files and very large diffs. */
  readonly patch?: string | undefined
  readonly additions: number
  readonly deletions: number
}

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

/** A check run on a commit: in progress without a conclusion, completed with one. */
export interface CheckRunDraft {
  readonly name: string
  readonly headSha: string
  readonly conclusion?: "success" | "failure" | "neutral" | "action_required" | undefined
  readonly title: string
  readonly summary: string
  /** Ours: the run it reports on, so a retry finds the check run it already created. */
  readonly externalId: string
}

/** GitHub's largest page; it lists at most 3,000 files of a pull request. */
const PAGE = 100
const COMPARE_FILE_LIMIT = 300

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

/** Runs a call to GitHub with the installation token of the repository, as `GitHubClient` makes it. */
type WithToken = <A>(
  organizationId: string,
  repository: GithubRepositoryRef,
  endpoint: string,
  call: (octokit: GitHubOctokit, request: { readonly signal: AbortSignal }) => Promise<A>
) => Effect.Effect<A, GitHubAppError>

const repo = (pr: { readonly repository: GithubRepositoryRef }) => ({
  owner: pr.repository.owner,
  repo: pr.repository.name
})

/** What a pull request is and what it changes. */
const pullReads = (withToken: WithToken) => {
  const details = Effect.fn("GitHubPulls.details")(function* (pr: PullRef) {
    const { data } = yield* withToken(pr.organizationId, pr.repository, "GET /pulls/{number}", (octokit, request) =>
      octokit.request("GET /repos/{owner}/{repo}/pulls/{pull_number}", {
        ...repo(pr),
        pull_number: pr.number,
        request
      })
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
    const data = yield* withToken(pr.organizationId, pr.repository, "GET /pulls/{number}/files", (octokit) =>
      octokit.paginate("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
        ...repo(pr),
        pull_number: pr.number,
        per_page: PAGE
      })
    )
    return data.map(
      (file): ChangedFile => ({
        path: file.filename,
        status: file.status,
        patch: file.patch,
        additions: file.additions,
        deletions: file.deletions
      })
    )
  })

  const changedPaths = Effect.fn("GitHubPulls.changedPaths")(function* (pr: PullRef, base: string, head: string) {
    const { data } = yield* withToken(pr.organizationId, pr.repository, "GET /compare/{basehead}", (octokit, request) =>
      octokit.request("GET /repos/{owner}/{repo}/compare/{basehead}", {
        ...repo(pr),
        basehead: `${base}...${head}`,
        request
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

  return { details, files, changedPaths }
}

/** The review Bosun posts, found again by its marker, and its inline comments as GitHub kept them. */
const reviewCalls = (withToken: WithToken) => {
  const createReview = Effect.fn("GitHubPulls.createReview")(function* (
    pr: PullRef,
    review: {
      readonly commitId: string
      readonly body: string
      readonly comments: ReadonlyArray<ReviewCommentDraft>
    }
  ) {
    const { data } = yield* withToken(
      pr.organizationId,
      pr.repository,
      "POST /pulls/{number}/reviews",
      (octokit, request) =>
        octokit.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", {
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
          request
        })
    )
    return Number(data.id)
  })

  const findReview = Effect.fn("GitHubPulls.findReview")(function* (pr: PullRef, marker: string) {
    // Pages are read until the review is found, not to the end.
    const found = yield* withToken(pr.organizationId, pr.repository, "GET /pulls/{number}/reviews", (octokit) =>
      octokit.paginate(
        "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        { ...repo(pr), pull_number: pr.number, per_page: PAGE },
        (response, done) => {
          const review = response.data.find((candidate) => (candidate.body ?? "").includes(marker))
          if (review === undefined) return []
          done()
          return [Number(review.id)]
        }
      )
    )
    return Option.fromUndefinedOr(found[0])
  })

  const reviewComments = Effect.fn("GitHubPulls.reviewComments")(function* (pr: PullRef, reviewId: number) {
    const data = yield* withToken(
      pr.organizationId,
      pr.repository,
      "GET /pulls/{number}/reviews/{id}/comments",
      (octokit) =>
        octokit.paginate("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments", {
          ...repo(pr),
          pull_number: pr.number,
          review_id: reviewId,
          per_page: PAGE
        })
    )
    return data.map(
      (comment): PostedReviewComment => ({
        id: Number(comment.id),
        path: comment.path,
        line: comment.line ?? null,
        body: comment.body
      })
    )
  })

  return { createReview, findReview, reviewComments }
}

/** Review threads, through GraphQL: REST can neither list their resolution nor resolve one. */
const threadCalls = (withToken: WithToken) => {
  const graphql =
    (organizationId: string, repository: GithubRepositoryRef, operation: string) =>
    <A>(query: string, variables: Record<string, unknown>) =>
      withToken(organizationId, repository, `GraphQL ${operation}`, (octokit, request) =>
        octokit.graphql<A>(query, { ...variables, request })
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

  return { reviewThreads, resolveThread }
}

/** The check run that reports a review run on its commit. */
const checkRunCalls = (withToken: WithToken) => {
  const checkRun = Effect.fn("GitHubPulls.checkRun")(function* (
    organizationId: string,
    repository: GithubRepositoryRef,
    check: CheckRunDraft
  ) {
    const existing = yield* withToken(organizationId, repository, "GET /commits/{sha}/check-runs", (octokit) =>
      octokit.paginate("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", {
        owner: repository.owner,
        repo: repository.name,
        ref: check.headSha,
        check_name: check.name,
        // GitHub's default, "latest", hides every earlier check run of the name: a retry would miss its own.
        filter: "all",
        per_page: PAGE
      })
    )
    const output = { title: check.title, summary: check.summary }
    const state =
      check.conclusion === undefined
        ? ({ status: "in_progress" } as const)
        : ({ status: "completed", conclusion: check.conclusion } as const)
    const same = existing.find((run) => run.external_id === check.externalId)
    if (same !== undefined) {
      // A check run that ended stays ended: a late "in progress" (delivered after the end) is dropped.
      const settled =
        same.status === "completed" && (state.status === "in_progress" || same.conclusion === check.conclusion)
      if (!settled) {
        yield* withToken(organizationId, repository, "PATCH /check-runs/{id}", (octokit, request) =>
          octokit.request("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", {
            owner: repository.owner,
            repo: repository.name,
            check_run_id: same.id,
            ...state,
            output,
            request
          })
        )
      }
      return Number(same.id)
    }
    const { data } = yield* withToken(organizationId, repository, "POST /check-runs", (octokit, request) =>
      octokit.request("POST /repos/{owner}/{repo}/check-runs", {
        owner: repository.owner,
        repo: repository.name,
        name: check.name,
        head_sha: check.headSha,
        external_id: check.externalId,
        ...state,
        output,
        request
      })
    )
    return Number(data.id)
  })

  return { checkRun }
}

/** The description and the conversation: the body, comments, and replies to review comments. */
const conversationCalls = (withToken: WithToken) => {
  const updateBody = Effect.fn("GitHubPulls.updateBody")(function* (pr: PullRef, body: string) {
    yield* withToken(pr.organizationId, pr.repository, "PATCH /pulls/{number}", (octokit, request) =>
      octokit.request("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", {
        ...repo(pr),
        pull_number: pr.number,
        body,
        request
      })
    )
  })

  const comment = Effect.fn("GitHubPulls.comment")(function* (pr: PullRef, body: string) {
    const { data } = yield* withToken(
      pr.organizationId,
      pr.repository,
      "POST /issues/{number}/comments",
      (octokit, request) =>
        octokit.request("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", {
          ...repo(pr),
          issue_number: pr.number,
          body,
          request
        })
    )
    return Number(data.id)
  })

  const findComment = Effect.fn("GitHubPulls.findComment")(function* (pr: PullRef, marker: string) {
    const found = yield* withToken(pr.organizationId, pr.repository, "GET /issues/{number}/comments", (octokit) =>
      octokit.paginate(
        "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
        { ...repo(pr), issue_number: pr.number, per_page: PAGE },
        (response, done) => {
          const comment = response.data.find((candidate) => (candidate.body ?? "").includes(marker))
          if (comment === undefined) return []
          done()
          return [Number(comment.id)]
        }
      )
    )
    return Option.fromUndefinedOr(found[0])
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
      (octokit, request) =>
        octokit.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", {
          ...repo(pr),
          pull_number: pr.number,
          comment_id: commentId,
          body,
          request
        })
    )
    return Number(data.id)
  })

  return { updateBody, comment, findComment, replyToReviewComment }
}

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
    /**
     * Creates the check run, or moves the one with the same external id on the commit to this
     * state (a completed one is never moved back to in progress); answers its id.
     */
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
      const app = yield* GitHubApp
      const client = yield* GitHubClient

      const withToken: WithToken = (organizationId, repository, endpoint, call) =>
        Effect.flatMap(app.installationToken(organizationId, repository), (token) =>
          client.call(installationKey(organizationId, repository), endpoint, token, (octokit, signal) =>
            call(octokit, { signal })
          )
        )

      return GitHubPulls.of({
        ...pullReads(withToken),
        ...reviewCalls(withToken),
        ...threadCalls(withToken),
        ...checkRunCalls(withToken),
        ...conversationCalls(withToken)
      })
    })
  )
}

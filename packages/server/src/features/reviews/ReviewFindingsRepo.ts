/**
 * Reviews and their findings (`sql/0022_reviews_findings_effects.sql`): what earlier
 * reviews of a pull request left (the `known` findings a new plan is made against), and recording
 * a review's plan — the review with its coverage ledger, its findings by fingerprint, the ones it
 * resolves — in the caller's transaction, with the pull request's open_findings /
 * resolved_findings counted again from the rows. A dismissed finding is never reopened; a resolved
 * one the agent reports again is open again (a regression).
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { KnownFinding, ReviewPlan } from "./ReviewPlan.ts"

export interface PullRequestRef {
  readonly organizationId: string
  readonly repositoryId: string
  readonly number: number
}

export interface PlannedReview {
  readonly runId: string
  readonly headSha: string
  readonly summary: string
  readonly plan: ReviewPlan
}

/** A posted review: GitHub's id for it and for each inline comment, by the finding's fingerprint. */
export interface PostedReview {
  readonly runId: string
  readonly githubReviewId: number
  readonly comments: ReadonlyArray<{
    readonly fingerprint: string
    readonly commentId: number
    readonly threadId: string | null
  }>
}

/** A finding Bosun posted as an inline comment: what a reply in its thread answers. */
export interface CommentedFinding {
  readonly id: string
  readonly repository_id: string
  readonly pull_request_number: number
  readonly path: string
  readonly title: string
  readonly category: string
  readonly severity: string
}

type Sql = SqlClient.SqlClient

/** Counts the pull request's open and resolved findings again from the rows. */
const recount = (tx: Sql, pr: PullRequestRef) =>
  tx`UPDATE pull_requests p SET
       open_findings = (SELECT count(*) FROM review_findings f
         WHERE f.repository_id = p.repository_id AND f.pull_request_number = p.number AND f.state = 'OPEN'),
       resolved_findings = (SELECT count(*) FROM review_findings f
         WHERE f.repository_id = p.repository_id AND f.pull_request_number = p.number AND f.state = 'RESOLVED'),
       updated_at = now()
     WHERE p.organization_id = ${pr.organizationId} AND p.repository_id = ${pr.repositoryId}
       AND p.number = ${pr.number}`.pipe(Effect.orDie)

/** Reads of a pull request's findings and reviews. */
const readers = (sql: Sql) => {
  const known = Effect.fn("ReviewFindingsRepo.known")(function* (pr: PullRequestRef) {
    return yield* sql<KnownFinding>`
      SELECT fingerprint, path, state FROM review_findings
      WHERE organization_id = ${pr.organizationId} AND repository_id = ${pr.repositoryId}
        AND pull_request_number = ${pr.number}
      ORDER BY created_at, id`.pipe(Effect.orDie)
  })

  const lastReviewedHead = Effect.fn("ReviewFindingsRepo.lastReviewedHead")(function* (pr: PullRequestRef) {
    const rows = yield* sql<{ head_sha: string }>`
      SELECT head_sha FROM pull_request_reviews
      WHERE organization_id = ${pr.organizationId} AND repository_id = ${pr.repositoryId}
        AND pull_request_number = ${pr.number} AND github_review_id IS NOT NULL
      ORDER BY posted_at DESC, created_at DESC LIMIT 1`.pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(rows[0]), (row) => row.head_sha)
  })

  const threadsOf = Effect.fn("ReviewFindingsRepo.threadsOf")(function* (
    pr: PullRequestRef,
    fingerprints: ReadonlyArray<string>
  ) {
    if (fingerprints.length === 0) return []
    const rows = yield* sql<{ github_thread_id: string }>`
      SELECT github_thread_id FROM review_findings
      WHERE organization_id = ${pr.organizationId} AND repository_id = ${pr.repositoryId}
        AND pull_request_number = ${pr.number} AND github_thread_id IS NOT NULL
        AND fingerprint = ANY(${fingerprints})
      ORDER BY created_at, id`.pipe(Effect.orDie)
    return rows.map((row) => row.github_thread_id)
  })

  const byComment = Effect.fn("ReviewFindingsRepo.byComment")(function* (organizationId: string, commentId: number) {
    const [row] = yield* sql<CommentedFinding>`
      SELECT id, repository_id, pull_request_number, path, title, category, severity FROM review_findings
      WHERE organization_id = ${organizationId} AND github_comment_id = ${commentId}
      ORDER BY created_at LIMIT 1`.pipe(Effect.orDie)
    return Option.fromUndefinedOr(row)
  })

  return { known, lastReviewedHead, threadsOf, byComment }
}

/** Writes of a review's plan, of what it posted, and of a dismissal, each recounting the pull request. */
const writers = (sql: Sql) => {
  const recordPlan = Effect.fn("ReviewFindingsRepo.recordPlan")(function* (pr: PullRequestRef, review: PlannedReview) {
    const coverage = {
      reviewed: review.plan.coverage.reviewed.map((file) => ({ path: file.path, hunks: file.lines.hunks })),
      skipped: review.plan.coverage.skipped
    }
    yield* sql`
      INSERT INTO pull_request_reviews
        (run_id, organization_id, repository_id, pull_request_number, head_sha, summary, coverage)
      VALUES (${review.runId}, ${pr.organizationId}, ${pr.repositoryId}, ${pr.number}, ${review.headSha},
              ${review.summary}, ${JSON.stringify(coverage)}::jsonb)
      ON CONFLICT (run_id) DO NOTHING`.pipe(Effect.orDie)
    for (const finding of review.plan.findings) {
      if (finding.placement === "DISMISSED") continue
      if (finding.placement === "ALREADY_POSTED") {
        yield* sql`UPDATE review_findings SET last_run_id = ${review.runId}, updated_at = now()
                  WHERE repository_id = ${pr.repositoryId} AND pull_request_number = ${pr.number}
                    AND fingerprint = ${finding.fingerprint}`.pipe(Effect.orDie)
        continue
      }
      yield* sql`
        INSERT INTO review_findings
          (organization_id, repository_id, pull_request_number, fingerprint, path, start_line, end_line, side,
           severity, category, title, placement, first_run_id, last_run_id)
        VALUES (${pr.organizationId}, ${pr.repositoryId}, ${pr.number}, ${finding.fingerprint}, ${finding.path},
                ${finding.start_line}, ${finding.end_line}, ${finding.side}, ${finding.severity},
                ${finding.category}, ${finding.title}, ${finding.placement}, ${review.runId}, ${review.runId})
        ON CONFLICT (repository_id, pull_request_number, fingerprint) DO UPDATE SET
          path = excluded.path, start_line = excluded.start_line, end_line = excluded.end_line,
          side = excluded.side, severity = excluded.severity, placement = excluded.placement,
          last_run_id = excluded.last_run_id, updated_at = now(),
          state = CASE WHEN review_findings.state = 'DISMISSED' THEN 'DISMISSED' ELSE 'OPEN' END,
          resolved_at = CASE WHEN review_findings.state = 'DISMISSED' THEN review_findings.resolved_at ELSE NULL END`.pipe(
        Effect.orDie
      )
    }
    const resolved = review.plan.resolved.map((finding) => finding.fingerprint)
    if (resolved.length > 0) {
      yield* sql`UPDATE review_findings SET state = 'RESOLVED', resolved_at = now(), last_run_id = ${review.runId},
                  updated_at = now()
                WHERE repository_id = ${pr.repositoryId} AND pull_request_number = ${pr.number}
                  AND state = 'OPEN' AND fingerprint = ANY(${resolved})`.pipe(Effect.orDie)
    }
    yield* recount(sql, pr)
  })

  const recordPosted = Effect.fn("ReviewFindingsRepo.recordPosted")(function* (
    pr: PullRequestRef,
    review: PostedReview
  ) {
    yield* sql
      .withTransaction(
        Effect.gen(function* () {
          yield* sql`UPDATE pull_request_reviews SET github_review_id = ${review.githubReviewId}, posted_at = now()
                   WHERE run_id = ${review.runId} AND organization_id = ${pr.organizationId}`
          for (const comment of review.comments) {
            yield* sql`UPDATE review_findings SET github_comment_id = ${comment.commentId},
                       github_thread_id = ${comment.threadId}, updated_at = now()
                     WHERE organization_id = ${pr.organizationId} AND repository_id = ${pr.repositoryId}
                       AND pull_request_number = ${pr.number} AND fingerprint = ${comment.fingerprint}`
          }
        })
      )
      .pipe(Effect.orDie)
  })

  const dismissByComment = Effect.fn("ReviewFindingsRepo.dismissByComment")(function* (
    organizationId: string,
    commentId: number,
    reason: string
  ) {
    return yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const rows = yield* sql<{ repository_id: string; pull_request_number: number }>`
          UPDATE review_findings SET state = 'DISMISSED', dismissed_reason = ${reason}, updated_at = now()
          WHERE organization_id = ${organizationId} AND github_comment_id = ${commentId} AND state <> 'DISMISSED'
          RETURNING repository_id, pull_request_number`
          const [row] = rows
          if (row === undefined) return false
          yield* recount(sql, { organizationId, repositoryId: row.repository_id, number: row.pull_request_number })
          return true
        })
      )
      .pipe(Effect.orDie)
  })

  return { recordPlan, recordPosted, dismissByComment }
}

export class ReviewFindingsRepo extends Context.Service<
  ReviewFindingsRepo,
  {
    readonly known: (pr: PullRequestRef) => Effect.Effect<ReadonlyArray<KnownFinding>>
    /** Records the review and its plan; run it in the transaction that records the publish. */
    readonly recordPlan: (pr: PullRequestRef, review: PlannedReview) => Effect.Effect<void>
    /** The GitHub ids of the inline comments a posted review created, by fingerprint. */
    readonly recordPosted: (pr: PullRequestRef, review: PostedReview) => Effect.Effect<void>
    /** The head of the pull request's newest posted review: what a new push is compared with. */
    readonly lastReviewedHead: (pr: PullRequestRef) => Effect.Effect<Option.Option<string>>
    /** The GitHub review threads of these findings, where they have one. */
    readonly threadsOf: (
      pr: PullRequestRef,
      fingerprints: ReadonlyArray<string>
    ) => Effect.Effect<ReadonlyArray<string>>
    /** Dismisses the finding a GitHub review comment posted; false when no open finding has that comment. */
    readonly dismissByComment: (organizationId: string, commentId: number, reason: string) => Effect.Effect<boolean>
    /** The finding whose inline comment is `commentId` (the top of a thread), whatever its state. */
    readonly byComment: (organizationId: string, commentId: number) => Effect.Effect<Option.Option<CommentedFinding>>
  }
>()("bosun/server/persistence/ReviewFindingsRepo") {
  static readonly layer = Layer.effect(
    ReviewFindingsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return ReviewFindingsRepo.of({ ...readers(sql), ...writers(sql) })
    })
  )
}

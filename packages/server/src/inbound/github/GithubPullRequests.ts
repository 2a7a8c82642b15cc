/**
 * The `pull_request` step of the GitHub inbox: the pull request's row follows it (title, author,
 * OPEN / CLOSED / MERGED); opened, reopened, synchronize and ready_for_review ask the repository's
 * review_policy whether to review; closed and converted_to_draft stop its reviews. Commands given
 * in a pull request's comments are GithubCommands.ts.
 */
import type { Repository } from "@bosun/domain"
import { Effect, Schema } from "effect"
import { decideReview, type ReviewEvent } from "../../features/reviews/ReviewPolicy.ts"
import type { GithubDelivery } from "./GithubDeliveriesRepo.ts"
import { PullRequestEvent } from "./GithubEvents.ts"
import {
  applied,
  decodeFailure,
  type Handled,
  type InboxContext,
  ignored,
  postComment,
  repositoryOf
} from "./GithubInboxContext.ts"
import { tooManyFilesNotice } from "./GithubNotices.ts"
import { cancelReviews, queueReview } from "./GithubReviewQueue.ts"

const REVIEW_ACTIONS = new Set(["opened", "reopened", "synchronize", "ready_for_review"])

/** The review_policy with every review_on_* switch on: what is left decides on the pull request itself. */
const everyEventOn = <P extends Record<string, unknown>>(policy: P): P => ({
  ...policy,
  review_on_open: true,
  review_on_reopen: true,
  review_on_push: true,
  review_on_ready: true
})

/** Closed, merged or not: nothing is left to review, and a work item following it ends with it. */
const pullRequestClosed = Effect.fnUntraced(function* (
  ctx: InboxContext,
  org: string,
  repository: Repository,
  pr: PullRequestEvent["pull_request"]
): Effect.fn.Return<Handled> {
  const ref = { repositoryId: repository.id, number: pr.number }
  // A review that still publishes sets REVIEWED after this.
  const cancelled = yield* cancelReviews(ctx, org, repository.id, pr.number, ["QUEUED", "RUNNING"])
  if (cancelled > 0) yield* ctx.pullRequests.setReviewStatus(org, ref, "SKIPPED")
  yield* ctx.workItems.pullRequestClosed(org, repository.id, pr.number, pr.merged === true)
  return applied(cancelled > 0)
})

/** Back to draft: a queued review is dropped unless review_drafts is on. */
const pullRequestConvertedToDraft = Effect.fnUntraced(function* (
  ctx: InboxContext,
  org: string,
  repository: Repository,
  pr: PullRequestEvent["pull_request"]
): Effect.fn.Return<Handled> {
  const policy = (yield* ctx.configurations.effective(org, repository.id)).review_policy
  if (policy.review_drafts) return applied(false)
  // A running review is left to finish: the head it reviews was ready when it started.
  const cancelled = yield* cancelReviews(ctx, org, repository.id, pr.number, ["QUEUED"])
  if (cancelled > 0)
    yield* ctx.pullRequests.setReviewStatus(org, { repositoryId: repository.id, number: pr.number }, "SKIPPED")
  return applied(cancelled > 0)
})

/**
 * Opened, reopened, synchronize or ready_for_review of an open pull request: a review is queued
 * when the review_policy wants one, else the pull request is SKIPPED when it is left out for what
 * it is; over max_changed_files it gets one comment saying so instead.
 */
const reviewOnEvent = Effect.fnUntraced(function* (
  ctx: InboxContext,
  delivery: GithubDelivery,
  repository: Repository,
  event: PullRequestEvent
): Effect.fn.Return<Handled> {
  const org = delivery.organizationId
  const pr = event.pull_request
  const ref = { repositoryId: repository.id, number: pr.number }
  const policy = (yield* ctx.configurations.effective(org, repository.id)).review_policy
  const facts: ReviewEvent = {
    action: event.action,
    draft: pr.draft ?? false,
    authorLogin: pr.user?.login ?? null,
    repositoryEnabled: repository.enabled
  }
  const decision = decideReview(policy, facts)
  if (!decision.review) {
    // Left out for what it is (paused, draft, excluded author): SKIPPED. A review_on_* switch
    // that is off only says this event starts none: a push after a review keeps REVIEWED.
    if (!decideReview(everyEventOn(policy), facts).review) {
      yield* ctx.pullRequests.setReviewStatus(org, ref, "SKIPPED")
    }
    return ignored(`no review: ${decision.reason}`)
  }
  const changedFiles = pr.changed_files ?? 0
  if (changedFiles > policy.max_changed_files) {
    yield* postComment(
      ctx,
      org,
      repository,
      pr.number,
      `github.pr_comment:too_many_files:${repository.id}:${pr.number}:${pr.head.sha}`,
      tooManyFilesNotice(changedFiles, policy.max_changed_files)
    )
    yield* ctx.pullRequests.setReviewStatus(org, ref, "SKIPPED")
    return ignored(
      `no review: ${changedFiles} changed files are over max_changed_files (${policy.max_changed_files}); a notice was posted`
    )
  }
  return yield* queueReview(
    ctx,
    org,
    repository,
    { number: pr.number, headSha: pr.head.sha, baseSha: pr.base.sha },
    { trigger: event.action, delivery_id: delivery.deliveryId }
  )
})

const applyPullRequest = Effect.fnUntraced(function* (
  ctx: InboxContext,
  delivery: GithubDelivery,
  event: PullRequestEvent
): Effect.fn.Return<Handled> {
  const org = delivery.organizationId
  const repository = yield* repositoryOf(ctx, org, event.repository)
  const pr = event.pull_request
  yield* ctx.pullRequests.upsert(org, {
    repositoryId: repository.id,
    number: pr.number,
    title: pr.title,
    authorLogin: pr.user?.login ?? null,
    state: pr.state === "open" ? "OPEN" : pr.merged === true ? "MERGED" : "CLOSED"
  })
  if (event.action === "closed") return yield* pullRequestClosed(ctx, org, repository, pr)
  if (event.action === "converted_to_draft") return yield* pullRequestConvertedToDraft(ctx, org, repository, pr)
  if (pr.state !== "open" || !REVIEW_ACTIONS.has(event.action)) return applied(false)
  return yield* reviewOnEvent(ctx, delivery, repository, event)
})

export const handlePullRequest = (ctx: InboxContext, delivery: GithubDelivery) =>
  Schema.decodeUnknownEffect(PullRequestEvent)(delivery.payload).pipe(
    Effect.flatMap((event) => applyPullRequest(ctx, delivery, event)),
    Effect.catchTag("SchemaError", decodeFailure("pull_request"))
  )

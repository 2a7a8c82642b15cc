/**
 * How the GitHub inbox queues and stops a pull request's reviews, in the delivery's transaction:
 * one `review` run per pull request at a time, keyed by the pull request. When a review is due
 * is the pull_request and command steps' decision, not this module's.
 */
import type { Repository } from "@bosun/domain"
import { Effect } from "effect"
import { REVIEW } from "../../features/reviews/ReviewWorkflow.ts"
import { applied, type InboxContext } from "./GithubInboxContext.ts"

const reviewKey = (repositoryId: string, number: number) => `review:${repositoryId}:${number}`

/**
 * Queues a `review` run of the pull request's head and marks the pull request QUEUED. Its job is
 * keyed by the pull request both as session (one review of it at a time) and as batch (a newer
 * push supersedes a review still queued). The Scheduler then has a run to pick up.
 */
export const queueReview = (
  ctx: InboxContext,
  organizationId: string,
  repository: Repository,
  pr: { readonly number: number; readonly headSha: string; readonly baseSha: string },
  inputSnapshot: Readonly<Record<string, unknown>>
) =>
  Effect.gen(function* () {
    const key = reviewKey(repository.id, pr.number)
    yield* ctx.runQueue.enqueue({
      organizationId,
      repositoryId: repository.id,
      workflowType: REVIEW,
      lane: "REVIEW",
      sessionKey: key,
      batchKey: key,
      headSha: pr.headSha,
      baseSha: pr.baseSha,
      pullRequestNumber: pr.number,
      inputSnapshot
    })
    yield* ctx.pullRequests.setReviewStatus(
      organizationId,
      { repositoryId: repository.id, number: pr.number },
      "QUEUED"
    )
    return applied(true)
  })

/**
 * Asks the pull request's reviews in `statuses` to stop (the Scheduler drops a queued one, a
 * running attempt stops its agent); answers how many were still going, so the Scheduler is
 * woken only when there is something for it to stop.
 */
export const cancelReviews = (
  ctx: InboxContext,
  organizationId: string,
  repositoryId: string,
  number: number,
  statuses: ReadonlyArray<"QUEUED" | "RUNNING">
) => ctx.runQueue.requestSessionCancel(organizationId, reviewKey(repositoryId, number), statuses)

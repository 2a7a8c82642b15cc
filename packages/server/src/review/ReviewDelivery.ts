/**
 * Posting a review that publish decided (spec: What the service does 9): a `github.review_delivery`
 * row on `bosun-effects`, handled here apart from the run, so GitHub failing never touches the
 * agent's run. Publish records the plan, the review's provider effect (`github.review:{run}`,
 * everything the call needs) and this row in one transaction; this handler then posts the review
 * — or, for an effect that may already have been posted, finds it by the marker its body carries
 * — matches its comments to findings by their markers, puts the agent's description into the
 * pull request body, resolves the threads of resolved findings, and ends the run's "Bosun review"
 * check run `success` with what was posted. Each part is idempotent: a delivery that runs again
 * repeats nothing GitHub already has.
 *
 * A failure that may pass (GitHub unreachable, 5xx, a rate limit longer than a call waits) fails
 * the delivery for the queue to retry; one that will not (GitHub refusing the request, a GraphQL
 * error) and a retryable one on its last delivery end it: one error line, the pull request's
 * review status FAILED and the check run `failure` quoting GitHub — and the message goes to
 * `bosun-effects-dlq`, from which `bosun queues dead-letters replay` posts it once GitHub takes it.
 */
import { Effect, Option, Schema } from "effect"
import type { EffectDelivery } from "../effects/EffectOnce.ts"
import { ProviderEffectsRepo } from "../persistence/ProviderEffectsRepo.ts"
import { PullRequestsRepo } from "../persistence/PullRequestsRepo.ts"
import { ReviewFindingsRepo } from "../persistence/ReviewFindingsRepo.ts"
import { type GitHubAppError, retryableGithubError } from "../providers/GitHubClient.ts"
import { GitHubPulls, type PullRef, type ReviewCommentDraft } from "../providers/GitHubPulls.ts"
import { withDescription } from "./PrDescription.ts"
import { deliveryFailureCheck, REVIEW_CHECK_NAME, reviewCheckId } from "./ReviewFailure.ts"

export const GITHUB_REVIEW_DELIVERY = "github.review_delivery"

/** The review of one run to post: where, and which effects publish recorded for it. */
export const ReviewDeliveryPayload = Schema.Struct({
  organization_id: Schema.String,
  run_id: Schema.String,
  repository_id: Schema.String,
  owner: Schema.String,
  name: Schema.String,
  number: Schema.Int,
  head_sha: Schema.String
})
export type ReviewDeliveryPayload = typeof ReviewDeliveryPayload.Type

/** What a review effect records before it is posted: everything the call needs, no secret. */
export const ReviewEffectRequest = Schema.Struct({
  commit_id: Schema.String,
  body: Schema.String,
  comments: Schema.Array(
    Schema.Struct({
      fingerprint: Schema.String,
      path: Schema.String,
      body: Schema.String,
      line: Schema.Number,
      side: Schema.Literals(["LEFT", "RIGHT"]),
      start_line: Schema.optional(Schema.Number)
    })
  ),
  resolved: Schema.Array(Schema.String),
  /** The check run's summary once the review is posted. */
  check_summary: Schema.optional(Schema.String)
})
export type ReviewEffectRequest = typeof ReviewEffectRequest.Type

/** What a description effect records: the agent's text; the body is built from the one GitHub has at the call. */
export const DescriptionEffectRequest = Schema.Struct({ description: Schema.String })

export const reviewEffectKey = (runId: string) => `github.review:${runId}`
export const descriptionEffectKey = (runId: string) => `github.pr_description:${runId}`

/** The marker a review's body carries: how a delivery that may have posted finds what it posted. */
export const reviewMarker = (runId: string) => `<!-- bosun:review:${runId} -->`
export const findingMarker = (fingerprint: string) => `<!-- bosun:finding:${fingerprint} -->`
const FINDING_MARKER = /<!-- bosun:finding:([A-Za-z0-9:_-]+) -->/

/** A delivery that ended for good: the queue dead-letters it at once (replayable). */
class ReviewNotPosted extends Schema.TaggedError<ReviewNotPosted>()("ReviewNotPosted", {
  message: Schema.String
}) {
  readonly unretryable = true
}

export const makeReviewDelivery = Effect.gen(function* () {
  const effects = yield* ProviderEffectsRepo
  const findings = yield* ReviewFindingsRepo
  const pullRequests = yield* PullRequestsRepo
  const pulls = yield* GitHubPulls

  /** Posts what is not posted yet; answers the check run's summary. */
  const post = Effect.fnUntraced(function* (job: ReviewDeliveryPayload) {
    const pr: PullRef = {
      organizationId: job.organization_id,
      repository: { owner: job.owner, name: job.name },
      number: job.number
    }
    const ref = { organizationId: job.organization_id, repositoryId: job.repository_id, number: job.number }
    const key = reviewEffectKey(job.run_id)
    const effect = yield* effects.find(job.organization_id, key)
    if (Option.isNone(effect)) return yield* Effect.die(new Error(`the review effect ${key} was not recorded`))
    const request = yield* Schema.decodeUnknownEffect(ReviewEffectRequest)(effect.value.request).pipe(Effect.orDie)
    if (effect.value.status !== "SUCCEEDED") {
      yield* effects.attempted(job.organization_id, key)
      // A PENDING review may have been posted before a crash or a lost answer: GitHub is asked first.
      const existing = effect.value.attempts > 0 ? yield* pulls.findReview(pr, reviewMarker(job.run_id)) : Option.none()
      const reviewId = Option.isSome(existing)
        ? existing.value
        : yield* pulls.createReview(pr, {
            commitId: request.commit_id,
            body: request.body,
            comments: request.comments.map(
              (comment): ReviewCommentDraft => ({
                path: comment.path,
                body: comment.body,
                line: comment.line,
                side: comment.side,
                startLine: comment.start_line
              })
            )
          })
      const posted = yield* pulls.reviewComments(pr, reviewId)
      const threads = posted.length === 0 ? [] : yield* pulls.reviewThreads(pr)
      const threadOf = new Map(threads.flatMap((thread) => thread.commentIds.map((id) => [id, thread.id] as const)))
      yield* findings.recordPosted(ref, {
        runId: job.run_id,
        githubReviewId: reviewId,
        comments: posted.flatMap((comment) => {
          const fingerprint = FINDING_MARKER.exec(comment.body)?.[1]
          return fingerprint === undefined
            ? []
            : [{ fingerprint, commentId: comment.id, threadId: threadOf.get(comment.id) ?? null }]
        })
      })
      yield* effects.succeed(job.organization_id, key, { review_id: reviewId })
      yield* pullRequests.setReviewStatus(job.organization_id, ref, "REVIEWED")
    }
    const descriptionKey = descriptionEffectKey(job.run_id)
    const describe = yield* effects.find(job.organization_id, descriptionKey)
    if (Option.isSome(describe) && describe.value.status !== "SUCCEEDED") {
      const { description } = yield* Schema.decodeUnknownEffect(DescriptionEffectRequest)(describe.value.request).pipe(
        Effect.orDie
      )
      yield* effects.attempted(job.organization_id, descriptionKey)
      const details = yield* pulls.details(pr)
      if (details.headSha !== job.head_sha) {
        // The push queued a newer review, whose description this older one must not overwrite.
        yield* effects.succeed(job.organization_id, descriptionKey, { updated: false, superseded: true })
      } else {
        // Built from the body GitHub has now, so a PATCH that landed before a crash is not repeated.
        const body = withDescription(details.body, description)
        if (body !== details.body) yield* pulls.updateBody(pr, body)
        yield* effects.succeed(job.organization_id, descriptionKey, { updated: body !== details.body })
      }
    }
    // Resolving is idempotent on GitHub, so a delivery that runs again resolves them again.
    const toResolve = yield* findings.threadsOf(ref, request.resolved)
    yield* Effect.forEach(toResolve, (threadId) => pulls.resolveThread(pr, threadId), { discard: true })
    return request.check_summary ?? ""
  })

  const check = (job: ReviewDeliveryPayload, conclusion: "success" | "failure", title: string, summary: string) =>
    pulls.checkRun(
      job.organization_id,
      { owner: job.owner, name: job.name },
      {
        name: REVIEW_CHECK_NAME,
        headSha: job.head_sha,
        conclusion,
        title,
        summary,
        externalId: reviewCheckId(job.run_id)
      }
    )

  /** Ends a delivery that will not succeed by itself: said once in the log, on the pull request and its check run. */
  const giveUp = Effect.fnUntraced(function* (
    job: ReviewDeliveryPayload,
    error: GitHubAppError,
    delivery: EffectDelivery
  ) {
    yield* Effect.logError("review_delivery_failed").pipe(
      Effect.annotateLogs({
        org_id: job.organization_id,
        run_id: job.run_id,
        step: "publish",
        provider: "github",
        deliveries: delivery.deliveries,
        retryable: retryableGithubError(error),
        ...(error.status === undefined ? {} : { http_status: error.status }),
        error: error.message
      })
    )
    yield* effects.failedAttempt(job.organization_id, reviewEffectKey(job.run_id), error.message)
    yield* pullRequests.setReviewStatus(
      job.organization_id,
      { repositoryId: job.repository_id, number: job.number },
      "FAILED"
    )
    const { title, summary } = deliveryFailureCheck({ runId: job.run_id, error })
    yield* check(job, "failure", title, summary).pipe(
      Effect.catch((checkError) =>
        Effect.logError("review_failure_check_run_failed").pipe(
          Effect.annotateLogs({ run_id: job.run_id, provider: "github", error: checkError.message })
        )
      )
    )
    return yield* new ReviewNotPosted({ message: error.message })
  })

  const deliver = Effect.fn("ReviewDelivery.deliver")(function* (payload: unknown, delivery: EffectDelivery) {
    const job = yield* Schema.decodeUnknownEffect(ReviewDeliveryPayload)(payload).pipe(Effect.orDie)
    yield* Effect.annotateCurrentSpan({ "bosun.run_id": job.run_id, "bosun.org_id": job.organization_id })
    const outcome = yield* Effect.result(post(job))
    if (outcome._tag === "Success") {
      // The review is on the pull request: a check run GitHub refuses (an App without the checks
      // permission) is said in the log, and does not make the posted review a failure.
      return yield* check(
        job,
        "success",
        "Review posted",
        outcome.success === "" ? "The review is posted." : outcome.success
      ).pipe(
        Effect.catch((error) =>
          retryableGithubError(error) && !delivery.last
            ? Effect.fail(error)
            : Effect.logError("review_check_run_failed").pipe(
                Effect.annotateLogs({
                  org_id: job.organization_id,
                  run_id: job.run_id,
                  provider: "github",
                  ...(error.status === undefined ? {} : { http_status: error.status }),
                  error: error.message
                })
              )
        ),
        Effect.asVoid
      )
    }
    const error = outcome.failure
    if (retryableGithubError(error) && !delivery.last) {
      yield* Effect.logWarning("review_delivery_failed").pipe(
        Effect.annotateLogs({
          org_id: job.organization_id,
          run_id: job.run_id,
          step: "publish",
          provider: "github",
          deliveries: delivery.deliveries,
          retryable: true,
          ...(error.status === undefined ? {} : { http_status: error.status }),
          error: error.message
        })
      )
      yield* effects.failedAttempt(job.organization_id, reviewEffectKey(job.run_id), error.message)
      return yield* error
    }
    return yield* giveUp(job, error, delivery)
  })

  return [[GITHUB_REVIEW_DELIVERY, deliver]] as const
})

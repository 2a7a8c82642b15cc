/**
 * Posting a review that publish decided (docs/interface.md: What the service does 9): a
 * `github.review_delivery` row on `bosun-effects`, handled here apart from the run, so GitHub
 * failing never touches the agent's run. Publish records the plan, the review's provider effect
 * (`github.review:{run}`, everything the call needs) and this row in one transaction; this handler
 * then posts the review — first looking for it by the marker its body carries, since an earlier
 * delivery may have posted it before a crash or a lost answer; the effect's row is locked
 * meanwhile, so two deliveries of one run never both post — matches its comments to findings by
 * their markers, puts the agent's description into the pull request body, resolves the threads of
 * resolved findings, and ends the run's "Bosun review" check run `success` with what was posted (a
 * `github.check_run` row, serialized with the run's other check-run states). Each part is
 * idempotent: a delivery that runs again repeats nothing GitHub already has.
 *
 * A failure that may pass (GitHub unreachable, 5xx, a rate limit longer than a call waits) fails
 * the delivery for the queue to retry (a rate limit after waiting as long as GitHub asked, up to
 * a minute); one that will not (GitHub refusing the request, a GraphQL
 * error) and a retryable one on its last delivery end it: one error line, the pull request's
 * review status FAILED and the check run `failure` quoting GitHub — and the message goes to
 * `bosun-effects-dlq`, from which `bosun queues dead-letters replay` posts it once GitHub takes it.
 * Once the review is posted, the description and the thread resolutions are follow-ups: one that
 * will not succeed is logged at error and does not make the posted review a failure.
 */
import { Duration, Effect, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { type EffectDelivery, MAX_RETRY_AFTER } from "../../outbound/effects/EffectOnce.ts"
import { ProviderEffectsRepo } from "../../outbound/effects/ProviderEffectsRepo.ts"
import { type GitHubAppError, retryableGithubError } from "../../outbound/github/GitHubClient.ts"
import { GitHubPulls, type PullRef, type ReviewCommentDraft } from "../../outbound/github/GitHubPulls.ts"
import { type CheckRun, GITHUB_CHECK_RUN } from "../../outbound/github/GithubEffects.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import { contribute, EffectHandlers, outboxHandler } from "../../platform/storage/OutboxHandlers.ts"
import { PullRequestsRepo } from "../repositories/index.ts"
import { withDescription } from "./PrDescription.ts"
import { deliveryFailureCheck, reviewCheckRun } from "./ReviewFailure.ts"
import { ReviewFindingsRepo } from "./ReviewFindingsRepo.ts"

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

/** The services a delivery uses, gathered once when the handler is built. */
const makeDeliveryServices = Effect.gen(function* () {
  return {
    sql: yield* SqlClient.SqlClient,
    outbox: yield* Outbox,
    effects: yield* ProviderEffectsRepo,
    findings: yield* ReviewFindingsRepo,
    pullRequests: yield* PullRequestsRepo,
    pulls: yield* GitHubPulls
  }
})

type DeliveryServices = Effect.Success<typeof makeDeliveryServices>

const pullOf = (job: ReviewDeliveryPayload): PullRef => ({
  organizationId: job.organization_id,
  repository: { owner: job.owner, name: job.name },
  number: job.number
})
const refOf = (job: ReviewDeliveryPayload) => ({
  organizationId: job.organization_id,
  repositoryId: job.repository_id,
  number: job.number
})

const requestOf = Effect.fnUntraced(function* (effects: DeliveryServices["effects"], job: ReviewDeliveryPayload) {
  const key = reviewEffectKey(job.run_id)
  const effect = yield* effects.find(job.organization_id, key)
  if (Option.isNone(effect)) return yield* Effect.die(new Error(`the review effect ${key} was not recorded`))
  return {
    effect: effect.value,
    request: yield* Schema.decodeUnknownEffect(ReviewEffectRequest)(effect.value.request).pipe(Effect.orDie)
  }
})

/**
 * Posts the review unless it is posted: with its effect's row locked (a second delivery waits,
 * then finds it SUCCEEDED), GitHub asked first for the review carrying the run's marker.
 */
const postReview = Effect.fnUntraced(function* (
  services: DeliveryServices,
  job: ReviewDeliveryPayload,
  request: ReviewEffectRequest
) {
  const { effects, pulls } = services
  const pr = pullOf(job)
  const key = reviewEffectKey(job.run_id)
  // Counted before the call, in its own commit: a crash during the call leaves it counted.
  yield* effects.attempted(job.organization_id, key)
  yield* services.sql
    .withTransaction(
      Effect.gen(function* () {
        const locked = yield* effects.lock(job.organization_id, key)
        if (Option.isNone(locked) || locked.value.status === "SUCCEEDED") return
        const existing = yield* pulls.findReview(pr, reviewMarker(job.run_id))
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
        yield* services.findings.recordPosted(refOf(job), {
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
        yield* services.pullRequests.setReviewStatus(job.organization_id, refOf(job), "REVIEWED")
      })
    )
    .pipe(Effect.catchTag("SqlError", (error) => Effect.die(error)))
})

/** The agent's description into the pull request's body, once. */
const describe = Effect.fnUntraced(function* (services: DeliveryServices, job: ReviewDeliveryPayload) {
  const { effects, pulls } = services
  const pr = pullOf(job)
  const key = descriptionEffectKey(job.run_id)
  const effect = yield* effects.find(job.organization_id, key)
  if (Option.isNone(effect) || effect.value.status === "SUCCEEDED") return
  const { description } = yield* Schema.decodeUnknownEffect(DescriptionEffectRequest)(effect.value.request).pipe(
    Effect.orDie
  )
  yield* effects.attempted(job.organization_id, key)
  const details = yield* pulls.details(pr)
  if (details.headSha !== job.head_sha) {
    // The push queued a newer review, whose description this older one must not overwrite.
    return yield* effects.succeed(job.organization_id, key, { updated: false, superseded: true })
  }
  // Built from the body GitHub has now, so a PATCH that landed before a crash is not repeated.
  const body = withDescription(details.body, description)
  if (body !== details.body) yield* pulls.updateBody(pr, body)
  yield* effects.succeed(job.organization_id, key, { updated: body !== details.body })
})

/** A step after the review is posted: retried while it may pass, else logged and let go. */
const followUp = (
  job: ReviewDeliveryPayload,
  delivery: EffectDelivery,
  what: string,
  effect: Effect.Effect<void, GitHubAppError>
) =>
  effect.pipe(
    Effect.catch((error) =>
      retryableGithubError(error) && !delivery.last
        ? Effect.fail(error)
        : Effect.logError("review_follow_up_failed").pipe(
            Effect.annotateLogs({
              org_id: job.organization_id,
              run_id: job.run_id,
              step: what,
              provider: "github",
              ...(error.status === undefined ? {} : { http_status: error.status }),
              error: error.message
            })
          )
    )
  )

/** The run's check run in a state, through the serialized `github.check_run` handler. */
const recordCheck = (
  outbox: DeliveryServices["outbox"],
  job: ReviewDeliveryPayload,
  state: string,
  conclusion: CheckRun["conclusion"],
  title: string,
  summary: string
) =>
  outbox
    .transaction(
      outbox.write(
        "bosun-effects",
        GITHUB_CHECK_RUN,
        reviewCheckRun(
          {
            organizationId: job.organization_id,
            owner: job.owner,
            name: job.name,
            headSha: job.head_sha,
            runId: job.run_id
          },
          `${state}:${job.run_id}`,
          { conclusion, title, summary }
        )
      )
    )
    .pipe(Effect.orDie, Effect.asVoid)

/** Ends a delivery that will not succeed by itself: said once in the log, on the pull request and its check run. */
const giveUp = Effect.fnUntraced(function* (
  services: DeliveryServices,
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
  yield* services.effects.failedAttempt(job.organization_id, reviewEffectKey(job.run_id), error.message)
  yield* services.pullRequests.setReviewStatus(job.organization_id, refOf(job), "FAILED")
  const { title, summary } = deliveryFailureCheck({ runId: job.run_id, error })
  // Keyed by the delivery, so a replay that fails again says so again.
  yield* recordCheck(
    services.outbox,
    job,
    `delivery_failed:${delivery.deliveries}:${Date.now()}`,
    "failure",
    title,
    summary
  )
  return yield* new ReviewNotPosted({ message: error.message })
})

/** Fails a delivery that may pass later, for the queue to retry, after waiting as long as GitHub asked. */
const retryLater = Effect.fnUntraced(function* (
  services: DeliveryServices,
  job: ReviewDeliveryPayload,
  error: GitHubAppError,
  delivery: EffectDelivery
) {
  yield* Effect.logWarning("review_delivery_failed").pipe(
    Effect.annotateLogs({
      org_id: job.organization_id,
      run_id: job.run_id,
      step: "publish",
      provider: "github",
      deliveries: delivery.deliveries,
      retryable: true,
      ...(error.status === undefined ? {} : { http_status: error.status }),
      ...(error.retryAfter === undefined ? {} : { retry_after_ms: Duration.toMillis(error.retryAfter) }),
      error: error.message
    })
  )
  yield* services.effects.failedAttempt(job.organization_id, reviewEffectKey(job.run_id), error.message)
  // A rate limit longer than a call waits: the next delivery comes no sooner than GitHub asked
  // (up to a minute a delivery), or five quick deliveries would dead-letter it within seconds.
  if (error.reason === "RateLimited" && error.retryAfter !== undefined) {
    yield* Effect.sleep(Duration.min(error.retryAfter, MAX_RETRY_AFTER))
  }
  return yield* error
})

const deliverReview = (services: DeliveryServices) =>
  Effect.fn("ReviewDelivery.deliver")(function* (job: typeof ReviewDeliveryPayload.Type, delivery: EffectDelivery) {
    yield* Effect.annotateCurrentSpan({ "bosun.run_id": job.run_id, "bosun.org_id": job.organization_id })
    const { request } = yield* requestOf(services.effects, job)
    const posted = yield* Effect.result(postReview(services, job, request))
    if (posted._tag === "Failure") {
      const error = posted.failure
      if (!retryableGithubError(error) || delivery.last) return yield* giveUp(services, job, error, delivery)
      return yield* retryLater(services, job, error, delivery)
    }
    yield* followUp(job, delivery, "describe", describe(services, job))
    // Resolving is idempotent on GitHub, so a delivery that runs again resolves them again.
    const toResolve = yield* services.findings.threadsOf(refOf(job), request.resolved)
    yield* followUp(
      job,
      delivery,
      "resolve",
      Effect.forEach(toResolve, (threadId) => services.pulls.resolveThread(pullOf(job), threadId), { discard: true })
    )
    yield* recordCheck(
      services.outbox,
      job,
      "success",
      "success",
      "Review posted",
      request.check_summary === undefined || request.check_summary === ""
        ? "The review is posted."
        : request.check_summary
    )
  })

export const makeReviewDelivery = Effect.gen(function* () {
  const services = yield* makeDeliveryServices
  return [outboxHandler(GITHUB_REVIEW_DELIVERY, ReviewDeliveryPayload, deliverReview(services))]
})

/** Adds the review delivery to the `bosun-effects` registry. */
export const ReviewDeliveryHandlersLive = contribute(EffectHandlers, makeReviewDelivery)

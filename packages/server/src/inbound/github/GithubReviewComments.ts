/**
 * The `pull_request_review_comment` step of the GitHub inbox: a person's reply in the thread of a
 * Bosun finding dismisses it, and feedback Bosun learns from (that reply, a reason-coded 👎, an
 * `@<slug> remember ...`) queues a `memory_distill` run. What feedback is, is MemoryFeedback's.
 */
import { Effect, Option, Schema } from "effect"
import { type DistillInput, memoryDistillRun } from "../../features/memories/MemoryDistillWorkflow.ts"
import { type Feedback, feedbackOf } from "../../features/memories/MemoryFeedback.ts"
import type { CommentedFinding } from "../../features/reviews/ReviewFindingsRepo.ts"
import type { GithubDelivery } from "./GithubDeliveriesRepo.ts"
import { PullRequestReviewCommentEvent } from "./GithubEvents.ts"
import {
  applied,
  COMMANDERS,
  decodeFailure,
  type Handled,
  type InboxContext,
  ignored,
  personOf,
  repositoryOf
} from "./GithubInboxContext.ts"

/** The `memory_distill` run's input: the feedback with its provenance, and the finding it answers. */
const distillInput = (
  event: PullRequestReviewCommentEvent,
  actor: string,
  feedback: Feedback,
  answered: CommentedFinding | null
): DistillInput => ({
  source: {
    type:
      feedback._tag === "Remember"
        ? "REMEMBER_COMMAND"
        : feedback._tag === "ThumbsDown"
          ? "THUMBS_DOWN"
          : "REVIEW_REPLY",
    url: event.comment.html_url ?? null,
    comment_id: event.comment.id,
    pull_request_number: event.pull_request.number,
    file_path: event.comment.path ?? answered?.path ?? null,
    finding_id: answered?.id ?? null,
    actor,
    reason_code: feedback._tag === "ThumbsDown" ? feedback.reason : null,
    text: (feedback.text === "" ? event.comment.body.trim() : feedback.text).slice(0, 4_000)
  },
  finding:
    answered === null ? null : { title: answered.title, category: answered.category, severity: answered.severity }
})

/**
 * A created reply: in the thread of an open Bosun finding it dismisses it (its reason keeps the
 * reply's first words); when it is also feedback, a `memory_distill` run is queued. Bots' replies,
 * Bosun's own included, change nothing.
 */
const applyReviewComment = Effect.fnUntraced(function* (
  ctx: InboxContext,
  delivery: GithubDelivery,
  event: PullRequestReviewCommentEvent
): Effect.fn.Return<Handled> {
  if (event.action !== "created") return ignored(`pull_request_review_comment ${event.action} changes nothing`)
  const author = personOf(event.comment.user)
  if (author === null) return ignored("a bot's reply dismisses nothing")
  const org = delivery.organizationId
  const repliedTo = event.comment.in_reply_to_id
  const finding = repliedTo === undefined ? Option.none() : yield* ctx.findings.byComment(org, repliedTo)
  const dismissed =
    repliedTo === undefined
      ? false
      : yield* ctx.findings.dismissByComment(
          org,
          repliedTo,
          `${author.login} replied: ${event.comment.body.trim().slice(0, 200)}`
        )
  const slug = Option.getOrElse(yield* ctx.apps.slug(org), () => "bosun")
  const feedback = feedbackOf(event.comment.body, slug, Option.isSome(finding))
  if (Option.isNone(feedback)) {
    if (dismissed) return applied(false)
    return ignored(
      repliedTo === undefined
        ? "not a reply to a review comment"
        : "the reply is not in the thread of an open Bosun finding"
    )
  }
  const association = event.comment.author_association
  if (feedback.value._tag === "Remember" && association !== undefined && !COMMANDERS.has(association)) {
    return ignored(`${author.login} (${association}) may not ask @${slug} to remember`)
  }
  if (feedback.value.text === "" && feedback.value._tag === "Remember") {
    return ignored(`@${slug} remember without a convention`)
  }
  const repository = yield* repositoryOf(ctx, org, event.repository)
  yield* ctx.runQueue.enqueue(
    memoryDistillRun(org, repository.id, distillInput(event, author.login, feedback.value, Option.getOrNull(finding)))
  )
  return applied(true)
})

export const handleReviewComment = (ctx: InboxContext, delivery: GithubDelivery) =>
  Schema.decodeUnknownEffect(PullRequestReviewCommentEvent)(delivery.payload).pipe(
    Effect.flatMap((event) => applyReviewComment(ctx, delivery, event)),
    Effect.catchTag("SchemaError", decodeFailure("pull_request_review_comment"))
  )

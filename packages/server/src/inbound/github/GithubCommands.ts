/**
 * The `@<slug>` commands given in a pull request's conversation comments (review, pause, resume,
 * remember): who may give one, what each does, and the one comment that answers it. Comments on
 * issues are GithubIssueComments.ts; parsing the mention is GithubMentions.ts.
 */
import type { Repository } from "@bosun/domain"
import { Duration, Effect, Option } from "effect"
import { memoryDistillRun } from "../../features/memories/MemoryDistillWorkflow.ts"
import { rememberText } from "../../features/memories/MemoryFeedback.ts"
import type { GithubDelivery } from "./GithubDeliveriesRepo.ts"
import type { IssueCommentEvent } from "./GithubEvents.ts"
import {
  applied,
  COMMANDERS,
  type Handled,
  type InboxContext,
  ignored,
  personOf,
  postComment,
  repositoryOf
} from "./GithubInboxContext.ts"
import { type Command, parseMention } from "./GithubMentions.ts"
import { notices, tooManyFilesNotice } from "./GithubNotices.ts"
import { queueReview } from "./GithubReviewQueue.ts"

/** Holding a transaction open on a GitHub call is bounded: past this the delivery fails and is retried. */
const GITHUB_CALL_TIMEOUT = Duration.seconds(20)

/** A command someone may give, where it was given, and how to answer it. */
interface GivenCommand {
  readonly ctx: InboxContext
  readonly delivery: GithubDelivery
  readonly event: IssueCommentEvent
  readonly slug: string
  readonly repository: Repository
  readonly number: number
  readonly author: string
  /** The delivery's one comment: its idempotency key is the delivery's. */
  readonly reply: (body: string) => Effect.Effect<void>
}

/** `remember <convention>`: queues a `memory_distill` run of it and thanks its author. */
const rememberCommand = Effect.fnUntraced(function* (given: GivenCommand): Effect.fn.Return<Handled> {
  const { ctx, event, slug } = given
  const text = Option.getOrElse(rememberText(event.comment.body, slug), () => "")
  if (text === "") {
    yield* given.reply(notices.rememberEmpty(slug))
    return ignored(`@${slug} remember without a convention; how to give one was posted`)
  }
  yield* ctx.runQueue.enqueue(
    memoryDistillRun(given.delivery.organizationId, given.repository.id, {
      source: {
        type: "REMEMBER_COMMAND",
        url: event.comment.html_url ?? event.issue.html_url ?? null,
        comment_id: event.comment.id,
        pull_request_number: given.number,
        file_path: null,
        finding_id: null,
        actor: given.author,
        reason_code: null,
        text: text.slice(0, 4_000)
      },
      finding: null
    })
  )
  yield* given.reply(notices.rememberQueued(given.author))
  return applied(true)
})

/** `pause` / `resume`: switches the repository's `enabled` and confirms, saying when nothing changed. */
const pauseOrResumeCommand = Effect.fnUntraced(function* (
  given: GivenCommand,
  command: "pause" | "resume"
): Effect.fn.Return<Handled> {
  const enabled = command === "resume"
  yield* given.ctx.repositories.setEnabled(given.delivery.organizationId, given.repository.id, enabled)
  const already = given.repository.enabled === enabled
  yield* given.reply(
    enabled ? notices.resumeDone(given.author, already) : notices.pauseDone(given.slug, given.author, already)
  )
  return applied(false)
})

/**
 * `review`: queues a review of the pull request's head as GitHub answers it now, whatever
 * review_on_*, drafts or excluded_authors say, but not on a paused repository nor over
 * max_changed_files.
 */
const reviewCommand = Effect.fnUntraced(function* (given: GivenCommand): Effect.fn.Return<Handled> {
  const { ctx, event, repository, number } = given
  const org = given.delivery.organizationId
  yield* ctx.pullRequests.upsert(org, {
    repositoryId: repository.id,
    number,
    title: event.issue.title,
    authorLogin: event.issue.user?.login ?? null,
    state:
      event.issue.state !== "closed"
        ? "OPEN"
        : (event.issue.pull_request?.merged_at ?? null) !== null
          ? "MERGED"
          : "CLOSED"
  })
  const ref = { repositoryId: repository.id, number }
  if (!repository.enabled) {
    yield* ctx.pullRequests.setReviewStatus(org, ref, "SKIPPED")
    yield* given.reply(notices.paused(given.slug))
    return ignored("no review: reviews are paused for this repository; a notice was posted")
  }
  // The head as it is now, not as of the comment; GitHub unreachable fails the delivery,
  // which the queue retries (the transaction rolls back, nothing is half-done).
  const details = yield* ctx.pulls
    .details({
      organizationId: org,
      repository: { owner: repository.owner, name: repository.name },
      number
    })
    .pipe(Effect.timeout(GITHUB_CALL_TIMEOUT), Effect.orDie)
  if (details.state === "closed") {
    yield* given.reply(notices.closed())
    return ignored("no review: the pull request is closed; a notice was posted")
  }
  const limit = (yield* ctx.configurations.effective(org, repository.id)).review_policy.max_changed_files
  if (details.changedFiles > limit) {
    yield* ctx.pullRequests.setReviewStatus(org, ref, "SKIPPED")
    yield* given.reply(tooManyFilesNotice(details.changedFiles, limit))
    return ignored(
      `no review: ${details.changedFiles} changed files are over max_changed_files (${limit}); a notice was posted`
    )
  }
  return yield* queueReview(
    ctx,
    org,
    repository,
    { number, headSha: details.headSha, baseSha: details.baseSha },
    { trigger: "command", delivery_id: given.delivery.deliveryId, requested_by: given.author }
  )
})

const runCommand = (given: GivenCommand, command: Command) => {
  switch (command) {
    case "remember":
      return rememberCommand(given)
    case "pause":
    case "resume":
      return pauseOrResumeCommand(given, command)
    case "review":
      return reviewCommand(given)
  }
}

/**
 * A created comment on a pull request: a person's `@<slug>` mention with a command is carried out
 * when they may give commands (OWNER, MEMBER, COLLABORATOR); others, and a mention without a known
 * command, get a comment saying so.
 */
export const commandOnPullRequest = Effect.fnUntraced(function* (
  ctx: InboxContext,
  delivery: GithubDelivery,
  event: IssueCommentEvent
): Effect.fn.Return<Handled> {
  const org = delivery.organizationId
  const author = personOf(event.comment.user)
  if (author === null) return ignored("a bot's comment gives no command")
  const found = yield* ctx.apps.slug(org)
  if (Option.isNone(found)) return ignored("the organization has no GitHub App to mention")
  const slug = found.value
  const mention = parseMention(event.comment.body, slug)
  if (Option.isNone(mention)) return ignored(`the comment does not mention @${slug} with a command`)
  const repository = yield* repositoryOf(ctx, org, event.repository)
  const number = event.issue.number
  const reply = (body: string) =>
    postComment(ctx, org, repository, number, `github.pr_comment:command:${delivery.deliveryId}`, body)
  if (mention.value._tag === "Unknown") {
    yield* reply(notices.help(slug, mention.value.word))
    return ignored(
      `@${slug} ${mention.value.word === "" ? "without a command" : `${mention.value.word} is no command`}; the commands were posted`
    )
  }
  const command = mention.value.command
  const association = event.comment.author_association
  if (!COMMANDERS.has(association)) {
    yield* reply(notices.refused(slug, author.login, association))
    return ignored(`${author.login} (${association}) may not give @${slug} ${command}; a refusal was posted`)
  }
  return yield* runCommand({ ctx, delivery, event, slug, repository, number, author: author.login, reply }, command)
})

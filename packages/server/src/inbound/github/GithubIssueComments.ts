/**
 * The `issue_comment` step of the GitHub inbox. A pull request's comments go to GithubCommands.ts;
 * on an issue, a person mentioning `@<slug>` makes the issue a work item and queues its intake
 * run, and later comments on that issue are its follow-ups.
 */
import { Effect, Option, Schema } from "effect"
import { commandOnPullRequest } from "./GithubCommands.ts"
import type { GithubDelivery } from "./GithubDeliveriesRepo.ts"
import { IssueCommentEvent } from "./GithubEvents.ts"
import {
  applied,
  COMMANDERS,
  decodeFailure,
  type Handled,
  type InboxContext,
  ignored,
  personOf,
  postComment,
  repositoryOf
} from "./GithubInboxContext.ts"
import { parseMention, withoutMentionOf } from "./GithubMentions.ts"
import { notices } from "./GithubNotices.ts"

/**
 * A comment on an issue (not a pull request): a person (OWNER, MEMBER or COLLABORATOR) mentioning
 * `@<slug>` makes the issue a work item (source SCM, session `github:{owner}/{name}:{number}`)
 * and queues its intake run; later comments on an issue that has one are its follow-ups.
 */
const issueWork = Effect.fnUntraced(function* (
  ctx: InboxContext,
  delivery: GithubDelivery,
  event: IssueCommentEvent
): Effect.fn.Return<Handled> {
  const org = delivery.organizationId
  const author = personOf(event.comment.user)
  if (author === null) return ignored("a bot's comment on an issue")
  const repository = yield* repositoryOf(ctx, org, event.repository)
  const number = event.issue.number
  const sessionKey = `github:${repository.owner}/${repository.name}:${number}`
  const found = yield* ctx.apps.slug(org)
  const slug = Option.getOrElse(found, () => "bosun")
  const text = withoutMentionOf(event.comment.body, slug)
  const [existing] = yield* ctx.sql<{ id: string }>`
    SELECT id FROM work_items WHERE organization_id = ${org} AND session_key = ${sessionKey}`.pipe(Effect.orDie)
  if (existing !== undefined) {
    const outcome = yield* ctx.followUps(
      org,
      { id: existing.id, sessionKey },
      { author: author.login, text, deliveryId: delivery.deliveryId }
    )
    return outcome === null ? applied(true) : ignored(outcome)
  }
  if (Option.isNone(found) || Option.isNone(parseMention(event.comment.body, slug))) {
    return ignored("a comment on an issue that does not mention the App")
  }
  if (!COMMANDERS.has(event.comment.author_association)) {
    yield* postComment(
      ctx,
      org,
      repository,
      number,
      `github.pr_comment:command:${delivery.deliveryId}`,
      notices.refused(slug, author.login, event.comment.author_association)
    )
    return ignored(
      `${author.login} (${event.comment.author_association}) may not give Bosun work; a refusal was posted`
    )
  }
  const { item } = yield* ctx.workItems.forSession(org, {
    kind: "TASK",
    source: "SCM",
    sessionKey,
    title: `#${number}: ${event.issue.title}`.slice(0, 500),
    summary: [event.issue.body ?? "", text]
      .filter((part) => part.trim() !== "")
      .join("\n\n")
      .slice(0, 4000),
    ...(event.issue.html_url === undefined ? {} : { sourceUrl: event.issue.html_url }),
    requestedByLogin: author.login,
    primaryRepositoryId: repository.id
  })
  yield* ctx.workItemRuns.enqueueIntake(org, { id: item.id, sessionKey, primaryRepositoryId: repository.id })
  return applied(true)
})

const applyIssueComment = Effect.fnUntraced(function* (
  ctx: InboxContext,
  delivery: GithubDelivery,
  event: IssueCommentEvent
): Effect.fn.Return<Handled> {
  if (event.action !== "created") return ignored(`issue_comment ${event.action} gives no command`)
  if (event.issue.pull_request === undefined) return yield* issueWork(ctx, delivery, event)
  return yield* commandOnPullRequest(ctx, delivery, event)
})

export const handleIssueComment = (ctx: InboxContext, delivery: GithubDelivery) =>
  Schema.decodeUnknownEffect(IssueCommentEvent)(delivery.payload).pipe(
    Effect.flatMap((event) => applyIssueComment(ctx, delivery, event)),
    Effect.catchTag("SchemaError", decodeFailure("issue_comment"))
  )

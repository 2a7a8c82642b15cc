/**
 * The `bosun-inbox` handler of GitHub deliveries (docs/interface.md: What the service does 6,
 * Events 3-4): the work a webhook's answer did not wait for, applied once through the inbox
 * pipeline Slack and Linear share (`inbound/ProcessDelivery.ts`): a redelivered wake-up does
 * nothing twice, deliveries about one pull request, issue, installation or repository's pushes are
 * applied in the order they arrived, and the delivery row records that it was processed, or why
 * it was ignored.
 *
 * - `installation` created / new_permissions_accepted / unsuspend: the organization is linked to
 *   the installation's account when it is the account the operator set it up for (its id, else
 *   its login; `bosun organizations link`), and the listed repositories appear, available; any
 *   other account is refused with a warn line and changes nothing; deleted / suspend: every repository of the organization becomes unavailable.
 * - `installation_repositories`: added ones appear (available), removed ones become unavailable.
 * - `pull_request`: the pull request's row follows it (title, author, OPEN / CLOSED / MERGED); a
 *   repository the organization does not have yet is recorded from the payload first. Opened,
 *   reopened, synchronize and ready_for_review ask the repository's review_policy (ReviewPolicy)
 *   whether to review; a review is a `review` run queued in this same transaction, its job keyed
 *   by the pull request both as session (one review of a pull request at a time) and as batch (a
 *   newer push supersedes a review still queued: only the newest head is reviewed), and the
 *   Scheduler is woken after the commit. A pull request over max_changed_files gets one short
 *   comment saying so instead (a `github.pr_comment` effect on `bosun-effects`, GithubEffects).
 *   The pull request's review status becomes QUEUED, or SKIPPED when the pull request itself is
 *   left out (paused repository, draft, excluded author, too many files); a review_on_* switch
 *   that is off leaves it as it was. Closed (merged or not) asks its queued or running review to
 *   stop (`requestSessionCancel`) and ends the work item following it (merged: COMPLETED, else
 *   CANCELLED); converted_to_draft does so for a queued one when review_drafts is off.
 * - `issue_comment` created on a pull request by a person, mentioning `@<app slug>` and a command
 *   (the first mention with a known one; quoted `>` lines and fenced code are not read, so quoting
 *   a command repeats nothing): only OWNER, MEMBER and COLLABORATOR may give one, others get a
 *   comment saying so. `review` queues a review of the pull request's head as GitHub answers it
 *   now (GitHub unreachable fails the delivery, which is retried), whatever review_on_*, drafts
 *   or excluded_authors say — but not on a paused repository (a comment says how to resume) nor
 *   over max_changed_files (the notice says why). `pause` / `resume` switch the repository's `enabled` and confirm in a
 *   comment; an unknown command gets the list of commands. Each delivery posts at most one comment
 *   (its idempotency key is the delivery's). Bots' comments do nothing.
 * - `issue_comment` created on an issue: a person (OWNER, MEMBER, COLLABORATOR) mentioning
 *   `@<app slug>` makes the issue a work item (source SCM, its repository as primary) and queues
 *   its intake run; others get a refusal. Later comments on that issue are its follow-ups
 *   (`features/workItems/FollowUps.ts`); the item's replies are comments on the issue.
 * - `push` to the repository's default branch records the branch and its new head, which deep
 *   scans pin to (a push older than the one recorded changes nothing); other branches, tags and
 *   deleted branches are ignored.
 * - `pull_request_review_comment` created as a person's reply in the thread of a Bosun finding:
 *   the finding is answered, so it is dismissed and never raised again (its reason keeps the
 *   reply's first words). Replies by bots (Bosun's own included) change nothing. GitHub sends no
 *   webhook for reactions, so a 👎 alone does not dismiss a finding.
 * - Feedback Bosun learns from (`features/memories/MemoryFeedback.ts`): a reply in a finding's
 *   thread, a reason-coded 👎 reply, and `@<slug> remember ...` (in a conversation comment, from
 *   someone who may give commands, or in a review thread) queue a `memory_distill` run in the
 *   same transaction (`features/memories/MemoryDistillWorkflow.ts`), which proposes a memory with the
 *   feedback's provenance or merges it into one that exists. A `remember` command is confirmed
 *   in a comment.
 *
 * A payload that lacks what its event needs is recorded as ignored with the decoding's message.
 * A database failure fails the message, which the queue retries and finally dead-letters.
 *
 * This module owns the delivery's transaction and routes it to its event's step (GithubInstallations,
 * GithubPullRequests, GithubIssueComments, GithubPush, GithubReviewComments); what each event does
 * is in those modules.
 */

import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { Effect, Option, Schema } from "effect"
import { Sharding } from "effect/cluster"
import { contribute, InboxHandlers, outboxHandler } from "../../platform/storage/OutboxHandlers.ts"
import { makeDeliveryProcessor } from "../ProcessDelivery.ts"
import { GithubDeliveriesRepo, type GithubDelivery } from "./GithubDeliveriesRepo.ts"
import { type Handled, type InboxContext, ignored, makeInboxContext } from "./GithubInboxContext.ts"
import { handleInstallation, handleInstallationRepositories } from "./GithubInstallations.ts"
import { handleIssueComment } from "./GithubIssueComments.ts"
import { handlePullRequest } from "./GithubPullRequests.ts"
import { handlePush } from "./GithubPush.ts"
import { handleReviewComment } from "./GithubReviewComments.ts"
import { GITHUB_DELIVERY_KIND } from "./GithubWebhooksHttp.ts"

/**
 * A `bosun-inbox` row of a GitHub delivery: which one to apply. Rows written before the pointer
 * named the organization carry only the delivery's id (unique across organizations).
 */
const GithubDeliveryPointer = Schema.Struct({
  delivery_id: Schema.String,
  organization_id: Schema.optional(Schema.String)
})

/** The step of the delivery's event. */
const handleEvent = (ctx: InboxContext, delivery: GithubDelivery): Effect.Effect<Handled> => {
  switch (delivery.event) {
    case "installation":
      return handleInstallation(ctx, delivery)
    case "installation_repositories":
      return handleInstallationRepositories(ctx, delivery)
    case "pull_request":
      return handlePullRequest(ctx, delivery)
    case "issue_comment":
      return handleIssueComment(ctx, delivery)
    case "push":
      return handlePush(ctx, delivery)
    case "pull_request_review_comment":
      return handleReviewComment(ctx, delivery)
    default:
      return Effect.succeed(ignored(`event ${delivery.event} is not handled`))
  }
}

/** The handler of `github.delivery` rows, for the `bosun-inbox` registry. */
export const makeGithubInboxHandler = Effect.gen(function* () {
  const ctx = yield* makeInboxContext
  const deliveries = yield* GithubDeliveriesRepo
  const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, yield* Sharding.Sharding)
  const process = yield* makeDeliveryProcessor("github", deliveries, (delivery) => handleEvent(ctx, delivery), wake)

  const handleDelivery = Effect.fn("GithubInbox.handleDelivery")(function* (
    pointer: typeof GithubDeliveryPointer.Type
  ) {
    const organizationId =
      pointer.organization_id === undefined
        ? yield* deliveries.organizationOf(pointer.delivery_id)
        : Option.some(pointer.organization_id)
    if (Option.isNone(organizationId)) return
    yield* process({ organization_id: organizationId.value, delivery_id: pointer.delivery_id })
  })

  return outboxHandler(GITHUB_DELIVERY_KIND, GithubDeliveryPointer, handleDelivery)
})

/** Adds the handler to the `bosun-inbox` registry. */
export const GithubInboxHandlersLive = contribute(
  InboxHandlers,
  Effect.map(makeGithubInboxHandler, (handler) => [handler])
)

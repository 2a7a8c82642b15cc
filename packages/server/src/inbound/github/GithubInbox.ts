/**
 * The `bosun-inbox` handler of GitHub deliveries (docs/interface.md: What the service does 6,
 * Events 3-4): the work a webhook's answer did not wait for. Each wake-up names an outbox row,
 * handled through `Outbox.handle` (a row already done is skipped), so a redelivered wake-up does
 * nothing twice; the delivery row then records that it was processed, or why it was ignored.
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
 */

import { enqueueRun, requestSessionCancel } from "@bosun/actors/jobs/RunQueue"
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import type { Repository } from "@bosun/domain"
import { Duration, Effect, Option, Schema } from "effect"
import { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../../features/agentConnections/ConfigurationRepo.ts"
import { OrganizationsRepo } from "../../features/identity/OrganizationsRepo.ts"
import { enqueueMemoryDistill } from "../../features/memories/MemoryDistillWorkflow.ts"
import { feedbackOf, rememberText } from "../../features/memories/MemoryFeedback.ts"
import { PullRequestsRepo } from "../../features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../../features/repositories/RepositoriesRepo.ts"
import { ReviewFindingsRepo } from "../../features/reviews/ReviewFindingsRepo.ts"
import { decideReview, type ReviewEvent } from "../../features/reviews/ReviewPolicy.ts"
import { REVIEW } from "../../features/reviews/ReviewWorkflow.ts"
import { makeFollowUps } from "../../features/workItems/FollowUps.ts"
import { enqueueIntake } from "../../features/workItems/WorkItemIntakeWorkflow.ts"
import { WorkItemsRepo } from "../../features/workItems/WorkItemsRepo.ts"
import { GitHubPulls } from "../../outbound/github/GitHubPulls.ts"
import { GithubAppsRepo } from "../../outbound/github/GithubAppsRepo.ts"
import { GITHUB_PR_COMMENT } from "../../outbound/github/GithubEffects.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import { GithubDeliveriesRepo, type GithubDelivery } from "./GithubDeliveriesRepo.ts"
import {
  type EventRepository,
  InstallationEvent,
  InstallationRepositoriesEvent,
  type InstallationRepository,
  IssueCommentEvent,
  PullRequestEvent,
  PullRequestReviewCommentEvent,
  PushEvent,
  splitFullName
} from "./GithubEvents.ts"

const DeliveryPointer = Schema.Struct({ delivery_id: Schema.String })

const REVIEW_ACTIONS = new Set(["opened", "reopened", "synchronize", "ready_for_review"])

/** GitHub's author associations of people with write access to the repository. */
const COMMANDERS: ReadonlySet<string> = new Set(["OWNER", "MEMBER", "COLLABORATOR"])

/** Holding a transaction open on a GitHub call is bounded: past this the delivery fails and is retried. */
const GITHUB_CALL_TIMEOUT = Duration.seconds(20)

const tooManyFilesNotice = (changed: number, limit: number) =>
  `Bosun did not review this pull request: it changes ${changed} files, over this repository's limit of ${limit} (review_policy.max_changed_files). Split it, or raise the limit and push again.`

const commandList = (slug: string) =>
  `\`@${slug} review\` reviews this pull request now, \`@${slug} pause\` pauses Bosun's reviews of this repository, \`@${slug} resume\` resumes them, \`@${slug} remember <convention>\` proposes a convention for Bosun's reviews.`

const notices = {
  help: (slug: string, word: string) =>
    `${word === "" ? `Bosun needs a command after \`@${slug}\`.` : `Bosun does not know the command \`${word}\`.`} ${commandList(slug)}`,
  refused: (slug: string, login: string, association: string) =>
    `@${login}, only the repository's owners, organization members and collaborators can give \`@${slug}\` commands (GitHub lists you as ${association}).`,
  paused: (slug: string) =>
    `Bosun's reviews are paused for this repository, so this pull request was not reviewed. Comment \`@${slug} resume\` to resume them.`,
  closed: () => "Bosun reviews open pull requests only; this one is closed.",
  pauseDone: (slug: string, login: string, already: boolean) =>
    `${already ? "Bosun's reviews of this repository were already paused" : `Bosun paused its reviews of this repository, as @${login} asked`}. Comment \`@${slug} resume\` to resume them.`,
  resumeDone: (login: string, already: boolean) =>
    already
      ? "Bosun's reviews of this repository were not paused; nothing changed."
      : `Bosun resumed its reviews of this repository, as @${login} asked.`,
  rememberEmpty: (slug: string) =>
    `Tell Bosun what to remember after the command: \`@${slug} remember <the convention, in a sentence>\`.`,
  rememberQueued: (login: string) =>
    `Thanks @${login}: Bosun will write this down as a proposed memory. An organization admin approves it in Bosun before reviews follow it.`
}

export type Command = "review" | "pause" | "resume" | "remember"
const COMMANDS: ReadonlySet<string> = new Set<Command>(["review", "pause", "resume", "remember"])
const isCommand = (word: string): word is Command => COMMANDS.has(word)

export type Mention =
  | { readonly _tag: "Command"; readonly command: Command }
  | { readonly _tag: "Unknown"; readonly word: string }

/**
 * What a comment asks of `@slug`: the first mention followed by a known command (any case), else
 * the word after the first mention ("" when none follows); None without a mention. Quoted lines
 * (`>`) and fenced code blocks are not read: quoting or pasting a command gives none.
 */
export const parseMention = (body: string, slug: string): Option.Option<Mention> => {
  const escaped = slug.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  const mention = new RegExp(`(?<![\\w@/.-])@${escaped}(?![\\w-])(?:[ \\t]+([A-Za-z][\\w-]*))?`, "gi")
  let fenced = false
  let first: Option.Option<Mention> = Option.none()
  for (const line of body.split(/\r?\n/)) {
    const trimmed = line.trimStart()
    if (/^(```|~~~)/.test(trimmed)) {
      fenced = !fenced
      continue
    }
    if (fenced || trimmed.startsWith(">")) continue
    for (const match of trimmed.matchAll(mention)) {
      const word = (match[1] ?? "").toLowerCase()
      if (isCommand(word)) return Option.some({ _tag: "Command", command: word })
      if (Option.isNone(first)) first = Option.some({ _tag: "Unknown", word })
    }
  }
  return first
}

/** The comment without its mentions of `@slug`: what a work item's conversation keeps. */
export const withoutMentionOf = (body: string, slug: string) => {
  const escaped = slug.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  return body
    .replace(new RegExp(`(?<![\\w@/.-])@${escaped}(?![\\w-])`, "gi"), " ")
    .replace(/[ \t]+/g, " ")
    .trim()
}

const reviewKey = (repositoryId: string, number: number) => `review:${repositoryId}:${number}`

/** The review_policy with every review_on_* switch on: what is left decides on the pull request itself. */
const everyEventOn = <P extends Record<string, unknown>>(policy: P): P => ({
  ...policy,
  review_on_open: true,
  review_on_reopen: true,
  review_on_push: true,
  review_on_ready: true
})

/** What processing a delivery came to: null when it was applied, else why it was not. */
type Outcome = string | null

/** Set while processing a delivery that queued or cancelled work: the Scheduler is woken once it committed. */
interface WakeFlag {
  wake: boolean
}

/** The handler of `github.delivery` rows; `app/InboxConsumer.ts` runs it. */
export const makeGithubInboxHandler = Effect.gen(function* () {
  const outbox = yield* Outbox
  const sql = yield* SqlClient.SqlClient
  const deliveries = yield* GithubDeliveriesRepo
  const organizations = yield* OrganizationsRepo
  const repositories = yield* RepositoriesRepo
  const pullRequests = yield* PullRequestsRepo
  const workItems = yield* WorkItemsRepo
  const { followUp: followUps } = yield* makeFollowUps
  const configurations = yield* ConfigurationRepo
  const findings = yield* ReviewFindingsRepo
  const apps = yield* GithubAppsRepo
  const pulls = yield* GitHubPulls
  const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, yield* Sharding.Sharding)

  const decodeFailure = (event: string) => (error: Schema.SchemaError) =>
    Effect.succeed<Outcome>(`the ${event} payload is not what GitHub documents: ${error.message.slice(0, 300)}`)

  const addRepositories = (organizationId: string, listed: ReadonlyArray<InstallationRepository>) =>
    Effect.forEach(
      listed,
      (repository) =>
        Effect.gen(function* () {
          const existing = yield* repositories.findByGithubId(organizationId, repository.id)
          const { owner, name } = splitFullName(repository.full_name)
          yield* repositories.upsert(organizationId, {
            githubRepositoryId: repository.id,
            owner,
            name,
            // Installation events do not say; the pull request and push events that follow do.
            defaultBranch: Option.match(existing, { onNone: () => "main", onSome: (found) => found.default_branch })
          })
        }),
      { discard: true }
    )

  /** The organization's repository for the event's, recorded from the payload when it has none yet. */
  const repositoryOf = (organizationId: string, repository: typeof EventRepository.Type) =>
    Effect.flatMap(repositories.findByGithubId(organizationId, repository.id), (found) =>
      Option.isSome(found)
        ? Effect.succeed(found.value)
        : repositories.upsert(organizationId, {
            githubRepositoryId: repository.id,
            owner: repository.owner.login,
            name: repository.name,
            defaultBranch: repository.default_branch ?? "main"
          })
    )

  /** One conversation comment on the pull request, posted after the commit by GithubEffects. */
  const postComment = (
    organizationId: string,
    repository: Repository,
    number: number,
    idempotencyKey: string,
    body: string
  ) =>
    outbox
      .write("bosun-effects", GITHUB_PR_COMMENT, {
        organization_id: organizationId,
        owner: repository.owner,
        name: repository.name,
        number,
        idempotency_key: idempotencyKey,
        body
      })
      .pipe(Effect.asVoid, Effect.orDie, Effect.provideService(SqlClient.SqlClient, sql))

  const queueReview = (
    organizationId: string,
    repository: Repository,
    pr: { readonly number: number; readonly headSha: string; readonly baseSha: string },
    inputSnapshot: Readonly<Record<string, unknown>>,
    flag: WakeFlag
  ) =>
    Effect.gen(function* () {
      const key = reviewKey(repository.id, pr.number)
      yield* enqueueRun({
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
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      yield* pullRequests.setReviewStatus(organizationId, { repositoryId: repository.id, number: pr.number }, "QUEUED")
      flag.wake = true
    })

  /**
   * Asks the pull request's reviews in `statuses` to stop (the Scheduler drops a queued one, a
   * running attempt stops its agent); answers how many were still going.
   */
  const cancelReviews = (
    organizationId: string,
    repositoryId: string,
    number: number,
    statuses: ReadonlyArray<"QUEUED" | "RUNNING">,
    flag: WakeFlag
  ) =>
    Effect.gen(function* () {
      const count = yield* requestSessionCancel(organizationId, reviewKey(repositoryId, number), statuses).pipe(
        Effect.provideService(SqlClient.SqlClient, sql)
      )
      if (count > 0) flag.wake = true
      return count
    })

  /**
   * Links the organization to the installation's account when it is the one the operator set the
   * organization up for; otherwise changes nothing, says why in one warn line with both logins,
   * and answers the reason the delivery is ignored (null when linked).
   */
  const linkInstallation = (org: string, account: { readonly id: number; readonly login: string }) =>
    Effect.gen(function* () {
      const link = yield* organizations.linkGithubAccount(org, account)
      if (link.linked) return null
      yield* Effect.logWarning("github_installation_link_refused").pipe(
        Effect.annotateLogs({
          org_id: org,
          expected_login: link.expectedLogin,
          installation_login: account.login,
          installation_account_id: account.id
        })
      )
      return link.expectedLogin === null
        ? `the organization is not set up for a GitHub account (bosun organizations link), so ${account.login} cannot link it`
        : `the organization is set up for the GitHub account ${link.expectedLogin}, not ${account.login}`
    })

  const installation = (delivery: GithubDelivery) =>
    Schema.decodeUnknownEffect(InstallationEvent)(delivery.payload).pipe(
      Effect.flatMap(
        Effect.fnUntraced(function* (event): Effect.fn.Return<Outcome> {
          const org = delivery.organizationId
          switch (event.action) {
            case "created":
            case "new_permissions_accepted":
            case "unsuspend": {
              const refused = yield* linkInstallation(org, event.installation.account)
              if (refused !== null) return refused
              yield* addRepositories(org, event.repositories ?? [])
              return null
            }
            case "deleted":
            case "suspend":
              yield* repositories.setAvailable(org, "ALL", false)
              return null
            default:
              return `installation action ${event.action} changes nothing here`
          }
        })
      ),
      Effect.catchTag("SchemaError", decodeFailure("installation"))
    )

  const installationRepositories = (delivery: GithubDelivery) =>
    Schema.decodeUnknownEffect(InstallationRepositoriesEvent)(delivery.payload).pipe(
      Effect.flatMap(
        Effect.fnUntraced(function* (event): Effect.fn.Return<Outcome> {
          const org = delivery.organizationId
          const refused = yield* linkInstallation(org, event.installation.account)
          if (refused !== null) return refused
          yield* addRepositories(org, event.repositories_added)
          yield* repositories.setAvailable(
            org,
            event.repositories_removed.map((repository) => repository.id),
            false
          )
          return null
        })
      ),
      Effect.catchTag("SchemaError", decodeFailure("installation_repositories"))
    )

  const pullRequest = (delivery: GithubDelivery, flag: WakeFlag) =>
    Schema.decodeUnknownEffect(PullRequestEvent)(delivery.payload).pipe(
      Effect.flatMap(
        Effect.fnUntraced(function* (event): Effect.fn.Return<Outcome> {
          const org = delivery.organizationId
          const repository = yield* repositoryOf(org, event.repository)
          const pr = event.pull_request
          const ref = { repositoryId: repository.id, number: pr.number }
          yield* pullRequests.upsert(org, {
            repositoryId: repository.id,
            number: pr.number,
            title: pr.title,
            authorLogin: pr.user?.login ?? null,
            state: pr.state === "open" ? "OPEN" : pr.merged === true ? "MERGED" : "CLOSED"
          })
          if (event.action === "closed") {
            // Nothing is left to review; a review that still publishes sets REVIEWED after this.
            const cancelled = yield* cancelReviews(org, repository.id, pr.number, ["QUEUED", "RUNNING"], flag)
            if (cancelled > 0) yield* pullRequests.setReviewStatus(org, ref, "SKIPPED")
            // A work item following this pull request ends with it.
            yield* workItems.pullRequestClosed(org, repository.id, pr.number, pr.merged === true)
            return null
          }
          if (event.action === "converted_to_draft") {
            const policy = (yield* configurations.effective(org, repository.id)).review_policy
            if (policy.review_drafts) return null
            // A running review is left to finish: the head it reviews was ready when it started.
            const cancelled = yield* cancelReviews(org, repository.id, pr.number, ["QUEUED"], flag)
            if (cancelled > 0) yield* pullRequests.setReviewStatus(org, ref, "SKIPPED")
            return null
          }
          if (pr.state !== "open" || !REVIEW_ACTIONS.has(event.action)) return null
          const policy = (yield* configurations.effective(org, repository.id)).review_policy
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
              yield* pullRequests.setReviewStatus(org, ref, "SKIPPED")
            }
            return `no review: ${decision.reason}`
          }
          const changedFiles = pr.changed_files ?? 0
          if (changedFiles > policy.max_changed_files) {
            yield* postComment(
              org,
              repository,
              pr.number,
              `github.pr_comment:too_many_files:${repository.id}:${pr.number}:${pr.head.sha}`,
              tooManyFilesNotice(changedFiles, policy.max_changed_files)
            )
            yield* pullRequests.setReviewStatus(org, ref, "SKIPPED")
            return `no review: ${changedFiles} changed files are over max_changed_files (${policy.max_changed_files}); a notice was posted`
          }
          yield* queueReview(
            org,
            repository,
            { number: pr.number, headSha: pr.head.sha, baseSha: pr.base.sha },
            { trigger: event.action, delivery_id: delivery.deliveryId },
            flag
          )
          return null
        })
      ),
      Effect.catchTag("SchemaError", decodeFailure("pull_request"))
    )

  /**
   * A comment on an issue (not a pull request): a person (OWNER, MEMBER or COLLABORATOR) mentioning
   * `@<slug>` makes the issue a work item (source SCM, session `github:{owner}/{name}:{number}`)
   * and queues its intake run; later comments on an issue that has one are its follow-ups.
   */
  const issueWork = (delivery: GithubDelivery, event: IssueCommentEvent, flag: WakeFlag) =>
    Effect.gen(function* () {
      const org = delivery.organizationId
      const author = event.comment.user
      if (author === null || author.type === "Bot" || author.login.toLowerCase().endsWith("[bot]"))
        return "a bot's comment on an issue"
      const repository = yield* repositoryOf(org, event.repository)
      const number = event.issue.number
      const sessionKey = `github:${repository.owner}/${repository.name}:${number}`
      const found = yield* apps.slug(org)
      const slug = Option.getOrElse(found, () => "bosun")
      const text = withoutMentionOf(event.comment.body, slug)
      const [existing] = yield* sql<{ id: string }>`
        SELECT id FROM work_items WHERE organization_id = ${org} AND session_key = ${sessionKey}`.pipe(Effect.orDie)
      if (existing !== undefined) {
        const outcome = yield* followUps(
          org,
          { id: existing.id, sessionKey },
          { author: author.login, text, deliveryId: delivery.deliveryId }
        )
        if (outcome === null) flag.wake = true
        return outcome
      }
      if (Option.isNone(found) || Option.isNone(parseMention(event.comment.body, slug))) {
        return "a comment on an issue that does not mention the App"
      }
      if (!COMMANDERS.has(event.comment.author_association)) {
        yield* postComment(
          org,
          repository,
          number,
          `github.pr_comment:command:${delivery.deliveryId}`,
          notices.refused(slug, author.login, event.comment.author_association)
        )
        return `${author.login} (${event.comment.author_association}) may not give Bosun work; a refusal was posted`
      }
      const { item } = yield* workItems.forSession(org, {
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
      yield* enqueueIntake(org, { id: item.id, sessionKey, primaryRepositoryId: repository.id }).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.provideService(WorkItemsRepo, workItems),
        Effect.provideService(RepositoriesRepo, repositories)
      )
      flag.wake = true
      return null
    })

  const issueComment = (delivery: GithubDelivery, flag: WakeFlag) =>
    Schema.decodeUnknownEffect(IssueCommentEvent)(delivery.payload).pipe(
      Effect.flatMap(
        Effect.fnUntraced(function* (event): Effect.fn.Return<Outcome> {
          const org = delivery.organizationId
          if (event.action !== "created") return `issue_comment ${event.action} gives no command`
          if (event.issue.pull_request === undefined) return yield* issueWork(delivery, event, flag)
          const author = event.comment.user
          // Bosun's own comments quote its commands: a bot never gives one, or they would loop.
          if (author === null || author.type === "Bot" || author.login.toLowerCase().endsWith("[bot]"))
            return "a bot's comment gives no command"
          const found = yield* apps.slug(org)
          if (Option.isNone(found)) return "the organization has no GitHub App to mention"
          const slug = found.value
          const mention = parseMention(event.comment.body, slug)
          if (Option.isNone(mention)) return `the comment does not mention @${slug} with a command`
          const repository = yield* repositoryOf(org, event.repository)
          const number = event.issue.number
          const reply = (body: string) =>
            postComment(org, repository, number, `github.pr_comment:command:${delivery.deliveryId}`, body)
          if (mention.value._tag === "Unknown") {
            yield* reply(notices.help(slug, mention.value.word))
            return `@${slug} ${mention.value.word === "" ? "without a command" : `${mention.value.word} is no command`}; the commands were posted`
          }
          const command = mention.value.command
          const association = event.comment.author_association
          if (!COMMANDERS.has(association)) {
            yield* reply(notices.refused(slug, author.login, association))
            return `${author.login} (${association}) may not give @${slug} ${command}; a refusal was posted`
          }
          switch (command) {
            case "remember": {
              const text = Option.getOrElse(rememberText(event.comment.body, slug), () => "")
              if (text === "") {
                yield* reply(notices.rememberEmpty(slug))
                return `@${slug} remember without a convention; how to give one was posted`
              }
              yield* enqueueMemoryDistill(org, repository.id, {
                source: {
                  type: "REMEMBER_COMMAND",
                  url: event.comment.html_url ?? event.issue.html_url ?? null,
                  comment_id: event.comment.id,
                  pull_request_number: number,
                  file_path: null,
                  finding_id: null,
                  actor: author.login,
                  reason_code: null,
                  text: text.slice(0, 4_000)
                },
                finding: null
              }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
              flag.wake = true
              yield* reply(notices.rememberQueued(author.login))
              return null
            }
            case "pause":
            case "resume": {
              const enabled = command === "resume"
              yield* repositories.setEnabled(org, repository.id, enabled)
              const already = repository.enabled === enabled
              yield* reply(
                enabled ? notices.resumeDone(author.login, already) : notices.pauseDone(slug, author.login, already)
              )
              return null
            }
            case "review": {
              yield* pullRequests.upsert(org, {
                repositoryId: repository.id,
                number,
                title: event.issue.title,
                authorLogin: event.issue.user?.login ?? null,
                state:
                  event.issue.state !== "closed"
                    ? "OPEN"
                    : (event.issue.pull_request.merged_at ?? null) !== null
                      ? "MERGED"
                      : "CLOSED"
              })
              const ref = { repositoryId: repository.id, number }
              if (!repository.enabled) {
                yield* pullRequests.setReviewStatus(org, ref, "SKIPPED")
                yield* reply(notices.paused(slug))
                return "no review: reviews are paused for this repository; a notice was posted"
              }
              // The head as it is now, not as of the comment; GitHub unreachable fails the delivery,
              // which the queue retries (the transaction rolls back, nothing is half-done).
              const details = yield* pulls
                .details({
                  organizationId: org,
                  repository: { owner: repository.owner, name: repository.name },
                  number
                })
                .pipe(Effect.timeout(GITHUB_CALL_TIMEOUT), Effect.orDie)
              if (details.state === "closed") {
                yield* reply(notices.closed())
                return "no review: the pull request is closed; a notice was posted"
              }
              const limit = (yield* configurations.effective(org, repository.id)).review_policy.max_changed_files
              if (details.changedFiles > limit) {
                yield* pullRequests.setReviewStatus(org, ref, "SKIPPED")
                yield* reply(tooManyFilesNotice(details.changedFiles, limit))
                return `no review: ${details.changedFiles} changed files are over max_changed_files (${limit}); a notice was posted`
              }
              yield* queueReview(
                org,
                repository,
                { number, headSha: details.headSha, baseSha: details.baseSha },
                { trigger: "command", delivery_id: delivery.deliveryId, requested_by: author.login },
                flag
              )
              return null
            }
          }
        })
      ),
      Effect.catchTag("SchemaError", decodeFailure("issue_comment"))
    )

  const push = (delivery: GithubDelivery) =>
    Schema.decodeUnknownEffect(PushEvent)(delivery.payload).pipe(
      Effect.flatMap(
        Effect.fnUntraced(function* (event): Effect.fn.Return<Outcome> {
          const branch = event.repository.default_branch
          if (event.ref !== `refs/heads/${branch}`) return `a push to ${event.ref}, not to the default branch ${branch}`
          if (event.deleted) return `the push deleted the default branch ${branch}`
          const org = delivery.organizationId
          const repository = yield* repositoryOf(org, event.repository)
          const pushedAt = event.repository.pushed_at
          const recorded = yield* repositories.setDefaultBranchHead(org, repository.id, {
            branch,
            sha: event.after,
            pushedAt:
              pushedAt === undefined || pushedAt === null
                ? null
                : new Date(typeof pushedAt === "number" ? pushedAt * 1000 : pushedAt)
          })
          return recorded ? null : `a newer push to ${branch} is already recorded`
        })
      ),
      Effect.catchTag("SchemaError", decodeFailure("push"))
    )

  const reviewComment = (delivery: GithubDelivery, flag: WakeFlag) =>
    Schema.decodeUnknownEffect(PullRequestReviewCommentEvent)(delivery.payload).pipe(
      Effect.flatMap(
        Effect.fnUntraced(function* (event): Effect.fn.Return<Outcome> {
          if (event.action !== "created") return `pull_request_review_comment ${event.action} changes nothing`
          const author = event.comment.user
          if (author === null || author.type === "Bot" || author.login.toLowerCase().endsWith("[bot]"))
            return "a bot's reply dismisses nothing"
          const org = delivery.organizationId
          const repliedTo = event.comment.in_reply_to_id
          const finding = repliedTo === undefined ? Option.none() : yield* findings.byComment(org, repliedTo)
          const dismissed =
            repliedTo === undefined
              ? false
              : yield* findings.dismissByComment(
                  org,
                  repliedTo,
                  `${author.login} replied: ${event.comment.body.trim().slice(0, 200)}`
                )
          const slug = Option.getOrElse(yield* apps.slug(org), () => "bosun")
          const feedback = feedbackOf(event.comment.body, slug, Option.isSome(finding))
          if (Option.isNone(feedback)) {
            if (dismissed) return null
            return repliedTo === undefined
              ? "not a reply to a review comment"
              : "the reply is not in the thread of an open Bosun finding"
          }
          const association = event.comment.author_association
          if (feedback.value._tag === "Remember" && association !== undefined && !COMMANDERS.has(association)) {
            return `${author.login} (${association}) may not ask @${slug} to remember`
          }
          if (feedback.value.text === "" && feedback.value._tag === "Remember") {
            return `@${slug} remember without a convention`
          }
          const repository = yield* repositoryOf(org, event.repository)
          const answered = Option.getOrNull(finding)
          yield* enqueueMemoryDistill(org, repository.id, {
            source: {
              type:
                feedback.value._tag === "Remember"
                  ? "REMEMBER_COMMAND"
                  : feedback.value._tag === "ThumbsDown"
                    ? "THUMBS_DOWN"
                    : "REVIEW_REPLY",
              url: event.comment.html_url ?? null,
              comment_id: event.comment.id,
              pull_request_number: event.pull_request.number,
              file_path: event.comment.path ?? answered?.path ?? null,
              finding_id: answered?.id ?? null,
              actor: author.login,
              reason_code: feedback.value._tag === "ThumbsDown" ? feedback.value.reason : null,
              text: (feedback.value.text === "" ? event.comment.body.trim() : feedback.value.text).slice(0, 4_000)
            },
            finding:
              answered === null
                ? null
                : { title: answered.title, category: answered.category, severity: answered.severity }
          }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
          flag.wake = true
          return null
        })
      ),
      Effect.catchTag("SchemaError", decodeFailure("pull_request_review_comment"))
    )

  const process = (delivery: GithubDelivery, flag: WakeFlag): Effect.Effect<Outcome> => {
    switch (delivery.event) {
      case "installation":
        return installation(delivery)
      case "installation_repositories":
        return installationRepositories(delivery)
      case "pull_request":
        return pullRequest(delivery, flag)
      case "issue_comment":
        return issueComment(delivery, flag)
      case "push":
        return push(delivery)
      case "pull_request_review_comment":
        return reviewComment(delivery, flag)
      default:
        return Effect.succeed(`event ${delivery.event} is not handled`)
    }
  }

  const handleDelivery = Effect.fn("GithubInbox.handleDelivery")(function* (payload: unknown) {
    const pointer = yield* Schema.decodeUnknownEffect(DeliveryPointer)(payload).pipe(Effect.orDie)
    // Per delivery: the consumer handles several deliveries at once.
    const flag: WakeFlag = { wake: false }
    // Applied and marked in one transaction, the row locked: a crash between the two, or a
    // second consumer with the same wake-up, would otherwise apply it twice.
    yield* outbox
      .transaction(
        Effect.gen(function* () {
          const found = yield* deliveries.find(pointer.delivery_id, { forUpdate: true })
          if (Option.isNone(found) || found.value.processedAt !== null) return
          const delivery = found.value
          const outcome = yield* process(delivery, flag)
          yield* deliveries.markProcessed(delivery.deliveryId, outcome)
          yield* Effect.logInfo("github_delivery_processed").pipe(
            Effect.annotateLogs({
              org_id: delivery.organizationId,
              delivery_id: delivery.deliveryId,
              event: delivery.event,
              action: delivery.action,
              ignored_reason: outcome
            })
          )
        })
      )
      .pipe(Effect.orDie)
    if (flag.wake) yield* wake
  })

  return handleDelivery
})

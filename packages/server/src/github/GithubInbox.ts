/**
 * The `bosun-inbox` consumer for GitHub deliveries (issue 8; spec: What the service does 6, Events
 * 3-4): the work a webhook's answer did not wait for. Each wake-up names an outbox row, handled
 * through `Outbox.handle` (a row already done is skipped), so a redelivered wake-up does nothing
 * twice; the delivery row then records that it was processed, or why it was ignored.
 *
 * - `installation` created / new_permissions_accepted / unsuspend: the organization is linked to
 *   the installation's account (unless it mirrors another already) and the listed repositories
 *   appear, available; deleted / suspend: every repository of the organization becomes unavailable.
 * - `installation_repositories`: added ones appear (available), removed ones become unavailable.
 * - `pull_request`: the pull request's row follows it (title, author, OPEN / CLOSED / MERGED); a
 *   repository the organization does not have yet is recorded from the payload first. Opened,
 *   reopened, synchronize and ready_for_review ask the repository's review_policy (ReviewPolicy)
 *   whether to review; a review is a `review` run queued in this same transaction, its job keyed
 *   by the pull request both as session (one review of a pull request at a time) and as batch (a
 *   newer push supersedes a review still queued: only the newest head is reviewed), and the
 *   Scheduler is woken after the commit. A pull request over max_changed_files gets one short
 *   comment saying so instead (a `github.pr_comment` effect on `bosun-effects`, GithubEffects).
 * - `pull_request_review_comment` created as a person's reply in the thread of a Bosun finding:
 *   the finding is answered, so it is dismissed and never raised again (its reason keeps the
 *   reply's first words). Replies by bots (Bosun's own included) change nothing. GitHub sends no
 *   webhook for reactions, so a 👎 alone does not dismiss a finding.
 *
 * A payload that lacks what its event needs is recorded as ignored with the decoding's message.
 * A database failure fails the message, which the queue retries and finally dead-letters.
 */
import { enqueueRun } from "@bosun/actors/jobs/RunQueue"
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { Effect, Layer, Option, Schema } from "effect"
import { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { GITHUB_DELIVERY_KIND } from "../http/GithubWebhooksHttp.ts"
import { ConfigurationRepo } from "../persistence/ConfigurationRepo.ts"
import { GithubDeliveriesRepo, type GithubDelivery } from "../persistence/GithubDeliveriesRepo.ts"
import { Migrator } from "../persistence/Migrator.ts"
import { OrganizationsRepo } from "../persistence/OrganizationsRepo.ts"
import { PullRequestsRepo } from "../persistence/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../persistence/RepositoriesRepo.ts"
import { ReviewFindingsRepo } from "../persistence/ReviewFindingsRepo.ts"
import { decideReview } from "../review/ReviewPolicy.ts"
import { Outbox } from "../storage/Outbox.ts"
import { Queues } from "../storage/Queue.ts"
import { REVIEW } from "../workflows/ReviewWorkflow.ts"
import { GITHUB_PR_COMMENT } from "./GithubEffects.ts"
import {
  InstallationEvent,
  InstallationRepositoriesEvent,
  type InstallationRepository,
  PullRequestEvent,
  PullRequestReviewCommentEvent,
  splitFullName
} from "./GithubEvents.ts"

const DeliveryPointer = Schema.Struct({ delivery_id: Schema.String })

const REVIEW_ACTIONS = new Set(["opened", "reopened", "synchronize", "ready_for_review"])

const tooManyFilesNotice = (changed: number, limit: number) =>
  `Bosun did not review this pull request: it changes ${changed} files, over this repository's limit of ${limit} (review_policy.max_changed_files). Split it, or raise the limit and push again.`

/** What processing a delivery came to: null when it was applied, else why it was not. */
type Outcome = string | null

export const GithubInboxLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const queues = yield* Queues
    const outbox = yield* Outbox
    const migrator = yield* Migrator
    const sql = yield* SqlClient.SqlClient
    const deliveries = yield* GithubDeliveriesRepo
    const organizations = yield* OrganizationsRepo
    const repositories = yield* RepositoriesRepo
    const pullRequests = yield* PullRequestsRepo
    const configurations = yield* ConfigurationRepo
    const findings = yield* ReviewFindingsRepo
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

    const installation = (delivery: GithubDelivery) =>
      Schema.decodeUnknownEffect(InstallationEvent)(delivery.payload).pipe(
        Effect.flatMap(
          Effect.fnUntraced(function* (event): Effect.fn.Return<Outcome> {
            const org = delivery.organizationId
            switch (event.action) {
              case "created":
              case "new_permissions_accepted":
              case "unsuspend": {
                const linked = yield* organizations.linkGithubAccount(org, event.installation.account)
                if (!linked)
                  return `the organization mirrors another GitHub account than ${event.installation.account.login}`
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
            const linked = yield* organizations.linkGithubAccount(org, event.installation.account)
            if (!linked)
              return `the organization mirrors another GitHub account than ${event.installation.account.login}`
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

    /** `queued` is set when the delivery queued a run: the Scheduler is woken once it committed. */
    const pullRequest = (delivery: GithubDelivery, flag: { queued: boolean }) =>
      Schema.decodeUnknownEffect(PullRequestEvent)(delivery.payload).pipe(
        Effect.flatMap(
          Effect.fnUntraced(function* (event): Effect.fn.Return<Outcome> {
            const org = delivery.organizationId
            const found = yield* repositories.findByGithubId(org, event.repository.id)
            const repository = Option.isSome(found)
              ? found.value
              : yield* repositories.upsert(org, {
                  githubRepositoryId: event.repository.id,
                  owner: event.repository.owner.login,
                  name: event.repository.name,
                  defaultBranch: event.repository.default_branch ?? "main"
                })
            const pr = event.pull_request
            yield* pullRequests.upsert(org, {
              repositoryId: repository.id,
              number: pr.number,
              title: pr.title,
              authorLogin: pr.user?.login ?? null,
              state: pr.state === "open" ? "OPEN" : pr.merged === true ? "MERGED" : "CLOSED"
            })
            if (pr.state !== "open" || !REVIEW_ACTIONS.has(event.action)) return null
            const policy = (yield* configurations.effective(org, repository.id)).review_policy
            const decision = decideReview(policy, {
              action: event.action,
              draft: pr.draft ?? false,
              authorLogin: pr.user?.login ?? null,
              repositoryEnabled: repository.enabled
            })
            if (!decision.review) return `no review: ${decision.reason}`
            const changedFiles = pr.changed_files ?? 0
            if (changedFiles > policy.max_changed_files) {
              yield* outbox
                .write("bosun-effects", GITHUB_PR_COMMENT, {
                  organization_id: org,
                  owner: repository.owner,
                  name: repository.name,
                  number: pr.number,
                  idempotency_key: `github.pr_comment:too_many_files:${repository.id}:${pr.number}:${pr.head.sha}`,
                  body: tooManyFilesNotice(changedFiles, policy.max_changed_files)
                })
                .pipe(Effect.orDie, Effect.provideService(SqlClient.SqlClient, sql))
              return `no review: ${changedFiles} changed files are over max_changed_files (${policy.max_changed_files}); a notice was posted`
            }
            const key = `review:${repository.id}:${pr.number}`
            yield* enqueueRun({
              organizationId: org,
              repositoryId: repository.id,
              workflowType: REVIEW,
              lane: "REVIEW",
              sessionKey: key,
              batchKey: key,
              headSha: pr.head.sha,
              baseSha: pr.base.sha,
              pullRequestNumber: pr.number,
              inputSnapshot: { trigger: event.action, delivery_id: delivery.deliveryId }
            }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
            flag.queued = true
            return null
          })
        ),
        Effect.catchTag("SchemaError", decodeFailure("pull_request"))
      )

    const reviewComment = (delivery: GithubDelivery) =>
      Schema.decodeUnknownEffect(PullRequestReviewCommentEvent)(delivery.payload).pipe(
        Effect.flatMap(
          Effect.fnUntraced(function* (event): Effect.fn.Return<Outcome> {
            const repliedTo = event.comment.in_reply_to_id
            if (event.action !== "created" || repliedTo === undefined) return "not a reply to a review comment"
            if (event.comment.user === null || event.comment.user.type === "Bot")
              return "a bot's reply dismisses nothing"
            const reason = `${event.comment.user.login} replied: ${event.comment.body.trim().slice(0, 200)}`
            const dismissed = yield* findings.dismissByComment(delivery.organizationId, repliedTo, reason)
            return dismissed ? null : "the reply is not in the thread of an open Bosun finding"
          })
        ),
        Effect.catchTag("SchemaError", decodeFailure("pull_request_review_comment"))
      )

    const process = (delivery: GithubDelivery, flag: { queued: boolean }): Effect.Effect<Outcome> => {
      switch (delivery.event) {
        case "installation":
          return installation(delivery)
        case "installation_repositories":
          return installationRepositories(delivery)
        case "pull_request":
          return pullRequest(delivery, flag)
        case "pull_request_review_comment":
          return reviewComment(delivery)
        default:
          return Effect.succeed(`event ${delivery.event} is not handled`)
      }
    }

    const handleDelivery = Effect.fn("GithubInbox.handleDelivery")(function* (payload: unknown) {
      const pointer = yield* Schema.decodeUnknownEffect(DeliveryPointer)(payload).pipe(Effect.orDie)
      // Per delivery: the consumer handles several deliveries at once.
      const flag = { queued: false }
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
      if (flag.queued) yield* wake
    })

    yield* migrator.awaitReady.pipe(
      Effect.andThen(
        queues.consume("bosun-inbox", (message) =>
          outbox.handle(message, (row) =>
            row.kind === GITHUB_DELIVERY_KIND
              ? handleDelivery(row.payload)
              : Effect.die(new Error(`bosun-inbox has no handler for kind ${row.kind}`))
          )
        )
      ),
      Effect.forkScoped
    )
  })
)

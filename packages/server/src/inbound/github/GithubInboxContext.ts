/**
 * What every step of the GitHub inbox works with: the services, taken once when the handler is
 * made; what a step answers (`Handled`); the helpers several events share (the event's repository,
 * a comment on the pull request, who is a person and who may give commands). Handles no event.
 */
import { RunQueue } from "@bosun/actors/jobs/RunQueue"
import type { Repository } from "@bosun/domain"
import { Effect, Option, type Schema } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../../features/agentConnections/ConfigurationRepo.ts"
import { OrganizationsRepo } from "../../features/identity/OrganizationsRepo.ts"
import { PullRequestsRepo } from "../../features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../../features/repositories/RepositoriesRepo.ts"
import { ReviewFindingsRepo } from "../../features/reviews/ReviewFindingsRepo.ts"
import { makeFollowUps } from "../../features/workItems/FollowUps.ts"
import { WorkItemRuns } from "../../features/workItems/WorkItemRuns.ts"
import { WorkItemsRepo } from "../../features/workItems/WorkItemsRepo.ts"
import { GitHubPulls } from "../../outbound/github/GitHubPulls.ts"
import { GithubAppsRepo } from "../../outbound/github/GithubAppsRepo.ts"
import { GITHUB_PR_COMMENT } from "../../outbound/github/GithubEffects.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import type { DeliveryOutcome } from "../ProcessDelivery.ts"
import type { EventRepository } from "./GithubEvents.ts"

/** The services the steps use. */
export const makeInboxContext = Effect.gen(function* () {
  return {
    outbox: yield* Outbox,
    sql: yield* SqlClient.SqlClient,
    runQueue: yield* RunQueue,
    workItemRuns: yield* WorkItemRuns,
    organizations: yield* OrganizationsRepo,
    repositories: yield* RepositoriesRepo,
    pullRequests: yield* PullRequestsRepo,
    workItems: yield* WorkItemsRepo,
    followUps: (yield* makeFollowUps).followUp,
    configurations: yield* ConfigurationRepo,
    findings: yield* ReviewFindingsRepo,
    apps: yield* GithubAppsRepo,
    pulls: yield* GitHubPulls
  }
})

export type InboxContext = Effect.Success<typeof makeInboxContext>

/**
 * What a step came to: why the delivery was ignored (null when it was applied), and whether it
 * queued or cancelled work, in which case the Scheduler is woken once the transaction committed
 * (before, it would not see the rows).
 */
export type Handled = DeliveryOutcome

export const applied = (wakeScheduler: boolean): Handled => ({ ignoredReason: null, wakeScheduler })

export const ignored = (reason: string): Handled => ({ ignoredReason: reason, wakeScheduler: false })

/** A payload that lacks what its event needs is recorded as ignored rather than half-applied. */
export const decodeFailure = (event: string) => (error: Schema.SchemaError) =>
  Effect.succeed(ignored(`the ${event} payload is not what GitHub documents: ${error.message.slice(0, 300)}`))

/** GitHub's author associations of people with write access to the repository. */
export const COMMANDERS: ReadonlySet<string> = new Set(["OWNER", "MEMBER", "COLLABORATOR"])

/**
 * The comment's author when a person wrote it; null for a bot or a deleted account. Bosun's own
 * comments quote its commands: a bot is never listened to, or they would loop.
 */
export const personOf = <User extends { readonly login: string; readonly type?: string | undefined }>(
  user: User | null
): User | null => (user === null || user.type === "Bot" || user.login.toLowerCase().endsWith("[bot]") ? null : user)

/** The organization's repository for the event's, recorded from the payload when it has none yet. */
export const repositoryOf = (
  ctx: InboxContext,
  organizationId: string,
  repository: typeof EventRepository.Type
): Effect.Effect<Repository> =>
  Effect.flatMap(ctx.repositories.findByGithubId(organizationId, repository.id), (found) =>
    Option.isSome(found)
      ? Effect.succeed(found.value)
      : ctx.repositories.upsert(organizationId, {
          githubRepositoryId: repository.id,
          owner: repository.owner.login,
          name: repository.name,
          defaultBranch: repository.default_branch ?? "main"
        })
  )

/** One conversation comment on the pull request, posted after the commit by GithubEffects. */
export const postComment = (
  ctx: InboxContext,
  organizationId: string,
  repository: Repository,
  number: number,
  idempotencyKey: string,
  body: string
) =>
  ctx.outbox
    .write("bosun-effects", GITHUB_PR_COMMENT, {
      organization_id: organizationId,
      owner: repository.owner,
      name: repository.name,
      number,
      idempotency_key: idempotencyKey,
      body
    })
    .pipe(Effect.asVoid, Effect.orDie)

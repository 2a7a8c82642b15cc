/**
 * The implement run of an approved work item (an approved item runs the agent with write access and
 * opens a pull request (draft or ready per issue_pull_request_mode) → the PR link is posted back to
 * the thread/ticket → the item follows the PR): a `work_item_implement` RunAttemptWorkflow on the
 * AGENT lane, queued by APPROVE (the actions endpoint or an approving reply) on the item's session.
 *
 * - prepare: the approved plan and a checkout of the item's repository at its default branch's
 *   head (the approved secondary repositories read-only beside it, the team's approved memories in
 *   the instructions); the agent changes files there and writes `outputs/implement.json`
 *   (`ImplementOutput`).
 *   issue_pull_request_mode DISABLED fails the run at once (`pull_requests_disabled`).
 * - publish: the pull request is a `github.pull_request` provider effect keyed by the run. Unless
 *   it succeeded already, an attempted one is first looked for by its branch
 *   (`bosun/wi-<item>-<run>`); otherwise the runtime's `changes.diff` (ChangeSet) is applied to the
 *   default branch's files as GitHub has them now and committed as one commit through the Git
 *   Data API, the branch is pointed at it and the pull request opened (draft per the mode), its
 *   body the agent's summary and the plan. No change, a binary file or a patch that no longer
 *   applies fails the run with a message naming why. Then, in one transaction, the item follows
 *   the pull request (REVIEWING) and the link is queued as the reply to its thread or ticket.
 * - reportFailure: the item is FAILED and the thread is told why, as for intake.
 *
 * The agent's workspace holds only a clone token; the branch, commit and pull request are made by
 * Bosun with the installation token, so nothing the agent runs can write to GitHub.
 */
import type { AttemptRun, PublishInput, WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import { CHANGES_PATH, IMPLEMENT_OUTPUT_PATH, ImplementOutput } from "@bosun/domain"
import { Effect, Option, Result, Schema } from "effect"
import { type ProviderEffect, ProviderEffectsRepo } from "../../outbound/effects/ProviderEffectsRepo.ts"
import { GitHubApp } from "../../outbound/github/GitHubApp.ts"
import { githubAttemptError } from "../../outbound/github/GitHubAttemptError.ts"
import { type CommitFile, GitHubBranches, type RepositoryOf } from "../../outbound/github/GitHubBranches.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import { applyChange, parseChanges } from "./ChangeSet.ts"
import { IMPLEMENT_INSTRUCTIONS, implementPrompt } from "./ImplementInstructions.ts"
import { replyEffect } from "./WorkItemReplies.ts"
import { CHECKOUT, fail, fullName, makeWorkItemRunSetup, workItemAttempt } from "./WorkItemRunSetup.ts"
import { WORK_ITEM_IMPLEMENT } from "./WorkItemRuns.ts"
import { WorkItemsRepo } from "./WorkItemsRepo.ts"

const IMPLEMENT_TIME_LIMIT_SECONDS = 3600

const decodeOutput = Schema.decodeUnknownEffect(Schema.fromJsonString(ImplementOutput))

const PullResult = Schema.Struct({ number: Schema.Int, url: Schema.String })

const fromGithub = githubAttemptError

export const branchFor = (itemId: string, runId: string) => `bosun/wi-${itemId.slice(0, 8)}-${runId.slice(0, 8)}`

/** The services the implement run's steps use, gathered once when the workflow type is built. */
const makeImplementServices = Effect.gen(function* () {
  return {
    workItems: yield* WorkItemsRepo,
    repositories: yield* RepositoriesRepo,
    effects: yield* ProviderEffectsRepo,
    app: yield* GitHubApp,
    branches: yield* GitHubBranches,
    outbox: yield* Outbox,
    setup: yield* makeWorkItemRunSetup
  }
})

type ImplementServices = Effect.Success<typeof makeImplementServices>

const subjectOf = Effect.fnUntraced(function* (
  services: ImplementServices,
  run: Pick<AttemptRun, "organizationId" | "repositoryId" | "inputSnapshot">
) {
  const found = yield* services.setup.itemOf(run)
  if (found.plan === null) return yield* fail("plan_missing", "The work item has no approved plan to implement")
  if (run.repositoryId === null) return yield* fail("repository_missing", "The work item names no repository")
  const repository = yield* services.repositories.find(run.organizationId, run.repositoryId)
  if (Option.isNone(repository) || !repository.value.available) {
    return yield* fail("repository_missing", "The work item's repository is no longer connected")
  }
  return { found, plan: found.plan, repository: repository.value }
})

type ImplementSubject = Effect.Success<ReturnType<typeof subjectOf>>

const prepareImplement = Effect.fnUntraced(function* (services: ImplementServices, run: AttemptRun) {
  const { agentOf, checkoutOf, withConventions, withSecondaryRepositories } = services.setup
  const { found, plan, repository } = yield* subjectOf(services, run)
  const { configuration, credentials, settings } = yield* agentOf(run)
  if (configuration.issue_pull_request_mode === "DISABLED") {
    return yield* fail(
      "pull_requests_disabled",
      `issue_pull_request_mode is DISABLED for ${fullName(repository)}: Bosun opens no pull requests there`
    )
  }
  return yield* withSecondaryRepositories(
    run.organizationId,
    configuration,
    workItemAttempt(settings, run, {
      prompt: implementPrompt({
        repository: fullName(repository),
        title: plan.title,
        plan: plan.plan,
        request: found.item.summary ?? "",
        checkoutPath: CHECKOUT
      }),
      instructions: yield* withConventions(run, IMPLEMENT_INSTRUCTIONS),
      repositories: [yield* checkoutOf(run.organizationId, repository)],
      time_limit_seconds: IMPLEMENT_TIME_LIMIT_SECONDS,
      provider_credentials: credentials
    })
  )
})

/** Where the pull request goes: the item's repository and Bosun's branch for this run. */
interface PullTarget {
  readonly subject: ImplementSubject
  readonly at: RepositoryOf
  readonly branch: string
}

/**
 * The runtime's `changes.diff` applied to the default branch as GitHub has it now, committed on
 * Bosun's branch, and the pull request opened from it.
 */
const pushChanges = Effect.fnUntraced(function* (
  services: ImplementServices,
  file: PublishInput["file"],
  target: PullTarget,
  pull: { readonly draft: boolean; readonly summary: string }
) {
  const { branches } = services
  const { at, branch } = target
  const { found, plan, repository } = target.subject
  const parsed = parseChanges(new TextDecoder().decode(yield* file(CHANGES_PATH)), CHECKOUT)
  if (Result.isFailure(parsed)) return yield* fail("changes_unsupported", parsed.failure)
  const changes = parsed.success
  if (changes.length === 0) {
    return yield* fail("no_changes", "The agent changed no file, so there is no pull request to open")
  }
  const base = yield* Effect.mapError(
    services.app.branchHead(at.organizationId, at.repository, repository.default_branch),
    fromGithub
  )
  const files: Array<CommitFile> = []
  for (const change of changes) {
    const before =
      change.kind === "ADD"
        ? undefined
        : Option.getOrUndefined(yield* Effect.mapError(branches.fileAt(at, change.path, base), fromGithub))
    const after = applyChange(change, before)
    if (after === undefined) {
      return yield* fail(
        "changes_do_not_apply",
        `The change to ${change.path} no longer applies to ${repository.default_branch}: it changed meanwhile`
      )
    }
    files.push({ path: change.path, content: after, mode: change.mode })
  }
  const commit = yield* Effect.mapError(branches.commit(at, { base, message: plan.title, files }), fromGithub)
  yield* Effect.mapError(branches.pointBranch(at, branch, commit), fromGithub)
  return yield* Effect.mapError(
    branches.openPull(at, {
      title: plan.title,
      head: branch,
      base: repository.default_branch,
      draft: pull.draft,
      body: [
        pull.summary,
        `### Plan\n\n${plan.plan}`,
        `Opened by Bosun for work item ${found.item.id}${found.item.source_url === null ? "" : ` (${found.item.source_url})`}.`
      ].join("\n\n")
    }),
    fromGithub
  )
})

/**
 * The run's pull request as a provider effect: one an earlier attempt opened is found by its
 * branch, else the changes are pushed and it is opened.
 */
const openPullRequest = Effect.fnUntraced(function* (
  services: ImplementServices,
  run: AttemptRun,
  file: PublishInput["file"],
  target: PullTarget & { readonly key: string; readonly recorded: Option.Option<ProviderEffect> }
) {
  const { effects } = services
  const { key, recorded, branch } = target
  const { plan, repository } = target.subject
  const output = yield* decodeOutput(new TextDecoder().decode(yield* file(IMPLEMENT_OUTPUT_PATH))).pipe(
    Effect.mapError((error) =>
      fail(
        "implement_output_invalid",
        `The agent's summary does not match the output contract: ${error.message.split("\n").slice(0, 3).join(" ")}`
      )
    )
  )
  const { configuration } = yield* services.setup.agentOf(run)
  const draft = configuration.issue_pull_request_mode !== "READY"
  yield* effects.begin({
    organizationId: run.organizationId,
    runId: run.runId,
    kind: "github.pull_request",
    idempotencyKey: key,
    request: { repository: fullName(repository), branch, title: plan.title, draft }
  })

  const attempted = Option.isSome(recorded) && recorded.value.attempts > 0
  yield* effects.attempted(run.organizationId, key)
  const existing = attempted
    ? yield* Effect.mapError(services.branches.findPull(target.at, branch), fromGithub)
    : Option.none()
  const pull = Option.isSome(existing)
    ? existing.value
    : yield* pushChanges(services, file, target, { draft, summary: output.summary })
  yield* effects.succeed(run.organizationId, key, { number: pull.number, url: pull.url })
  return pull
})

const publishImplement = Effect.fnUntraced(function* (services: ImplementServices, { run, file }: PublishInput) {
  const { outbox } = services
  const subject = yield* subjectOf(services, run)
  const { found, plan, repository } = subject
  const at = {
    organizationId: run.organizationId,
    repository: { owner: repository.owner, name: repository.name }
  }
  const key = `github.pull_request:${run.runId}`
  const branch = branchFor(found.item.id, run.runId)
  const recorded = yield* services.effects.find(run.organizationId, key)
  const pull =
    Option.isSome(recorded) && recorded.value.status === "SUCCEEDED"
      ? yield* Schema.decodeUnknownEffect(PullResult)(recorded.value.result).pipe(Effect.orDie)
      : yield* openPullRequest(services, run, file, { subject, at, branch, key, recorded })
  const reply = replyEffect(
    run.organizationId,
    found.sessionKey,
    `Opened ${pull.url} for review: ${plan.title}`,
    `work_item.pull_request:${run.runId}`
  )
  yield* outbox
    .transaction(
      Effect.gen(function* () {
        const updated = yield* services.workItems.recordPullRequest(run.organizationId, found.item.id, run.runId, pull)
        if (Option.isNone(updated) || Option.isNone(reply)) return
        yield* outbox.write("bosun-effects", reply.value.kind, reply.value.payload)
      })
    )
    .pipe(Effect.mapError((error) => fail("pull_request_unrecorded", error.message, true)))
})

export const workItemImplementWorkflow = Effect.gen(function* () {
  const services = yield* makeImplementServices
  const type: WorkflowType = {
    lane: "AGENT",
    outputs: [IMPLEMENT_OUTPUT_PATH, CHANGES_PATH],
    prepare: (run) => prepareImplement(services, run),
    publish: (input) => publishImplement(services, input)
  }

  const reportFailure: NonNullable<WorkflowType["reportFailure"]> = (report) =>
    services.setup.reportFailure(report, "open the pull request")

  return { [WORK_ITEM_IMPLEMENT]: { ...type, reportFailure } }
})

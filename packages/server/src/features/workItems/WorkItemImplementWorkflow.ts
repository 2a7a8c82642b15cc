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
import type { AttemptRun, WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import { CHANGES_PATH, IMPLEMENT_OUTPUT_PATH, ImplementOutput } from "@bosun/domain"
import { Effect, Option, Result, Schema } from "effect"
import { ProviderEffectsRepo } from "../../outbound/effects/ProviderEffectsRepo.ts"
import { GitHubApp } from "../../outbound/github/GitHubApp.ts"
import { githubAttemptError } from "../../outbound/github/GitHubAttemptError.ts"
import { type CommitFile, GitHubBranches } from "../../outbound/github/GitHubBranches.ts"
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

export const workItemImplementWorkflow = Effect.gen(function* () {
  const workItems = yield* WorkItemsRepo
  const repositories = yield* RepositoriesRepo
  const effects = yield* ProviderEffectsRepo
  const app = yield* GitHubApp
  const branches = yield* GitHubBranches
  const outbox = yield* Outbox
  const setup = yield* makeWorkItemRunSetup
  const { itemOf, agentOf, checkoutOf, withConventions, withSecondaryRepositories } = setup

  const subjectOf = Effect.fnUntraced(function* (
    run: Pick<AttemptRun, "organizationId" | "repositoryId" | "inputSnapshot">
  ) {
    const found = yield* itemOf(run)
    if (found.plan === null) return yield* fail("plan_missing", "The work item has no approved plan to implement")
    if (run.repositoryId === null) return yield* fail("repository_missing", "The work item names no repository")
    const repository = yield* repositories.find(run.organizationId, run.repositoryId)
    if (Option.isNone(repository) || !repository.value.available) {
      return yield* fail("repository_missing", "The work item's repository is no longer connected")
    }
    return { found, plan: found.plan, repository: repository.value }
  })

  const type: WorkflowType = {
    lane: "AGENT",
    outputs: [IMPLEMENT_OUTPUT_PATH, CHANGES_PATH],
    prepare: (run) =>
      Effect.gen(function* () {
        const { found, plan, repository } = yield* subjectOf(run)
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
      }),
    publish: ({ run, file }) =>
      Effect.gen(function* () {
        const { found, plan, repository } = yield* subjectOf(run)
        const at = {
          organizationId: run.organizationId,
          repository: { owner: repository.owner, name: repository.name }
        }
        const key = `github.pull_request:${run.runId}`
        const branch = branchFor(found.item.id, run.runId)
        const recorded = yield* effects.find(run.organizationId, key)
        let pull: { readonly number: number; readonly url: string }
        if (Option.isSome(recorded) && recorded.value.status === "SUCCEEDED") {
          pull = yield* Schema.decodeUnknownEffect(PullResult)(recorded.value.result).pipe(Effect.orDie)
        } else {
          const output = yield* decodeOutput(new TextDecoder().decode(yield* file(IMPLEMENT_OUTPUT_PATH))).pipe(
            Effect.mapError((error) =>
              fail(
                "implement_output_invalid",
                `The agent's summary does not match the output contract: ${error.message.split("\n").slice(0, 3).join(" ")}`
              )
            )
          )
          const { configuration } = yield* agentOf(run)
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
          const existing = attempted ? yield* Effect.mapError(branches.findPull(at, branch), fromGithub) : Option.none()
          if (Option.isSome(existing)) {
            pull = existing.value
          } else {
            const parsed = parseChanges(new TextDecoder().decode(yield* file(CHANGES_PATH)), CHECKOUT)
            if (Result.isFailure(parsed)) return yield* fail("changes_unsupported", parsed.failure)
            const changes = parsed.success
            if (changes.length === 0) {
              return yield* fail("no_changes", "The agent changed no file, so there is no pull request to open")
            }
            const base = yield* Effect.mapError(
              app.branchHead(run.organizationId, at.repository, repository.default_branch),
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
            pull = yield* Effect.mapError(
              branches.openPull(at, {
                title: plan.title,
                head: branch,
                base: repository.default_branch,
                draft,
                body: [
                  output.summary,
                  `### Plan\n\n${plan.plan}`,
                  `Opened by Bosun for work item ${found.item.id}${found.item.source_url === null ? "" : ` (${found.item.source_url})`}.`
                ].join("\n\n")
              }),
              fromGithub
            )
          }
          yield* effects.succeed(run.organizationId, key, { number: pull.number, url: pull.url })
        }
        const reply = replyEffect(
          run.organizationId,
          found.sessionKey,
          `Opened ${pull.url} for review: ${plan.title}`,
          `work_item.pull_request:${run.runId}`
        )
        yield* outbox
          .transaction(
            Effect.gen(function* () {
              const updated = yield* workItems.recordPullRequest(run.organizationId, found.item.id, run.runId, pull)
              if (Option.isNone(updated) || Option.isNone(reply)) return
              yield* outbox.write("bosun-effects", reply.value.kind, reply.value.payload)
            })
          )
          .pipe(Effect.mapError((error) => fail("pull_request_unrecorded", error.message, true)))
      })
  }

  const reportFailure: NonNullable<WorkflowType["reportFailure"]> = (report) =>
    setup.reportFailure(report, "open the pull request")

  return { [WORK_ITEM_IMPLEMENT]: { ...type, reportFailure } }
})

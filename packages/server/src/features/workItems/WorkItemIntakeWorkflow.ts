/**
 * The intake run of a work item (docs/interface.md: What the service does 3;
 * Resources "Work item"): a `work_item_intake` RunAttemptWorkflow on the AGENT lane, queued in the
 * transaction that created the item, keyed by the item's session so a thread's runs go one at a
 * time, in order (the Scheduler's session FIFO).
 *
 * - prepare: the item's request, the organization's repositories, a checkout of the item's
 *   primary repository when it has one (default branch, installation token), the output contract
 *   (`IntakeOutput`), the team's approved memories, the approved secondary repositories read-only
 *   and the agent's credentials, as the review run has them.
 * - publish: `outputs/intake.json` decoded with the domain contract; the item takes the
 *   decision's status (domain `afterIntake`) while this run is its active run, and the reply — the
 *   answer, the question, or the plan with how to approve it — is queued as the provider effect of
 *   the item's thread or ticket, in one transaction, once (keyed by the run). A run a follow-up
 *   has overtaken still replies; the newer run decides the status. A CHANGE naming a repository
 *   the organization does not have becomes a question asking which one.
 * - The prompt carries the conversation as it was when the run was queued: the request and the
 *   follow-ups until then, oldest first (a later follow-up queues a run of its own).
 * - reportFailure: the item is FAILED and the thread is told why (RETRY from the dashboard).
 */

import type { WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import { INTAKE_OUTPUT_PATH, IntakeOutput, type Repository } from "@bosun/domain"
import { Effect, Option, Schema } from "effect"
import { Outbox } from "../../platform/storage/Outbox.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import { INTAKE_INSTRUCTIONS, intakePrompt } from "./IntakeInstructions.ts"
import { isSlackSession, planButtons, replyEffect } from "./WorkItemReplies.ts"
import { CHECKOUT, fail, fullName, makeWorkItemRunSetup, workItemAttempt } from "./WorkItemRunSetup.ts"
import { WORK_ITEM_INTAKE } from "./WorkItemRuns.ts"
import { type WorkItemForRun, WorkItemsRepo } from "./WorkItemsRepo.ts"

const INTAKE_TIME_LIMIT_SECONDS = 1800

const decodeOutput = Schema.decodeUnknownEffect(Schema.fromJsonString(IntakeOutput))

export const workItemIntakeWorkflow = Effect.gen(function* () {
  const workItems = yield* WorkItemsRepo
  const repositories = yield* RepositoriesRepo
  const outbox = yield* Outbox

  const setup = yield* makeWorkItemRunSetup
  const { itemOf, agentOf, checkoutOf, withConventions, withSecondaryRepositories } = setup

  /** The reply of a decision and the item's new details. */
  const decide = (found: WorkItemForRun, output: IntakeOutput, known: ReadonlyArray<Repository>) => {
    switch (output.decision) {
      case "ANSWER":
        return { decision: "ANSWER" as const, text: output.answer, details: {} }
      case "NEEDS_CONTEXT":
        return { decision: "NEEDS_CONTEXT" as const, text: output.question, details: {} }
      case "CHANGE": {
        const repository = known.find(
          (candidate) => fullName(candidate).toLowerCase() === output.repository.toLowerCase()
        )
        if (repository === undefined) {
          const names = known.map(fullName)
          return {
            decision: "NEEDS_CONTEXT" as const,
            text: `I would change ${output.repository}, but this organization has no such repository connected${
              names.length === 0 ? "" : ` (it has ${names.join(", ")})`
            }. Which repository should the change go to?`,
            details: {}
          }
        }
        return {
          decision: "CHANGE" as const,
          text: [
            `**Plan for ${fullName(repository)}: ${output.title}**`,
            output.plan,
            `Nothing is changed until someone approves: ${
              isSlackSession(found.sessionKey) ? "press Approve below, " : ""
            }reply \`approve\` here, or APPROVE work item ${found.item.id} in the Bosun dashboard (\`POST .../work-items/${found.item.id}/actions {"action":"APPROVE"}\`); then Bosun opens the pull request.`
          ].join("\n\n"),
          details: {
            primaryRepositoryId: repository.id,
            plan: { repository: fullName(repository), title: output.title, plan: output.plan }
          }
        }
      }
    }
  }

  const type: WorkflowType = {
    lane: "AGENT",
    outputs: [INTAKE_OUTPUT_PATH],
    prepare: (run) =>
      Effect.gen(function* () {
        const found = yield* itemOf(run)
        const { configuration, credentials, settings } = yield* agentOf(run)
        const known = (yield* repositories.list(run.organizationId)).filter((repository) => repository.available)
        const primary =
          run.repositoryId === null ? undefined : known.find((repository) => repository.id === run.repositoryId)
        const checkout = primary === undefined ? [] : [yield* checkoutOf(run.organizationId, primary)]
        return yield* withSecondaryRepositories(
          run.organizationId,
          configuration,
          workItemAttempt(settings, run, {
            prompt: intakePrompt({
              title: found.item.title,
              request: found.item.summary ?? "",
              requester: found.item.requested_by_login,
              followUps: (yield* workItems.messages(run.organizationId, found.item.id)).slice(
                0,
                found.conversationLength
              ),
              repositories: known.map(fullName),
              checkout: primary === undefined ? null : { repository: fullName(primary), path: CHECKOUT }
            }),
            instructions: yield* withConventions(run, INTAKE_INSTRUCTIONS),
            repositories: checkout,
            time_limit_seconds: INTAKE_TIME_LIMIT_SECONDS,
            provider_credentials: credentials
          })
        )
      }),
    publish: ({ run, file }) =>
      Effect.gen(function* () {
        const found = yield* itemOf(run)
        const bytes = yield* file(INTAKE_OUTPUT_PATH)
        const output = yield* decodeOutput(new TextDecoder().decode(bytes)).pipe(
          Effect.mapError((error) =>
            fail(
              "intake_output_invalid",
              `The agent's decision does not match the output contract: ${error.message.split("\n").slice(0, 3).join(" ")}`
            )
          )
        )
        const known = (yield* repositories.list(run.organizationId)).filter((repository) => repository.available)
        const decided = decide(found, output, known)
        const reply = replyEffect(
          run.organizationId,
          found.sessionKey,
          decided.text,
          `work_item.intake:${run.runId}`,
          decided.decision === "CHANGE" ? planButtons(found.item.id) : undefined
        )
        yield* outbox
          .transaction(
            Effect.gen(function* () {
              const updated = yield* workItems.recordIntake(
                run.organizationId,
                found.item.id,
                run.runId,
                decided.decision,
                decided.details
              )
              // Not recorded: a publish run again (its reply's key makes it one post), a follow-up that
              // queued a newer run (which decides the status; this reply still answers its message),
              // or a cancelled item (nothing more is said in its thread).
              if (Option.isNone(reply)) return
              if (Option.isNone(updated) && found.item.state === "CANCELLED") return
              yield* outbox.write("bosun-effects", reply.value.kind, reply.value.payload)
            })
          )
          .pipe(Effect.mapError((error) => fail("intake_unrecorded", error.message, true)))
      })
  }

  const reportFailure: NonNullable<WorkflowType["reportFailure"]> = (report) =>
    setup.reportFailure(report, "work on this request")

  return { [WORK_ITEM_INTAKE]: { ...type, reportFailure } }
})

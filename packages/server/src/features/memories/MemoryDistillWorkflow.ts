/**
 * The run that turns feedback into a memory: a `memory_distill` RunAttemptWorkflow on the AGENT
 * lane, queued by the GitHub inbox in the transaction that records the feedback, one at a time per
 * organization (session `memory-distill:{org}`, so two restatements of one convention are decided
 * one after the other and the second merges).
 *
 * - prepare: no checkout — the feedback, where it was given and the finding it answers are the
 *   whole input — the organization's memories listed for the agent (rejected ones too: restating
 *   a rejected convention merges into it rather than proposing it again), the agent's
 *   credentials as work-item runs have them, STRICT egress, standard-2.
 * - publish: `outputs/memory.json` decoded with `MemoryProposal`; `propose: false` records
 *   nothing; otherwise `MemoriesRepo.learn` merges it into the memory it restates or proposes it,
 *   with the feedback's provenance (once per run, so a publish that runs again changes nothing).
 */
import type { WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import type { NewRun } from "@bosun/actors/jobs/RunQueue"
import { MEMORY_OUTPUT_PATH, MemoryProposal, MemorySourceType } from "@bosun/domain"
import { Effect, Option, Schema } from "effect"
import { RepositoriesRepo } from "../repositories/index.ts"
import { fail, fullName, makeWorkItemRunSetup, workItemAttempt } from "../workItems/index.ts"
import { MemoriesRepo } from "./MemoriesRepo.ts"
import { MEMORY_DISTILL_INSTRUCTIONS, memoryDistillPrompt } from "./MemoryDistillInstructions.ts"

export const MEMORY_DISTILL = "memory_distill"

const DISTILL_TIME_LIMIT_SECONDS = 600

/** The feedback a distill run is about: its `input_snapshot`. */
export const DistillInput = Schema.Struct({
  source: Schema.Struct({
    type: MemorySourceType,
    url: Schema.NullOr(Schema.String),
    comment_id: Schema.NullOr(Schema.Int),
    pull_request_number: Schema.NullOr(Schema.Int),
    file_path: Schema.NullOr(Schema.String),
    finding_id: Schema.NullOr(Schema.String),
    actor: Schema.NullOr(Schema.String),
    reason_code: Schema.NullOr(Schema.String),
    text: Schema.String
  }),
  finding: Schema.NullOr(Schema.Struct({ title: Schema.String, category: Schema.String, severity: Schema.String }))
})
export type DistillInput = typeof DistillInput.Type

/** The distill run of one piece of feedback, for the `RunQueue` (in the caller's transaction). */
export const memoryDistillRun = (organizationId: string, repositoryId: string, input: DistillInput): NewRun => ({
  organizationId,
  repositoryId,
  workflowType: MEMORY_DISTILL,
  lane: "AGENT",
  sessionKey: `memory-distill:${organizationId}`,
  pullRequestNumber: input.source.pull_request_number ?? undefined,
  inputSnapshot: input
})

const decodeProposal = Schema.decodeUnknownEffect(Schema.fromJsonString(MemoryProposal))

export const memoryDistillWorkflow = Effect.gen(function* () {
  const memories = yield* MemoriesRepo
  const repositories = yield* RepositoriesRepo
  const { agentOf } = yield* makeWorkItemRunSetup

  const subjectOf = (run: {
    readonly organizationId: string
    readonly repositoryId: string | null
    readonly inputSnapshot: unknown
  }) =>
    Effect.gen(function* () {
      const input = yield* Schema.decodeUnknownEffect(DistillInput)(run.inputSnapshot).pipe(
        Effect.mapError(() => fail("memory_feedback_missing", "The run does not carry the feedback to learn from"))
      )
      const repository =
        run.repositoryId === null ? Option.none() : yield* repositories.find(run.organizationId, run.repositoryId)
      if (Option.isNone(repository)) {
        return yield* fail("repository_missing", "The repository the feedback was given on is no longer connected")
      }
      return { input, repository: repository.value }
    })

  const type: WorkflowType = {
    lane: "AGENT",
    outputs: [MEMORY_OUTPUT_PATH],
    prepare: (run) =>
      Effect.gen(function* () {
        const { input, repository } = yield* subjectOf(run)
        const { credentials, settings } = yield* agentOf(run)
        const existing = (yield* memories.list(run.organizationId)).filter(
          (memory) =>
            memory.lifecycle !== "ARCHIVED" && (memory.repository_id === null || memory.repository_id === repository.id)
        )
        return workItemAttempt(settings, run, {
          prompt: memoryDistillPrompt(
            {
              repository: fullName(repository),
              sourceType: input.source.type,
              reasonCode: input.source.reason_code,
              actor: input.source.actor,
              text: input.source.text,
              pullRequestNumber: input.source.pull_request_number,
              filePath: input.source.file_path,
              finding: input.finding
            },
            existing
          ),
          instructions: MEMORY_DISTILL_INSTRUCTIONS,
          repositories: [],
          time_limit_seconds: DISTILL_TIME_LIMIT_SECONDS,
          provider_credentials: credentials
        })
      }),
    publish: ({ run, file }) =>
      Effect.gen(function* () {
        const { input, repository } = yield* subjectOf(run)
        const proposal = yield* decodeProposal(new TextDecoder().decode(yield* file(MEMORY_OUTPUT_PATH))).pipe(
          Effect.mapError((error) =>
            fail(
              "memory_output_invalid",
              `The agent's answer does not match the output contract: ${error.message.split("\n").slice(0, 3).join(" ")}`
            )
          )
        )
        if (!proposal.propose) {
          return yield* Effect.logInfo("memory_not_proposed").pipe(
            Effect.annotateLogs({ org_id: run.organizationId, run_id: run.runId, reason: proposal.reason })
          )
        }
        const restated = proposal.restates_memory_id ?? null
        const named = restated === null ? Option.none() : yield* memories.find(run.organizationId, restated)
        const convention = proposal.convention ?? Option.match(named, { onNone: () => "", onSome: (m) => m.convention })
        if (convention === "") {
          return yield* fail("memory_output_invalid", "The agent named a memory to merge into that does not exist")
        }
        const learned = yield* memories.learn(
          run.organizationId,
          repository.id,
          {
            convention,
            purpose: proposal.purpose ?? null,
            rationale: proposal.rationale ?? null,
            scope: proposal.scope ?? "REPOSITORY",
            language: proposal.language ?? null,
            restatesMemoryId: Option.isSome(named) ? named.value.id : null
          },
          {
            sourceType: input.source.type,
            sourceUrl: input.source.url,
            commentId: input.source.comment_id,
            pullRequestNumber: input.source.pull_request_number,
            filePath: input.source.file_path,
            findingId: input.source.finding_id,
            runId: run.runId,
            actor: input.source.actor,
            excerpt: input.source.text
          }
        )
        yield* Effect.logInfo(learned.merged ? "memory_merged" : "memory_proposed").pipe(
          Effect.annotateLogs({ org_id: run.organizationId, run_id: run.runId, memory_id: learned.memory.id })
        )
      })
  }

  return { [MEMORY_DISTILL]: type }
})

/**
 * What a memory-distill run's agent must produce: from one piece of feedback — a person's reply on
 * a Bosun finding's thread, a reason-coded 👎 reply, or an explicit `@<slug> remember ...` — either
 * one convention worth keeping, or `propose: false` with why (a one-off fix, a question, thanks).
 * The agent is shown the organization's memories that exist; a convention one of them already
 * states is answered with `restates_memory_id`, and Bosun merges the feedback into that memory (its
 * provenance appended) instead of proposing it twice.
 */
import { Schema } from "effect"
import { MemoryScope } from "./Memory.ts"

const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

export const MemoryProposal = Schema.Struct({
  propose: Schema.Boolean,
  /** The convention as a rule a reviewer can apply, in one or two sentences. */
  convention: Schema.optional(Text(1_000)),
  /** What following it achieves. */
  purpose: Schema.optional(Text(1_000)),
  /** Why the team holds it, in the feedback's own terms. */
  rationale: Schema.optional(Text(2_000)),
  /** REPOSITORY when it is about this repository's code; ORGANIZATION when it holds for every repository. */
  scope: Schema.optional(MemoryScope),
  /** The language it is about (`typescript`, `go`, …) when it is about one. */
  language: Schema.optional(Schema.NullOr(Text(64))),
  /** An existing memory's id when the feedback restates it. */
  restates_memory_id: Schema.optional(Schema.NullOr(Text(128))),
  /** Why it is (or is not) proposed. */
  reason: Text(2_000)
}).check(
  Schema.makeFilter((proposal) =>
    !proposal.propose || proposal.convention !== undefined || (proposal.restates_memory_id ?? null) !== null
      ? undefined
      : "a proposal names its convention, or the memory it restates"
  )
)
export type MemoryProposal = typeof MemoryProposal.Type

/** Where a memory-distill run's agent leaves its answer (`$BOSUN_OUTPUT_DIR/memory.json`). */
export const MEMORY_OUTPUT_PATH = "outputs/memory.json"

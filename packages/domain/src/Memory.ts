/**
 * A memory: a convention Bosun applies in reviews (docs/interface.md: Resources "Memory").
 * Its lifecycle:
 *
 * | from | to | by |
 * | --- | --- | --- |
 * | PROPOSED | APPROVED, REJECTED | an ADMIN's decision |
 * | APPROVED | ARCHIVED | an ADMIN |
 *
 * A PROPOSED memory is decided once (`POST .../memories/{id}/decision`, 409
 * `memory_already_decided` after). Only an APPROVED memory can be enabled or disabled (`PATCH
 * .../memories/{id}`); anything else is 409 `memory_not_approved`. `enabled` is set by that PATCH
 * alone: an approved memory is disabled until someone enables it.
 *
 * Beyond the fields docs/interface.md lists, a memory carries its provenance (`sources`: every
 * piece of feedback it was distilled from, the merged restatements included) and its measured
 * `effect`, so a useless memory can be spotted.
 */
import { Schema } from "effect"

export const MemoryLifecycle = Schema.Literals(["PROPOSED", "APPROVED", "REJECTED", "ARCHIVED"])
export const MemoryScope = Schema.Literals(["ORGANIZATION", "REPOSITORY"])
export type MemoryScope = typeof MemoryScope.Type

const Text = Schema.NullOr(Schema.String)

export const MemoryMetadata = Schema.Struct({
  file_path: Text,
  language: Text,
  pull_request_number: Schema.NullOr(Schema.Int),
  source_comment_id: Schema.NullOr(Schema.Int)
})

/** Where feedback came from: a reply on a Bosun finding's thread, a reason-coded 👎 reply, `@<slug> remember`, or a person. */
export const MemorySourceType = Schema.Literals(["REVIEW_REPLY", "THUMBS_DOWN", "REMEMBER_COMMAND", "MANUAL"])
export type MemorySourceType = typeof MemorySourceType.Type

export const MemorySource = Schema.Struct({
  source_type: MemorySourceType,
  source_url: Text,
  source_comment_id: Schema.NullOr(Schema.Int),
  pull_request_number: Schema.NullOr(Schema.Int),
  file_path: Text,
  source_finding_id: Text,
  source_run_id: Text,
  source_actor: Text,
  /** The feedback's words, as the person wrote them (up to 2,000 characters). */
  excerpt: Schema.String,
  created_at: Schema.String
})
export type MemorySource = typeof MemorySource.Type

/**
 * What a memory did: the runs whose prompt carried it, the findings the agent said it shaped or
 * suppressed there, and what people did with the shaped findings afterwards (still open,
 * resolved by a push, dismissed by a reply — a dismissed one says the memory steered wrong).
 */
export const MemoryEffect = Schema.Struct({
  runs: Schema.Int,
  findings_shaped: Schema.Int,
  findings_suppressed: Schema.Int,
  feedback: Schema.Struct({ open: Schema.Int, resolved: Schema.Int, dismissed: Schema.Int })
})
export type MemoryEffect = typeof MemoryEffect.Type

export const Memory = Schema.Struct({
  approved_at: Text,
  approved_by: Text,
  approved_by_login: Text,
  convention: Schema.String,
  created_at: Schema.String,
  enabled: Schema.Boolean,
  id: Schema.String,
  last_toggled_at: Text,
  last_toggled_by: Text,
  last_toggled_by_login: Text,
  lifecycle: MemoryLifecycle,
  metadata: MemoryMetadata,
  organization_id: Schema.String,
  proposed_by: Text,
  proposed_by_login: Text,
  purpose: Text,
  rationale: Text,
  repository_id: Text,
  repository_name: Text,
  repository_owner: Text,
  scope: MemoryScope,
  source_actor: Text,
  source_finding_id: Text,
  source_run_id: Text,
  source_type: Text,
  source_url: Text,
  updated_at: Schema.String,
  sources: Schema.Array(MemorySource),
  effect: MemoryEffect
})
export type Memory = typeof Memory.Type

/** An ADMIN's decision on a PROPOSED memory. */
export const MemoryDecision = Schema.Struct({ decision: Schema.Literals(["approve", "reject"]) })

export const MemoryToggle = Schema.Struct({ enabled: Schema.Boolean })

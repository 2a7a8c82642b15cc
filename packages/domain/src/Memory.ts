/**
 * A memory: a convention Bosun applies in reviews (spec: Resources "Memory"). Lifecycle:
 *
 * | from | to | by |
 * | --- | --- | --- |
 * | PROPOSED | APPROVED, REJECTED | an ADMIN's decision |
 * | APPROVED | ARCHIVED | an ADMIN |
 *
 * Only an APPROVED memory can be enabled or disabled (`PATCH .../memories/{id}`); anything else
 * is 409 `memory_not_approved`. A memory is disabled when approved until someone enables it.
 */
import { Schema } from "effect"

export const MemoryLifecycle = Schema.Literals(["PROPOSED", "APPROVED", "REJECTED", "ARCHIVED"])
export const MemoryScope = Schema.Literals(["ORGANIZATION", "REPOSITORY"])

const Text = Schema.NullOr(Schema.String)

export const MemoryMetadata = Schema.Struct({
  file_path: Text,
  language: Text,
  pull_request_number: Schema.NullOr(Schema.Int),
  source_comment_id: Schema.NullOr(Schema.Int)
})

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
  updated_at: Schema.String
})
export type Memory = typeof Memory.Type

export const MemoryToggle = Schema.Struct({ enabled: Schema.Boolean })

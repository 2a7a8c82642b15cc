/**
 * A context suggestion (docs/interface.md: Resources "Context suggestion"): a secondary repository
 * proposed as context for a primary one. `POST .../decision` with `approve` (which adds it to the
 * primary's `secondary_repository_ids`) or `reject`; a suggestion is decided once (409
 * `suggestion_already_decided` after).
 */
import { Schema } from "effect"

export const ContextSuggestionState = Schema.Literals(["PROPOSED", "APPROVED", "REJECTED"])

export const ContextSuggestion = Schema.Struct({
  access_valid: Schema.Boolean,
  decided_at: Schema.NullOr(Schema.String),
  decided_by: Schema.NullOr(Schema.String),
  id: Schema.String,
  organization_id: Schema.String,
  primary_repository_id: Schema.String,
  proposed_at: Schema.String,
  reason: Schema.NullOr(Schema.String),
  secondary_name: Schema.String,
  secondary_owner: Schema.String,
  secondary_repository_id: Schema.NullOr(Schema.String),
  source: Schema.String,
  state: ContextSuggestionState
})
export type ContextSuggestion = typeof ContextSuggestion.Type

export const ContextSuggestionDecision = Schema.Struct({ decision: Schema.Literals(["approve", "reject"]) })

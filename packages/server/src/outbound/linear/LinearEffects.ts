/**
 * The `bosun-effects` handlers of Linear effects (docs/interface.md: What the service does 3, 9): a
 * `linear.comment` row names the issue, the comment and the idempotency key, from which the
 * comment's own id is derived (LinearTracker), so a retry finds the comment instead of posting it
 * again; a `linear.issue_state` row moves the issue to a workflow state (the same state twice is
 * one change). Both are made once through `EffectOnce`. `EffectsConsumer` routes rows here by kind.
 */
import { Effect, Schema } from "effect"
import { contribute, EffectHandlers, outboxHandler } from "../../platform/storage/OutboxHandlers.ts"
import { makeEffectOnce } from "../effects/EffectOnce.ts"
import { LinearTracker } from "./LinearTracker.ts"

export const LINEAR_COMMENT = "linear.comment"
export const LINEAR_ISSUE_STATE = "linear.issue_state"

export const LinearComment = Schema.Struct({
  organization_id: Schema.String,
  issue_id: Schema.String,
  body: Schema.String,
  idempotency_key: Schema.String
})
export type LinearComment = typeof LinearComment.Type

export const LinearIssueState = Schema.Struct({
  organization_id: Schema.String,
  issue_id: Schema.String,
  state_id: Schema.String,
  idempotency_key: Schema.String
})
export type LinearIssueState = typeof LinearIssueState.Type

export const makeLinearEffectHandlers = Effect.gen(function* () {
  const once = yield* makeEffectOnce
  const linear = yield* LinearTracker

  const comment = Effect.fn("LinearEffects.comment")(function* (effect: typeof LinearComment.Type) {
    yield* once({
      organizationId: effect.organization_id,
      kind: LINEAR_COMMENT,
      key: effect.idempotency_key,
      request: effect,
      call: ({ attempted }) =>
        Effect.map(
          linear.comment(effect.organization_id, {
            issueId: effect.issue_id,
            body: effect.body,
            key: effect.idempotency_key,
            lookFirst: attempted
          }),
          (id) => ({ comment_id: id })
        )
    })
  })

  const issueState = Effect.fn("LinearEffects.issueState")(function* (effect: typeof LinearIssueState.Type) {
    yield* once({
      organizationId: effect.organization_id,
      kind: LINEAR_ISSUE_STATE,
      key: effect.idempotency_key,
      request: effect,
      call: () =>
        Effect.as(linear.setState(effect.organization_id, { issueId: effect.issue_id, stateId: effect.state_id }), {
          state_id: effect.state_id
        })
    })
  })

  return [
    outboxHandler(LINEAR_COMMENT, LinearComment, comment),
    outboxHandler(LINEAR_ISSUE_STATE, LinearIssueState, issueState)
  ]
})

/** Adds these handlers to the `bosun-effects` registry. */
export const LinearEffectHandlersLive = contribute(EffectHandlers, makeLinearEffectHandlers)

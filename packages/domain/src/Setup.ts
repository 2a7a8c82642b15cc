/**
 * An organization's first-day checklist: the steps between an empty instance and a first review
 * a team can trust, each done or not with a one-line detail of what is there or what to do.
 */
import { Schema } from "effect"

export const SetupStepId = Schema.Literals([
  "github_app",
  "app_installed",
  "agent_credentials",
  "model_chosen",
  "test_turn"
])
export type SetupStepId = typeof SetupStepId.Type

export const SetupStep = Schema.Struct({
  id: SetupStepId,
  done: Schema.Boolean,
  detail: Schema.String
})
export type SetupStep = typeof SetupStep.Type

export const SetupChecklist = Schema.Struct({
  /** In the order a team does them. */
  steps: Schema.Array(SetupStep),
  complete: Schema.Boolean
})
export type SetupChecklist = typeof SetupChecklist.Type

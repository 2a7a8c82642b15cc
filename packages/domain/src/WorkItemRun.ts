/**
 * What a work item's runs must produce (docs/interface.md: Resources "Work item"): the agent
 * decides whether the request is a question it can answer, a change (with the repository and a
 * plan, which then waits for APPROVE), or something it cannot place without more context (it asks,
 * and the item waits with waiting_reason CONTEXT). Output that does not match is rejected and
 * nothing is posted.
 */
import { Schema } from "effect"

const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

export const IntakeAnswer = Schema.Struct({
  decision: Schema.Literal("ANSWER"),
  /** The reply to post in the thread or ticket, in Markdown. */
  answer: Text(20_000)
})

export const IntakeNeedsContext = Schema.Struct({
  decision: Schema.Literal("NEEDS_CONTEXT"),
  /** What Bosun asks the requester, posted in the thread or ticket. */
  question: Text(4_000)
})

export const IntakeChange = Schema.Struct({
  decision: Schema.Literal("CHANGE"),
  /** `owner/name` of one of the organization's repositories. */
  repository: Text(200),
  /** The pull request's title to be. */
  title: Text(200),
  /** What the change will do, step by step, in Markdown: posted for approval. */
  plan: Text(20_000)
})

export const IntakeOutput = Schema.Union([IntakeAnswer, IntakeNeedsContext, IntakeChange])
export type IntakeOutput = typeof IntakeOutput.Type

/** Where an intake run's agent leaves its decision (`$BOSUN_OUTPUT_DIR/intake.json` in the sandbox). */
export const INTAKE_OUTPUT_PATH = "outputs/intake.json"

/** What an implement run must produce besides its changes: the pull request's description. */
export const ImplementOutput = Schema.Struct({ summary: Text(20_000) })
export type ImplementOutput = typeof ImplementOutput.Type

/** Where an implement run's agent leaves it (`$BOSUN_OUTPUT_DIR/implement.json` in the sandbox). */
export const IMPLEMENT_OUTPUT_PATH = "outputs/implement.json"

/** The runtime's file of everything the agent changed in its checkouts. */
export const CHANGES_PATH = "changes.diff"

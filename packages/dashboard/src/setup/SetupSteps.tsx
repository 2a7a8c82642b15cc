/**
 * The first-day steps as a list that turns green step by step: what the sign-in page's first-run
 * section lists before anyone can sign in, and what the Getting started checklist shows from
 * `GET .../setup`. Type-only imports from the domain: the sign-in page is in the first bundle.
 */
import type { SetupStep, SetupStepId } from "@bosun/domain"
import type { ReactNode } from "react"
import { setupStepLabel } from "../labels.ts"

export const SETUP_STEP_IDS: ReadonlyArray<SetupStepId> = [
  "github_app",
  "app_installed",
  "agent_credentials",
  "model_chosen",
  "test_turn"
]

export const SetupSteps = (props: {
  readonly steps: ReadonlyArray<SetupStep>
  /** Where in the dashboard a step is done, when it is done here. */
  readonly where?: (id: SetupStepId) => ReactNode
}) => (
  <ol className="setup-steps" data-testid="setup-steps">
    {props.steps.map((step) => (
      <li key={step.id} className={step.done ? "done" : "todo"} data-step={step.id} data-done={step.done}>
        <span className="mark" aria-hidden="true">
          {step.done ? "✓" : "○"}
        </span>
        <span>
          <strong>{setupStepLabel[step.id]}</strong>
          <span className="visually-hidden">{step.done ? " (done)" : " (to do)"}</span>
          {step.detail === "" ? null : <span className="muted"> — {step.detail}</span>}
          {step.done || props.where === undefined ? null : <> {props.where(step.id)}</>}
        </span>
      </li>
    ))}
  </ol>
)

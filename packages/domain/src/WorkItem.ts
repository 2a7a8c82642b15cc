/**
 * Work items and their state machine (docs/interface.md: Resources "Work item";
 * Organization endpoints `POST .../work-items/{id}/actions`). An action is accepted only when it is
 * in the item's `available_actions`, which follow from its state alone; anything else is 409
 * `action_not_available`. The scheduler (not this table) starts and stops the runs behind them.
 *
 * | state (waiting_reason)        | action  | next state / phase / waiting_reason | completed_at |
 * | ----------------------------- | ------- | ----------------------------------- | ------------ |
 * | WAITING (APPROVAL)            | APPROVE | IN_PROGRESS / IMPLEMENTING / —      |              |
 * | WAITING (APPROVAL)            | REJECT  | CANCELLED / DONE / —                | now          |
 * | OPEN, WAITING, IN_PROGRESS    | CANCEL  | CANCELLED / DONE / —                | now          |
 * | FAILED                        | RETRY   | IN_PROGRESS / (unchanged) / —       | cleared      |
 * | FAILED                        | CANCEL  | CANCELLED / DONE / —                | now          |
 * | COMPLETED, CANCELLED          | REOPEN  | OPEN / INTAKE / —                   | cleared      |
 *
 * The intake run's decision (`WorkItemRun.ts`) moves an OPEN item in INTAKE (`afterIntake`):
 *
 * | decision      | next state / phase / waiting_reason | kind     | completed_at |
 * | ------------- | ----------------------------------- | -------- | ------------ |
 * | ANSWER        | COMPLETED / DONE / —                | QUESTION | now          |
 * | NEEDS_CONTEXT | WAITING / INTAKE / CONTEXT          | kept     |              |
 * | CHANGE        | WAITING / PLANNING / APPROVAL       | TASK     |              |
 *
 * APPROVE queues the implement run (IN_PROGRESS / IMPLEMENTING); the pull request it opens moves
 * the item to IN_PROGRESS / REVIEWING, and GitHub closing that pull request ends it: merged,
 * COMPLETED / DONE; closed unmerged, CANCELLED / DONE.
 *
 * A run that fails for good leaves the item FAILED in its phase (RETRY, CANCEL available).
 *
 * A follow-up in the item's thread or ticket (`afterFollowUp`) that is not an approval or a
 * rejection sends the item back to intake, IN_PROGRESS, with a new intake run queued behind any
 * running one (the session's FIFO): WAITING for CONTEXT (the answer), WAITING for APPROVAL (plan
 * feedback), COMPLETED (a further question), FAILED, OPEN and IN_PROGRESS alike. A CANCELLED item
 * takes no follow-up: a person cancelled it, and REOPEN brings it back.
 */
import { Schema } from "effect"

export const WorkItemState = Schema.Literals(["OPEN", "WAITING", "IN_PROGRESS", "COMPLETED", "FAILED", "CANCELLED"])
export type WorkItemState = typeof WorkItemState.Type
export const WorkItemPhase = Schema.Literals(["INTAKE", "PLANNING", "IMPLEMENTING", "REVIEWING", "DONE"])
export type WorkItemPhase = typeof WorkItemPhase.Type
export const WaitingReason = Schema.Literals(["CONTEXT", "APPROVAL", "INPUT"])
export type WaitingReason = typeof WaitingReason.Type
export const WorkItemKind = Schema.Literals(["QUESTION", "TASK", "BUG", "FEEDBACK"])
export const WorkItemSource = Schema.Literals(["SCM", "CHAT", "TRACKER", "API"])
export const WorkItemAction = Schema.Literals(["APPROVE", "REJECT", "CANCEL", "RETRY", "REOPEN"])
export type WorkItemAction = typeof WorkItemAction.Type

export interface WorkItemStatus {
  readonly state: WorkItemState
  readonly phase: WorkItemPhase
  readonly waiting_reason: WaitingReason | null
}

/** The actions an item in this status accepts, in a stable order. */
export const availableActions = (status: WorkItemStatus): ReadonlyArray<WorkItemAction> => {
  switch (status.state) {
    case "WAITING":
      return status.waiting_reason === "APPROVAL" ? ["APPROVE", "REJECT", "CANCEL"] : ["CANCEL"]
    case "OPEN":
    case "IN_PROGRESS":
      return ["CANCEL"]
    case "FAILED":
      return ["RETRY", "CANCEL"]
    case "COMPLETED":
    case "CANCELLED":
      return ["REOPEN"]
  }
}

/** The status after `action`, or undefined when the action is not available. */
export const applyAction = (
  status: WorkItemStatus,
  action: WorkItemAction
): (WorkItemStatus & { readonly completed: "now" | "cleared" | "unchanged" }) | undefined => {
  if (!availableActions(status).includes(action)) return undefined
  switch (action) {
    case "APPROVE":
      return { state: "IN_PROGRESS", phase: "IMPLEMENTING", waiting_reason: null, completed: "unchanged" }
    case "REJECT":
    case "CANCEL":
      return { state: "CANCELLED", phase: "DONE", waiting_reason: null, completed: "now" }
    case "RETRY":
      return { state: "IN_PROGRESS", phase: status.phase, waiting_reason: null, completed: "cleared" }
    case "REOPEN":
      return { state: "OPEN", phase: "INTAKE", waiting_reason: null, completed: "cleared" }
  }
}

export type IntakeDecision = "ANSWER" | "NEEDS_CONTEXT" | "CHANGE"

/** The status (and kind) an item in intake takes from its intake run's decision. */
export const afterIntake = (
  decision: IntakeDecision
): WorkItemStatus & {
  readonly kind: "QUESTION" | "TASK" | undefined
  readonly completed: "now" | "unchanged"
} => {
  switch (decision) {
    case "ANSWER":
      return { state: "COMPLETED", phase: "DONE", waiting_reason: null, kind: "QUESTION", completed: "now" }
    case "NEEDS_CONTEXT":
      return { state: "WAITING", phase: "INTAKE", waiting_reason: "CONTEXT", kind: undefined, completed: "unchanged" }
    case "CHANGE":
      return { state: "WAITING", phase: "PLANNING", waiting_reason: "APPROVAL", kind: "TASK", completed: "unchanged" }
  }
}

/** The status after a follow-up message, or undefined when the item takes none (CANCELLED). */
export const afterFollowUp = (
  status: WorkItemStatus
): (WorkItemStatus & { readonly completed: "cleared" }) | undefined =>
  status.state === "CANCELLED"
    ? undefined
    : { state: "IN_PROGRESS", phase: "INTAKE", waiting_reason: null, completed: "cleared" }

const Text = Schema.NullOr(Schema.String)

export const WorkItem = Schema.Struct({
  active_run_id: Text,
  available_actions: Schema.Array(WorkItemAction),
  completed_at: Text,
  created_at: Schema.String,
  id: Schema.String,
  kind: WorkItemKind,
  organization_id: Schema.String,
  parent_artifact_id: Text,
  parent_work_item_id: Text,
  phase: WorkItemPhase,
  primary_repository_id: Text,
  requested_by_login: Text,
  source: WorkItemSource,
  source_url: Text,
  state: WorkItemState,
  summary: Text,
  title: Schema.String,
  updated_at: Schema.String,
  waiting_reason: Schema.NullOr(WaitingReason)
})
export type WorkItem = typeof WorkItem.Type

export const WorkItemActionRequest = Schema.Struct({ action: WorkItemAction })

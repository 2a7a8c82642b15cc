/**
 * The work-item state machine of `packages/domain/src/WorkItem.ts`, over every status and action
 * (property-based): an action applies exactly when it is available; the result is a valid
 * status; every status offers at least one action; the table's rows hold.
 */
import {
  applyAction,
  availableActions,
  WaitingReason,
  WorkItemAction,
  WorkItemPhase,
  WorkItemState,
  type WorkItemStatus
} from "@bosun/domain"
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"

const status: fc.Arbitrary<WorkItemStatus> = fc
  .record({
    state: fc.constantFrom(...WorkItemState.literals),
    phase: fc.constantFrom(...WorkItemPhase.literals),
    reason: fc.constantFrom(...WaitingReason.literals)
  })
  .map(({ state, phase, reason }) => ({ state, phase, waiting_reason: state === "WAITING" ? reason : null }))

const action = fc.constantFrom(...WorkItemAction.literals)

describe("work-item state machine", () => {
  it("applies an action exactly when the item lists it, and always to a valid status", () => {
    fc.assert(
      fc.property(status, action, (from, act) => {
        const next = applyAction(from, act)
        assert.strictEqual(next !== undefined, availableActions(from).includes(act))
        if (next !== undefined) {
          assert.strictEqual(next.state === "WAITING", next.waiting_reason !== null)
          assert.isTrue(availableActions(next).length > 0)
        }
      })
    )
  })

  it("offers every status at least one action, with no duplicates", () => {
    fc.assert(
      fc.property(status, (from) => {
        const actions = availableActions(from)
        assert.isAbove(actions.length, 0)
        assert.strictEqual(new Set(actions).size, actions.length)
      })
    )
  })

  it("follows the table of the module comment", () => {
    const waitingApproval = { state: "WAITING", phase: "PLANNING", waiting_reason: "APPROVAL" } as const
    assert.deepStrictEqual(applyAction(waitingApproval, "APPROVE"), {
      state: "IN_PROGRESS",
      phase: "IMPLEMENTING",
      waiting_reason: null,
      completed: "unchanged"
    })
    assert.deepStrictEqual(applyAction(waitingApproval, "REJECT"), {
      state: "CANCELLED",
      phase: "DONE",
      waiting_reason: null,
      completed: "now"
    })
    const failed = { state: "FAILED", phase: "REVIEWING", waiting_reason: null } as const
    assert.deepStrictEqual(applyAction(failed, "RETRY"), {
      state: "IN_PROGRESS",
      phase: "REVIEWING",
      waiting_reason: null,
      completed: "cleared"
    })
    const done = { state: "COMPLETED", phase: "DONE", waiting_reason: null } as const
    assert.deepStrictEqual(availableActions(done), ["REOPEN"])
    assert.deepStrictEqual(applyAction(done, "REOPEN"), {
      state: "OPEN",
      phase: "INTAKE",
      waiting_reason: null,
      completed: "cleared"
    })
    assert.isUndefined(applyAction({ state: "WAITING", phase: "INTAKE", waiting_reason: "CONTEXT" }, "APPROVE"))
    assert.deepStrictEqual(availableActions({ state: "OPEN", phase: "INTAKE", waiting_reason: null }), ["CANCEL"])
  })
})

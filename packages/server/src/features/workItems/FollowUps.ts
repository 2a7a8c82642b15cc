/**
 * A follow-up in a work item's thread or ticket (one thread / ticket = one session: follow-ups go
 * to the same work item, queued FIFO behind the running one; a plan waits for APPROVE from the
 * dashboard, a Slack button or a reply).
 *
 * - On an item WAITING for APPROVAL, a reply that is only an approval (`approve`, `approved`,
 *   `lgtm`, `go ahead`, `ship it`) or a rejection (`reject`, `rejected`) is that action, exactly as
 *   `POST .../work-items/{id}/actions` applies it (APPROVE queues the implement run); so is a
 *   click on the plan's Approve or Reject button in Slack (`planAction`). Either is audited as the
 *   provider's user (`slack:{team}:{user}`, `linear:{user}`, `github:{login}`).
 * - Anything else is part of the conversation: recorded once per delivery, the item goes back to
 *   intake (domain `afterFollowUp`), and a new intake run is queued on the item's session, behind
 *   any run of the thread still going, so the agent sees the whole thread in order.
 * - A CANCELLED item takes no follow-up (REOPEN brings it back): recorded as ignored, with why.
 *
 * Runs in the inbox's transaction; the inbox wakes the Scheduler after the commit.
 */
import { Effect, Option } from "effect"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { WorkItemRuns } from "./WorkItemRuns.ts"
import { WorkItemsRepo } from "./WorkItemsRepo.ts"

const APPROVAL = /^(?:approve|approved|lgtm|go ahead|ship it)[.!]*$/i
const REJECTION = /^(?:reject|rejected)[.!]*$/i

/** The action a reply is, if it is nothing but an approval or a rejection. */
export const replyAction = (text: string): "APPROVE" | "REJECT" | undefined => {
  const plain = text.trim()
  return APPROVAL.test(plain) ? "APPROVE" : REJECTION.test(plain) ? "REJECT" : undefined
}

/** The provider's user behind a message in the session, as the audit names them. */
export const externalActor = (sessionKey: string, author: string | null) => {
  const who = author ?? "unknown"
  const slack = /^slack:([^:]+):/.exec(sessionKey)
  if (slack !== null) return `slack:${slack[1]}:${who}`
  return `${sessionKey.split(":")[0] ?? "provider"}:${who}`
}

export interface FollowUp {
  readonly author: string | null
  /** The message without mentions of Bosun. */
  readonly text: string
  readonly deliveryId: string
}

export const makeFollowUps = Effect.gen(function* () {
  const workItems = yield* WorkItemsRepo
  const runs = yield* WorkItemRuns
  const audit = yield* AuditLog

  /**
   * APPROVE or REJECT on an item waiting for approval of its plan, by the provider's user
   * `actor`; answers why it was not applied, or null when it was.
   */
  const planAction = (
    organizationId: string,
    item: { readonly id: string; readonly sessionKey: string },
    action: "APPROVE" | "REJECT",
    actor: string
  ) =>
    Effect.gen(function* () {
      const current = yield* workItems.find(organizationId, item.id)
      if (Option.isNone(current)) return "the work item no longer exists"
      if (current.value.state !== "WAITING" || current.value.waiting_reason !== "APPROVAL") {
        return `the work item is not waiting for approval (it is ${current.value.state})`
      }
      const acted = yield* Effect.result(workItems.act(organizationId, item.id, action))
      if (acted._tag === "Failure") return `the work item no longer accepts ${action}`
      yield* audit.record({
        organizationId,
        actor: { kind: "provider_user", external: actor },
        action: `work_item.${action.toLowerCase()}`,
        target: `work_item:${item.id}`
      })
      if (action === "APPROVE" && Option.isSome(acted.success)) {
        yield* runs.enqueueImplement(organizationId, {
          id: item.id,
          sessionKey: item.sessionKey,
          primaryRepositoryId: acted.success.value.primary_repository_id
        })
      }
      return null
    })

  /** Applies the follow-up; answers why it was ignored, or null when it was acted on. */
  const followUp = (
    organizationId: string,
    item: { readonly id: string; readonly sessionKey: string },
    message: FollowUp
  ) =>
    Effect.gen(function* () {
      const current = yield* workItems.find(organizationId, item.id)
      if (Option.isNone(current)) return "the work item no longer exists"
      const action = replyAction(message.text)
      if (action !== undefined && current.value.state === "WAITING" && current.value.waiting_reason === "APPROVAL") {
        return yield* planAction(organizationId, item, action, externalActor(item.sessionKey, message.author))
      }
      const updated = yield* workItems.followUp(organizationId, item.id, {
        author: message.author,
        body: message.text,
        deliveryId: message.deliveryId
      })
      if (Option.isNone(updated)) {
        return current.value.state === "CANCELLED"
          ? `work item ${item.id} was cancelled; REOPEN it to continue`
          : "the follow-up was recorded already"
      }
      yield* runs.enqueueIntake(organizationId, {
        id: item.id,
        sessionKey: item.sessionKey,
        primaryRepositoryId: updated.value.primary_repository_id
      })
      return null
    })

  return { followUp, planAction }
})

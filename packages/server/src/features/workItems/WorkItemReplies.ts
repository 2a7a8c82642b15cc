/**
 * Where a work item's replies go (a QUESTION is answered in the thread, a request for context is
 * asked in the thread, the PR link is posted back to the thread/ticket): the item's session names
 * its thread or ticket, and the reply becomes that provider's effect on `bosun-effects` —
 * `slack.message` into the thread for `slack:{team}:{channel}:{thread ts}`, `linear.comment` on the
 * issue for `linear:{issue id}`, `github.pr_comment` (GitHub's issue comments) on the issue for
 * `github:{owner}/{name}:{number}`. An item with no such session (made through the API) has nowhere
 * to reply: none.
 *
 * A plan waiting for approval carries Approve and Reject buttons where the provider has them
 * (Slack); their clicks come back as interactions (`PLAN_BUTTON_ACTIONS`) and act as the same
 * replies would.
 */
import { Option } from "effect"
import { GITHUB_PR_COMMENT } from "../../outbound/github/GithubEffects.ts"
import { LINEAR_COMMENT, type LinearComment } from "../../outbound/linear/LinearEffects.ts"
import type { SlackButton } from "../../outbound/slack/SlackChat.ts"
import { SLACK_MESSAGE, type SlackMessage } from "../../outbound/slack/SlackEffects.ts"

/** The `action_id` of a plan's buttons and the work-item action each stands for. */
export const PLAN_BUTTON_ACTIONS: Readonly<Record<string, "APPROVE" | "REJECT">> = {
  "work_item.approve": "APPROVE",
  "work_item.reject": "REJECT"
}

/** The buttons under a plan in Slack; their value is the work item's id. */
export const planButtons = (workItemId: string): ReadonlyArray<SlackButton> => [
  { action_id: "work_item.approve", text: "Approve", value: workItemId, style: "primary" },
  { action_id: "work_item.reject", text: "Reject", value: workItemId, style: "danger" }
]

/** Whether replies in the session go to Slack (where a plan gets buttons). */
export const isSlackSession = (sessionKey: string | null) => sessionKey !== null && SLACK_SESSION.test(sessionKey)

interface GithubComment {
  readonly organization_id: string
  readonly owner: string
  readonly name: string
  readonly number: number
  readonly idempotency_key: string
  readonly body: string
}

export interface ReplyEffect {
  readonly kind: typeof SLACK_MESSAGE | typeof LINEAR_COMMENT | typeof GITHUB_PR_COMMENT
  readonly payload: SlackMessage | LinearComment | GithubComment
}

const SLACK_SESSION = /^slack:([^:]+):([^:]+):([^:]+)$/
const LINEAR_SESSION = /^linear:(.+)$/
const GITHUB_SESSION = /^github:([^/:]+)\/([^/:]+):(\d+)$/

/** The effect that posts `text` where the session's conversation is, under the idempotency `key`. */
export const replyEffect = (
  organizationId: string,
  sessionKey: string | null,
  text: string,
  key: string,
  /** Shown under the text where the provider has buttons (Slack); ignored elsewhere. */
  buttons?: ReadonlyArray<SlackButton>
): Option.Option<ReplyEffect> => {
  const slack = sessionKey === null ? null : SLACK_SESSION.exec(sessionKey)
  if (slack !== null) {
    return Option.some({
      kind: SLACK_MESSAGE,
      payload: {
        organization_id: organizationId,
        channel: slack[2] as string,
        thread_ts: slack[3] as string,
        text,
        ...(buttons === undefined || buttons.length === 0 ? {} : { buttons }),
        idempotency_key: key
      }
    })
  }
  const linear = sessionKey === null ? null : LINEAR_SESSION.exec(sessionKey)
  if (linear !== null) {
    return Option.some({
      kind: LINEAR_COMMENT,
      payload: { organization_id: organizationId, issue_id: linear[1] as string, body: text, idempotency_key: key }
    })
  }
  const github = sessionKey === null ? null : GITHUB_SESSION.exec(sessionKey)
  if (github !== null) {
    return Option.some({
      kind: GITHUB_PR_COMMENT,
      payload: {
        organization_id: organizationId,
        owner: github[1] as string,
        name: github[2] as string,
        number: Number(github[3]),
        idempotency_key: key,
        body: text
      }
    })
  }
  return Option.none()
}

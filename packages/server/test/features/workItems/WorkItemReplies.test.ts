/**
 * Where a work item's reply goes (work/WorkItemReplies.ts) and which replies are actions
 * (work/FollowUps.ts `replyAction`): the session names the provider's thread or ticket; only a
 * reply that is nothing but an approval or a rejection is one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import * as fc from "fast-check"
import { replyAction } from "../../../src/features/workItems/FollowUps.ts"
import { replyEffect } from "../../../src/features/workItems/WorkItemReplies.ts"

describe("work-item replies", () => {
  it("a Slack session replies in its thread, a Linear one on its issue, a GitHub one on its issue", () => {
    assert.deepStrictEqual(
      replyEffect("org-1", "slack:T1:C2:1732.0001", "hi", "k1"),
      Option.some({
        kind: "slack.message" as const,
        payload: { organization_id: "org-1", channel: "C2", thread_ts: "1732.0001", text: "hi", idempotency_key: "k1" }
      })
    )
    assert.deepStrictEqual(
      replyEffect("org-1", "linear:9f8e-77", "hi", "k2"),
      Option.some({
        kind: "linear.comment" as const,
        payload: { organization_id: "org-1", issue_id: "9f8e-77", body: "hi", idempotency_key: "k2" }
      })
    )
    assert.deepStrictEqual(
      replyEffect("org-1", "github:acme/api:42", "hi", "k3"),
      Option.some({
        kind: "github.pr_comment" as const,
        payload: { organization_id: "org-1", owner: "acme", name: "api", number: 42, idempotency_key: "k3", body: "hi" }
      })
    )
  })

  it("an item without a session, or with one of no known provider, has nowhere to reply", () => {
    assert.isTrue(Option.isNone(replyEffect("org-1", null, "hi", "k")))
    assert.isTrue(Option.isNone(replyEffect("org-1", "jira:ENG-1", "hi", "k")))
    assert.isTrue(Option.isNone(replyEffect("org-1", "github:acme:42", "hi", "k")))
  })

  it("only a reply that is nothing but an approval or a rejection is an action", () => {
    for (const text of ["approve", "Approved.", "LGTM!", "go ahead", "Ship it", "  lgtm  "]) {
      assert.strictEqual(replyAction(text), "APPROVE", text)
    }
    for (const text of ["reject", "Rejected!"]) assert.strictEqual(replyAction(text), "REJECT", text)
    for (const text of ["approve, but rename the file", "I do not approve", "lgtm?", "looks good", ""]) {
      assert.isUndefined(replyAction(text), text)
    }
    fc.assert(
      fc.property(fc.constantFrom("approve", "lgtm", "reject"), fc.string({ minLength: 1 }), (word, rest) => {
        // A word beyond the action (not only punctuation) makes it part of the conversation.
        fc.pre(/[A-Za-z0-9]/.test(rest))
        return replyAction(`${word} ${rest}`) === undefined
      })
    )
  })
})

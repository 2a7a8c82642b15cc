/**
 * Work items over real HTTP (docs/interface.md: Organization endpoints, Resources "Work item"): the
 * item shape field by field with its available_actions; actions moving it through the state
 * machine, 409 for an action the item does not list (also when two arrive at once), 400 for an
 * unknown action, 401, 404 across organizations, and audit evidence.
 */
import type { WorkItem } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { WorkItemsRepo } from "../../../src/features/workItems/WorkItemsRepo.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

const act = (cookie: string, org: string, id: string, action: unknown) =>
  request(`/api/v1/organizations/${org}/work-items/${id}/actions`, {
    method: "POST",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify({ action })
  })

const itemOf = (json: unknown) => (json as { data: WorkItem }).data

layer(layerTestServer(), { excludeTestServices: true })("work items", (it) => {
  it.effect("returns items with every field of the spec's resource and the actions they accept", () =>
    Effect.gen(function* () {
      const items = yield* WorkItemsRepo
      const member = yield* signIn("wi-reader", [["wi-org", "MEMBER"]])
      const created = yield* items.create("wi-org", {
        kind: "TASK",
        source: "CHAT",
        title: "Add retries to the uploader",
        summary: "from #eng",
        sourceUrl: "https://slack.example/archives/C1/p1",
        requestedByLogin: "mona",
        state: "WAITING",
        phase: "PLANNING",
        waitingReason: "APPROVAL"
      })
      const response = yield* request(`/api/v1/organizations/wi-org/work-items/${created.id}`, {
        headers: { cookie: member.cookie }
      })
      assert.strictEqual(response.status, 200)
      const item = itemOf(response.json)
      assert.deepStrictEqual(
        { ...item, created_at: "t", updated_at: "t" },
        {
          active_run_id: null,
          available_actions: ["APPROVE", "REJECT", "CANCEL"],
          completed_at: null,
          created_at: "t",
          id: created.id,
          kind: "TASK",
          organization_id: "wi-org",
          parent_artifact_id: null,
          parent_work_item_id: null,
          phase: "PLANNING",
          primary_repository_id: null,
          requested_by_login: "mona",
          source: "CHAT",
          source_url: "https://slack.example/archives/C1/p1",
          state: "WAITING",
          summary: "from #eng",
          title: "Add retries to the uploader",
          updated_at: "t",
          waiting_reason: "APPROVAL"
        }
      )
      const list = yield* request("/api/v1/organizations/wi-org/work-items", { headers: { cookie: member.cookie } })
      assert.isTrue((list.json as { data: ReadonlyArray<WorkItem> }).data.some((i) => i.id === created.id))
    })
  )

  it.effect("moves an item through approve, cancel and reopen, and audits each action", () =>
    Effect.gen(function* () {
      const items = yield* WorkItemsRepo
      const sql = yield* SqlClient.SqlClient
      const member = yield* signIn("wi-actor", [["wi-org", "MEMBER"]])
      const created = yield* items.create("wi-org", {
        kind: "BUG",
        source: "TRACKER",
        title: "Crash on empty diff",
        state: "WAITING",
        phase: "PLANNING",
        waitingReason: "APPROVAL"
      })
      const approved = itemOf((yield* act(member.cookie, "wi-org", created.id, "APPROVE")).json)
      assert.deepStrictEqual(
        [approved.state, approved.phase, approved.waiting_reason, approved.available_actions],
        ["IN_PROGRESS", "IMPLEMENTING", null, ["CANCEL"]]
      )
      const cancelled = itemOf((yield* act(member.cookie, "wi-org", created.id, "CANCEL")).json)
      assert.deepStrictEqual(
        [cancelled.state, cancelled.phase, cancelled.available_actions],
        ["CANCELLED", "DONE", ["REOPEN"]]
      )
      assert.isTrue(Date.now() - Date.parse(cancelled.completed_at ?? "") < 60_000)
      const reopened = itemOf((yield* act(member.cookie, "wi-org", created.id, "REOPEN")).json)
      assert.deepStrictEqual([reopened.state, reopened.phase, reopened.completed_at], ["OPEN", "INTAKE", null])
      const audit = yield* sql<{ action: string; actor_user_id: string }>`
        SELECT action, actor_user_id FROM audit_events WHERE target = ${`work_item:${created.id}`} ORDER BY id`
      assert.deepStrictEqual(audit, [
        { action: "work_item.approve", actor_user_id: member.userId },
        { action: "work_item.cancel", actor_user_id: member.userId },
        { action: "work_item.reopen", actor_user_id: member.userId }
      ])
    })
  )

  it.effect("answers 409 action_not_available for an action the item does not list, once of two racing approvals", () =>
    Effect.gen(function* () {
      const items = yield* WorkItemsRepo
      const member = yield* signIn("wi-racer", [["wi-org", "MEMBER"]])
      const open = yield* items.create("wi-org", { kind: "QUESTION", source: "API", title: "Why?" })
      const refused = yield* act(member.cookie, "wi-org", open.id, "APPROVE")
      assert.strictEqual(refused.status, 409)
      assert.strictEqual(errorCode(refused.json), "action_not_available")
      const unchanged = yield* request(`/api/v1/organizations/wi-org/work-items/${open.id}`, {
        headers: { cookie: member.cookie }
      })
      assert.strictEqual(itemOf(unchanged.json).state, "OPEN")

      const waiting = yield* items.create("wi-org", {
        kind: "TASK",
        source: "API",
        title: "Race",
        state: "WAITING",
        phase: "PLANNING",
        waitingReason: "APPROVAL"
      })
      const results = yield* Effect.all(
        [act(member.cookie, "wi-org", waiting.id, "APPROVE"), act(member.cookie, "wi-org", waiting.id, "APPROVE")],
        { concurrency: 2 }
      )
      assert.deepStrictEqual(results.map((r) => r.status).sort(), [200, 409])
    })
  )

  it.effect("answers 400 for an unknown action, 401 without a session, 404 across organizations", () =>
    Effect.gen(function* () {
      const items = yield* WorkItemsRepo
      const member = yield* signIn("wi-member", [["wi-org", "MEMBER"]])
      const stranger = yield* signIn("wi-stranger", [["wi-elsewhere", "ADMIN"]])
      const item = yield* items.create("wi-org", { kind: "TASK", source: "API", title: "Target" })
      const foreign = yield* items.create("wi-elsewhere", { kind: "TASK", source: "API", title: "Foreign" })
      for (const action of ["approve", "DELETE", 1, null]) {
        const response = yield* act(member.cookie, "wi-org", item.id, action)
        assert.strictEqual(response.status, 400, String(action))
        assert.strictEqual(errorCode(response.json), "invalid_body")
      }
      const anonymous = yield* request(`/api/v1/organizations/wi-org/work-items/${item.id}/actions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ action: "CANCEL" })
      })
      assert.strictEqual(anonymous.status, 401)
      for (const [cookie, org, id] of [
        [stranger.cookie, "wi-org", item.id],
        [member.cookie, "wi-org", foreign.id],
        [member.cookie, "wi-elsewhere", foreign.id],
        [member.cookie, "wi-org", "missing-item"]
      ] as const) {
        const response = yield* act(cookie, org, id, "CANCEL")
        assert.strictEqual(response.status, 404, `${org}/${id}`)
      }
      const untouched = yield* items.find("wi-elsewhere", foreign.id)
      assert.strictEqual(untouched._tag === "Some" ? untouched.value.state : undefined, "OPEN")
    })
  )
})

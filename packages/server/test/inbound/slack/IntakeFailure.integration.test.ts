/**
 * A work item whose intake run cannot run (docs/interface.md: Errors): the organization has Slack
 * but no agent connection, so the run fails in prepare for good. The item becomes FAILED (RETRY,
 * CANCEL available) and its thread is told why, once per failed run; RETRY through the actions
 * endpoint queues a new intake run on the same session, which fails the same way.
 */
import { eventually, FakeSlack, signedSlackHeaders } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

const ORG = "intake-failure"
const TEAM = "T0FAIL"
const BOT = "U0BOSUN"
const TOKEN = "xoxb-intake-failure-3e4f"
const SECRET = "intake-failure-signing-secret"
const CHANNEL = "C0OPS"

const Stack = Layer.unwrap(
  Effect.map(FakeSlack, (fake) => layerTestServer({ settings: { slackApiUrl: new URL(fake.apiUrl) } }))
).pipe(Layer.provideMerge(FakeSlack.layer))

const json = (cookie: string, method: string, body?: unknown): RequestInit => ({
  method,
  headers: { cookie, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const itemOf = (cookie: string, id: string) =>
  Effect.map(
    request(`/api/v1/organizations/${ORG}/work-items/${id}`, json(cookie, "GET")),
    (response) => (response.json as { data: Record<string, unknown> }).data
  )

layer(Stack, { excludeTestServices: true, timeout: "60 seconds" })("intake failures", (it) => {
  it.effect("a failed intake leaves the item FAILED and says why in the thread; RETRY queues a new intake run", () =>
    Effect.gen(function* () {
      const fake = yield* FakeSlack
      const sql = yield* SqlClient.SqlClient
      fake.addWorkspace({ token: TOKEN, teamId: TEAM, teamName: "Ops", botUserId: BOT })
      const admin = yield* signIn("failure-admin", [[ORG, "ADMIN"]])
      const connected = yield* request(
        `/api/v1/organizations/${ORG}/slack-connection`,
        json(admin.cookie, "PUT", { bot_token: TOKEN, signing_secret: SECRET })
      )
      assert.strictEqual(connected.status, 200, connected.text)

      const ts = "1732390000.000300"
      const body = JSON.stringify({
        type: "event_callback",
        team_id: TEAM,
        event_id: "Ev0FAIL1",
        event: {
          type: "app_mention",
          channel: CHANNEL,
          channel_type: "channel",
          user: "U0ADA",
          text: `<@${BOT}> is prod down?`,
          ts
        }
      })
      const delivered = yield* request("/api/v1/slack/events", {
        method: "POST",
        headers: signedSlackHeaders(SECRET, body),
        body
      })
      assert.strictEqual(delivered.status, 202, delivered.text)

      const replies = () => fake.messages(CHANNEL).filter((message) => message.thread_ts === ts && message.user === BOT)
      yield* Effect.orDie(eventually(Effect.sync(replies), (found) => found.length === 1, Duration.seconds(30)))
      assert.include(replies()[0]?.text ?? "", "I could not work on this request")
      assert.include(replies()[0]?.text ?? "", "agent_connection_missing")
      const [row] = yield* sql<{ id: string }>`
        SELECT id FROM work_items WHERE organization_id = ${ORG} AND session_key = ${`slack:${TEAM}:${CHANNEL}:${ts}`}`
      const id = row?.id ?? ""
      const failed = yield* itemOf(admin.cookie, id)
      assert.deepStrictEqual(
        {
          state: failed.state,
          phase: failed.phase,
          active_run_id: failed.active_run_id,
          actions: failed.available_actions
        },
        { state: "FAILED", phase: "INTAKE", active_run_id: null, actions: ["RETRY", "CANCEL"] }
      )

      const retried = yield* request(
        `/api/v1/organizations/${ORG}/work-items/${id}/actions`,
        json(admin.cookie, "POST", { action: "RETRY" })
      )
      assert.strictEqual(retried.status, 200, retried.text)
      const retriedItem = (retried.json as { data: Record<string, unknown> }).data
      assert.strictEqual(retriedItem.state, "IN_PROGRESS")
      assert.strictEqual(retriedItem.phase, "INTAKE")
      assert.isString(retriedItem.active_run_id)
      const runs = yield* sql<{ id: string; session_key: string | null }>`
        SELECT r.id, j.session_key FROM workflow_runs r JOIN jobs j ON j.run_id = r.id
        WHERE r.organization_id = ${ORG} AND r.workflow_type = 'work_item_intake' ORDER BY r.created_at`
      assert.strictEqual(runs.length, 2)
      assert.strictEqual(runs[1]?.id, retriedItem.active_run_id)
      assert.strictEqual(runs[1]?.session_key, `slack:${TEAM}:${CHANNEL}:${ts}`)

      yield* Effect.orDie(eventually(Effect.sync(replies), (found) => found.length === 2, Duration.seconds(30)))
      const again = yield* Effect.orDie(eventually(itemOf(admin.cookie, id), (item) => item.state === "FAILED"))
      assert.deepStrictEqual(again.available_actions, ["RETRY", "CANCEL"])
    })
  )
})

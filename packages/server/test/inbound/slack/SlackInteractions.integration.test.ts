/**
 * `POST /api/v1/slack/interactions` (a plan waits for APPROVE from the dashboard, a Slack button or
 * a reply): a click on a plan's Approve or Reject button, signed as Slack signs its interactivity
 * requests (v0 over the raw form body), is acknowledged at once, applied once, audited as the Slack
 * user, and said in the thread; a forged, stale or malformed request writes nothing, and a button
 * outside its item's thread changes nothing. Requests are built as Slack sends them:
 * `application/x-www-form-urlencoded` with the interaction's JSON in `payload`.
 */
import { eventually, FakeSlack, slackSignature } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { planButtons } from "../../../src/features/workItems/WorkItemReplies.ts"
import { blocksOf } from "../../../src/outbound/slack/SlackChat.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request, testSettings } from "../../support/TestServer.ts"

const ORG = "slack-buttons"
const TEAM = "T0BUTTONS"
const BOT = "U0BOSUN"
const TOKEN = "xoxb-slack-buttons-test-7a8b"
const SECRET = "slack-buttons-signing-secret-9c0d"
const CHANNEL = "C0PLANS"

// No AGENT lane: the implement run an approval queues stays QUEUED for the assertions.
const defaults = testSettings()
const cluster = { ...defaults.cluster, scheduler: { ...defaults.cluster.scheduler, lanes: { AGENT: 0, REVIEW: 4 } } }

const Stack = Layer.unwrap(
  Effect.map(FakeSlack, (fake) => layerTestServer({ settings: { slackApiUrl: new URL(fake.apiUrl), cluster } }))
).pipe(Layer.provideMerge(FakeSlack.layer))

let connectedOnce = false
const connected = Effect.gen(function* () {
  if (connectedOnce) return
  const fake = yield* FakeSlack
  fake.addWorkspace({ token: TOKEN, teamId: TEAM, teamName: "Buttons", botUserId: BOT })
  const admin = yield* signIn("buttons-admin", [[ORG, "ADMIN"]])
  const response = yield* request(`/api/v1/organizations/${ORG}/slack-connection`, {
    method: "PUT",
    headers: { cookie: admin.cookie, "content-type": "application/json" },
    body: JSON.stringify({ bot_token: TOKEN, signing_secret: SECRET })
  })
  assert.strictEqual(response.status, 200, response.text)
  connectedOnce = true
})

let seq = 0
const nextTs = () => `1732380${String(++seq).padStart(3, "0")}.000100`

/** A work item of the thread `threadTs` whose plan waits for approval (as an intake run leaves it). */
const waitingItem = (threadTs: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ id: string }>`
      INSERT INTO work_items (id, organization_id, kind, source, state, phase, waiting_reason, title, session_key)
      VALUES (${`wi-button-${threadTs.replace(".", "")}`}, ${ORG}, 'TASK', 'CHAT', 'WAITING', 'PLANNING', 'APPROVAL',
              'Add rate limits', ${`slack:${TEAM}:${CHANNEL}:${threadTs}`})
      RETURNING id`
    return row?.id ?? ""
  })

const click = (options: {
  readonly itemId: string
  readonly threadTs: string
  readonly actionId?: string
  readonly triggerId: string
  readonly user?: string
  readonly channel?: string
  readonly type?: string
}) => ({
  type: options.type ?? "block_actions",
  team: { id: TEAM, domain: "buttons" },
  user: { id: options.user ?? "U0ADA", username: "ada", team_id: TEAM },
  api_app_id: "A0BOSUN",
  token: "legacy-verification-token-unused",
  container: { type: "message", message_ts: "1732389999.000100", channel_id: CHANNEL, is_ephemeral: false },
  trigger_id: options.triggerId,
  channel: { id: options.channel ?? CHANNEL, name: "plans" },
  message: { type: "message", ts: "1732389999.000100", thread_ts: options.threadTs, user: BOT, text: "Plan" },
  response_url: "https://hooks.slack.com/actions/T0BUTTONS/1/abc",
  actions: [
    {
      action_id: options.actionId ?? "work_item.approve",
      block_id: "b1",
      value: options.itemId,
      type: "button",
      action_ts: "1732390000.000200"
    }
  ]
})

const formOf = (payload: unknown) => new URLSearchParams({ payload: JSON.stringify(payload) }).toString()

const send = (body: string, options: { readonly secret?: string; readonly at?: number } = {}) => {
  const at = options.at ?? Math.floor(Date.now() / 1000)
  return request("/api/v1/slack/interactions", {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-slack-request-timestamp": String(at),
      "x-slack-signature": slackSignature(options.secret ?? SECRET, at, body)
    },
    body
  })
}

const deliveryOf = (triggerId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ processed: boolean; ignored_reason: string | null; event: string; action: string | null }>`
      SELECT processed_at IS NOT NULL AS processed, ignored_reason, event, action FROM slack_deliveries
      WHERE delivery_id = ${`interaction:${triggerId}`}`.pipe(Effect.orDie)
  )

const processed = (triggerId: string) =>
  Effect.map(
    Effect.orDie(eventually(deliveryOf(triggerId), (rows) => rows[0]?.processed === true)),
    (rows) => rows[0]?.ignored_reason ?? null
  )

const itemOf = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ state: string; phase: string; run_type: string | null }>`
      SELECT w.state, w.phase, r.workflow_type AS run_type
      FROM work_items w LEFT JOIN workflow_runs r ON r.id = w.active_run_id
      WHERE w.id = ${id}`.pipe(
      Effect.map((rows) => rows[0]),
      Effect.orDie
    )
  )

const rowCounts = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ deliveries: number; outbox: number }>`
    SELECT (SELECT count(*)::int FROM slack_deliveries) AS deliveries, (SELECT count(*)::int FROM outbox) AS outbox`.pipe(
    Effect.map((rows) => rows[0]),
    Effect.orDie
  )
)

const botRepliesIn = (threadTs: string) =>
  Effect.map(FakeSlack, (slack) =>
    slack.messages(CHANNEL).filter((message) => message.thread_ts === threadTs && message.user === BOT)
  )

layer(Stack, { excludeTestServices: true, timeout: "60 seconds" })("Slack interactions", (it) => {
  it.effect(
    "Approve under a plan approves its item once, queues the implement run, audits the Slack user and says so in the thread",
    () =>
      Effect.gen(function* () {
        yield* connected
        const thread = nextTs()
        const id = yield* waitingItem(thread)
        const body = formOf(click({ itemId: id, threadTs: thread, triggerId: "13345.7001.approve" }))
        const started = Date.now()
        const answered = yield* send(body)
        assert.strictEqual(answered.status, 200, answered.text)
        assert.isBelow(Date.now() - started, 3_000, "Slack wants the acknowledgement within 3 s")
        assert.deepStrictEqual(answered.json, { data: { accepted: true, duplicate: false } })
        assert.isNull(yield* processed("13345.7001.approve"))
        const [delivery] = yield* deliveryOf("13345.7001.approve")
        assert.deepStrictEqual([delivery?.event, delivery?.action], ["block_actions", "APPROVE"])
        assert.deepStrictEqual(yield* itemOf(id), {
          state: "IN_PROGRESS",
          phase: "IMPLEMENTING",
          run_type: "work_item_implement"
        })

        const sql = yield* SqlClient.SqlClient
        const audits = yield* sql<{ actor_kind: string; actor_external: string; action: string; target: string }>`
          SELECT actor_kind, actor_external, action, target FROM audit_events
          WHERE organization_id = ${ORG} AND target = ${`work_item:${id}`}`
        assert.deepStrictEqual(audits, [
          {
            actor_kind: "provider_user",
            actor_external: `slack:${TEAM}:U0ADA`,
            action: "work_item.approve",
            target: `work_item:${id}`
          }
        ])
        const replies = yield* Effect.orDie(eventually(botRepliesIn(thread), (found) => found.length === 1))
        assert.strictEqual(
          replies[0]?.text,
          "<@U0ADA> approved the plan. Bosun is making the change and will post the pull request here."
        )

        // The same trigger again (a resent request): acknowledged as a duplicate, applied once.
        const again = yield* send(body)
        assert.strictEqual(again.status, 200, again.text)
        assert.deepStrictEqual(again.json, { data: { accepted: true, duplicate: true } })
        // A second click (a new trigger) on an item no longer waiting changes nothing.
        const late = yield* send(formOf(click({ itemId: id, threadTs: thread, triggerId: "13345.7001.late" })))
        assert.strictEqual(late.status, 200, late.text)
        assert.strictEqual(
          yield* processed("13345.7001.late"),
          "the work item is not waiting for approval (it is IN_PROGRESS)"
        )
        const runs = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM workflow_runs WHERE input_snapshot->>'work_item_id' = ${id}`
        assert.deepStrictEqual(runs, [{ n: 1 }])
        assert.strictEqual((yield* botRepliesIn(thread)).length, 1)
      })
  )

  it.effect("Reject cancels the item and says who rejected it", () =>
    Effect.gen(function* () {
      yield* connected
      const thread = nextTs()
      const id = yield* waitingItem(thread)
      const answered = yield* send(
        formOf(
          click({
            itemId: id,
            threadTs: thread,
            triggerId: "13345.7002.reject",
            actionId: "work_item.reject",
            user: "U0BEN"
          })
        )
      )
      assert.strictEqual(answered.status, 200, answered.text)
      assert.isNull(yield* processed("13345.7002.reject"))
      const item = yield* itemOf(id)
      assert.strictEqual(item?.state, "CANCELLED")
      const replies = yield* Effect.orDie(eventually(botRepliesIn(thread), (found) => found.length === 1))
      assert.strictEqual(replies[0]?.text, "<@U0BEN> rejected the plan; nothing will be changed.")
    })
  )

  it.effect("a button naming an item of another thread changes nothing", () =>
    Effect.gen(function* () {
      yield* connected
      const thread = nextTs()
      const id = yield* waitingItem(thread)
      const elsewhere = yield* send(
        formOf(click({ itemId: id, threadTs: nextTs(), triggerId: "13345.7003.elsewhere" }))
      )
      assert.strictEqual(elsewhere.status, 200, elsewhere.text)
      assert.strictEqual(
        yield* processed("13345.7003.elsewhere"),
        "the button does not belong to a work item of its thread"
      )
      assert.deepStrictEqual(yield* itemOf(id), { state: "WAITING", phase: "PLANNING", run_type: null })
    })
  )

  it.effect(
    "a forged, stale, unsigned or malformed request is refused and writes nothing; other interactions are acknowledged, not accepted",
    () =>
      Effect.gen(function* () {
        yield* connected
        const thread = nextTs()
        const id = yield* waitingItem(thread)
        const body = formOf(click({ itemId: id, threadTs: thread, triggerId: "13345.7004.refused" }))
        const before = yield* rowCounts

        const forged = yield* send(body, { secret: "not-the-signing-secret" })
        assert.strictEqual(forged.status, 401, forged.text)
        assert.strictEqual(errorCode(forged.json), "unauthorized")
        const stale = yield* send(body, { at: Math.floor(Date.now() / 1000) - 301 })
        assert.strictEqual(stale.status, 401, stale.text)
        assert.include(stale.text, "more than 5 minutes")
        const unsigned = yield* request("/api/v1/slack/interactions", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body
        })
        assert.strictEqual(unsigned.status, 400, unsigned.text)
        assert.strictEqual(errorCode(unsigned.json), "invalid_header")
        const notForm = yield* send("payload=%7Bnot-json")
        assert.strictEqual(notForm.status, 400, notForm.text)
        assert.strictEqual(errorCode(notForm.json), "invalid_body")
        const noTrigger = yield* send(
          formOf({ ...click({ itemId: id, threadTs: thread, triggerId: "x" }), trigger_id: undefined })
        )
        assert.strictEqual(noTrigger.status, 400, noTrigger.text)

        const shortcut = yield* send(
          formOf({ ...click({ itemId: id, threadTs: thread, triggerId: "13345.7004.view" }), type: "view_submission" })
        )
        assert.strictEqual(shortcut.status, 200, shortcut.text)
        assert.deepStrictEqual(shortcut.json, { data: { accepted: false, duplicate: false } })
        const otherButton = yield* send(
          formOf(click({ itemId: id, threadTs: thread, triggerId: "13345.7004.other", actionId: "someone.else" }))
        )
        assert.deepStrictEqual(otherButton.json, { data: { accepted: false, duplicate: false } })

        assert.deepStrictEqual(yield* rowCounts, before)
        assert.deepStrictEqual(yield* itemOf(id), { state: "WAITING", phase: "PLANNING", run_type: null })
      })
  )

  it("a plan's buttons are Block Kit: its text in sections of at most 3,000 characters, then Approve and Reject", () => {
    const text = "p".repeat(6_500)
    const blocks = blocksOf(text, planButtons("wi-1"))
    assert.deepStrictEqual(
      blocks.map((block) => block.type),
      ["section", "section", "section", "actions"]
    )
    const sections = blocks.filter((block) => block.type === "section")
    assert.deepStrictEqual(
      sections.map((block) => ("text" in block ? block.text.text.length : 0)),
      [3_000, 3_000, 500]
    )
    assert.deepStrictEqual(blocks[3], {
      type: "actions",
      elements: [
        {
          type: "button",
          action_id: "work_item.approve",
          text: { type: "plain_text", text: "Approve" },
          value: "wi-1",
          style: "primary"
        },
        {
          type: "button",
          action_id: "work_item.reject",
          text: { type: "plain_text", text: "Reject" },
          value: "wi-1",
          style: "danger"
        }
      ]
    })
  })
})

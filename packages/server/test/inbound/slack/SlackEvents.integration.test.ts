/**
 * `POST /api/v1/slack/events` and the Slack inbox: signed with Slack's v0 scheme and a 5-minute
 * window, `url_verification` answered, `event_id` deduplicated (Slack's retries acknowledged, not
 * processed again), and messages addressed to Bosun becoming one work item per thread — by mention,
 * direct message, or passive listening — with follow-ups in the thread kept on the same item.
 * Requests are signed as Slack signs them (FakeSlack's helpers).
 */
import { eventually, FakeSlack, signedSlackHeaders } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { threadUrl, titleOfMessage } from "../../../src/inbound/slack/SlackInbox.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request, testSettings } from "../../support/TestServer.ts"

const ORG = "slack-events"
const TEAM = "T0EVENTS"
const BOT = "U0BOSUN"
const TOKEN = "xoxb-slack-events-test-1b2c"
const SECRET = "slack-events-signing-secret-5d6e"
const CHANNEL = "C0GENERAL"

// No AGENT lane: the intake runs the inbox queues stay QUEUED for the assertions (this server has
// no agent connection, so a claimed one would fail at once and move its item to FAILED).
const defaults = testSettings()
const cluster = { ...defaults.cluster, scheduler: { ...defaults.cluster.scheduler, lanes: { AGENT: 0, REVIEW: 4 } } }

const Stack = Layer.unwrap(
  Effect.map(FakeSlack, (fake) => layerTestServer({ settings: { slackApiUrl: new URL(fake.apiUrl), cluster } }))
).pipe(Layer.provideMerge(FakeSlack.layer))

const json = (cookie: string, method: string, body?: unknown): RequestInit => ({
  method,
  headers: { cookie, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

/** ORG connected to the fake's workspace; answers an admin's cookie. */
const connected = Effect.gen(function* () {
  const fake = yield* FakeSlack
  fake.addWorkspace({ token: TOKEN, teamId: TEAM, teamName: "Events", botUserId: BOT })
  const admin = yield* signIn("events-admin", [[ORG, "ADMIN"]])
  const response = yield* request(
    `/api/v1/organizations/${ORG}/slack-connection`,
    json(admin.cookie, "PUT", { bot_token: TOKEN, signing_secret: SECRET })
  )
  assert.strictEqual(response.status, 200, response.text)
  return admin.cookie
})

const post = (body: string, headers: Record<string, string>) =>
  request("/api/v1/slack/events", { method: "POST", headers, body })

const deliver = (
  payload: unknown,
  options: { readonly secret?: string; readonly at?: number; readonly retry?: number } = {}
) => {
  const body = JSON.stringify(payload)
  return post(body, {
    ...signedSlackHeaders(options.secret ?? SECRET, body, options.at),
    ...(options.retry === undefined
      ? {}
      : { "x-slack-retry-num": String(options.retry), "x-slack-retry-reason": "http_timeout" })
  })
}

let seq = 0
const nextTs = () => `1732370${String(++seq).padStart(3, "0")}.000100`

const callback = (eventId: string, event: Record<string, unknown>) => ({
  type: "event_callback",
  team_id: TEAM,
  api_app_id: "A0BOSUN",
  event_id: eventId,
  event_time: 1_732_370_000,
  event: { channel: CHANNEL, channel_type: "channel", ...event }
})

const deliveryOf = (eventId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ processed: boolean; ignored_reason: string | null }>`
      SELECT processed_at IS NOT NULL AS processed, ignored_reason FROM slack_deliveries
      WHERE delivery_id = ${eventId}`.pipe(Effect.orDie)
  )

const processed = (eventId: string) =>
  Effect.map(
    Effect.orDie(eventually(deliveryOf(eventId), (rows) => rows[0]?.processed === true)),
    (rows) => rows[0]?.ignored_reason ?? null
  )

const itemsOf = (sessionKey: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string }>`
      SELECT id FROM work_items WHERE organization_id = ${ORG} AND session_key = ${sessionKey}`.pipe(Effect.orDie)
  )

const rowCount = (table: "slack_deliveries" | "outbox") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql.literal(table)}`.pipe(
      Effect.map((rows) => rows[0]?.n ?? 0),
      Effect.orDie
    )
  )

layer(Stack, { excludeTestServices: true, timeout: "60 seconds" })("Slack events", (it) => {
  it.effect("url_verification signed with a connected workspace's secret is answered with its challenge", () =>
    Effect.gen(function* () {
      yield* connected
      const challenge = {
        token: "legacy",
        challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
        type: "url_verification"
      }
      const answered = yield* deliver(challenge)
      assert.strictEqual(answered.status, 200, answered.text)
      assert.deepStrictEqual(answered.json, { challenge: challenge.challenge })
      const unsigned = yield* deliver(challenge, { secret: "not-the-secret" })
      assert.strictEqual(unsigned.status, 401)
      assert.strictEqual(errorCode(unsigned.json), "unauthorized")
    })
  )

  it.effect(
    "missing headers are a 400 naming them; a bad signature or a stale timestamp is a 401 and writes nothing",
    () =>
      Effect.gen(function* () {
        yield* connected
        const body = JSON.stringify(
          callback("Ev0REFUSED", { type: "app_mention", user: "U0ADA", text: `<@${BOT}> hi`, ts: nextTs() })
        )
        const signed = signedSlackHeaders(SECRET, body)
        const noTimestamp = yield* post(body, {
          "content-type": "application/json",
          "x-slack-signature": signed["x-slack-signature"]
        })
        assert.strictEqual(noTimestamp.status, 400)
        assert.strictEqual(errorCode(noTimestamp.json), "invalid_header")
        assert.include(noTimestamp.text, "X-Slack-Request-Timestamp")
        const noSignature = yield* post(body, {
          "content-type": "application/json",
          "x-slack-request-timestamp": signed["x-slack-request-timestamp"]
        })
        assert.strictEqual(noSignature.status, 400)
        assert.include(noSignature.text, "X-Slack-Signature")

        const deliveriesBefore = yield* rowCount("slack_deliveries")
        const outboxBefore = yield* rowCount("outbox")
        const forged = yield* post(body, { ...signed, "x-slack-signature": `v0=${"0".repeat(64)}` })
        assert.strictEqual(forged.status, 401)
        const tampered = yield* post(body.replace("hi", "hi!"), signed)
        assert.strictEqual(tampered.status, 401)
        const stale = yield* deliver(JSON.parse(body), { at: Math.floor(Date.now() / 1000) - 6 * 60 })
        assert.strictEqual(stale.status, 401)
        assert.include(stale.text, "5 minutes")
        const unknownTeam = yield* deliver({ ...JSON.parse(body), team_id: "T0NOBODY" })
        assert.strictEqual(unknownTeam.status, 401)
        assert.strictEqual(yield* rowCount("slack_deliveries"), deliveriesBefore)
        assert.strictEqual(yield* rowCount("outbox"), outboxBefore)

        const notJson = yield* post("{", signedSlackHeaders(SECRET, "{"))
        assert.strictEqual(notJson.status, 400)
        assert.strictEqual(errorCode(notJson.json), "invalid_body")
      })
  )

  it.effect(
    "a mention starts one work item for its thread; Slack's retry of the event is a duplicate and the mention's message event is not counted again",
    () =>
      Effect.gen(function* () {
        const cookie = yield* connected
        const ts = nextTs()
        const text = `<@${BOT}> how do refunds work for EUR orders?`
        const mention = callback("Ev1MENTION", { type: "app_mention", user: "U0ADA", text, ts })
        const first = yield* deliver(mention)
        assert.strictEqual(first.status, 202, first.text)
        assert.deepStrictEqual(first.json, { data: { accepted: true, duplicate: false } })
        const retried = yield* deliver(mention, { retry: 1 })
        assert.strictEqual(retried.status, 202)
        assert.deepStrictEqual(retried.json, { data: { accepted: true, duplicate: true } })
        assert.isNull(yield* processed("Ev1MENTION"))

        const echo = yield* deliver(callback("Ev1MESSAGE", { type: "message", user: "U0ADA", text, ts }))
        assert.strictEqual(echo.status, 202)
        assert.strictEqual(yield* processed("Ev1MESSAGE"), "a mention, handled as its app_mention")

        const sessionKey = `slack:${TEAM}:${CHANNEL}:${ts}`
        const items = yield* itemsOf(sessionKey)
        assert.strictEqual(items.length, 1)
        const read = yield* request(`/api/v1/organizations/${ORG}/work-items/${items[0]?.id}`, json(cookie, "GET"))
        assert.strictEqual(read.status, 200)
        const item = (read.json as { data: Record<string, unknown> }).data
        assert.deepStrictEqual(
          {
            kind: item.kind,
            source: item.source,
            state: item.state,
            phase: item.phase,
            waiting_reason: item.waiting_reason,
            title: item.title,
            summary: item.summary,
            source_url: item.source_url,
            requested_by_login: item.requested_by_login,
            available_actions: item.available_actions
          },
          {
            kind: "TASK",
            source: "CHAT",
            state: "OPEN",
            phase: "INTAKE",
            waiting_reason: null,
            title: "how do refunds work for EUR orders?",
            summary: text,
            source_url: threadUrl(TEAM, CHANNEL, ts),
            requested_by_login: "U0ADA",
            available_actions: ["CANCEL"]
          }
        )
        const sql = yield* SqlClient.SqlClient
        const intake = yield* sql<{ workflow_type: string; status: string; session_key: string | null }>`
          SELECT r.workflow_type, r.status, j.session_key FROM workflow_runs r JOIN jobs j ON j.run_id = r.id
          WHERE r.id = ${item.active_run_id as string}`.pipe(Effect.orDie)
        assert.deepStrictEqual(intake, [
          { workflow_type: "work_item_intake", status: "QUEUED", session_key: sessionKey }
        ])
      })
  )

  it.effect(
    "replies in the thread stay with its work item; bots, edits and unaddressed messages are recorded as ignored",
    () =>
      Effect.gen(function* () {
        yield* connected
        const ts = nextTs()
        yield* deliver(
          callback("Ev2START", { type: "app_mention", user: "U0ADA", text: `<@${BOT}> the deploy is stuck`, ts })
        )
        assert.isNull(yield* processed("Ev2START"))
        const sessionKey = `slack:${TEAM}:${CHANNEL}:${ts}`
        const [item] = yield* itemsOf(sessionKey)

        yield* deliver(
          callback("Ev2REPLY", {
            type: "message",
            user: "U0BEN",
            text: "it is the EU one",
            ts: nextTs(),
            thread_ts: ts
          })
        )
        assert.isNull(yield* processed("Ev2REPLY"))
        const sql = yield* SqlClient.SqlClient
        const conversation = yield* sql<{ author: string | null; body: string }>`
          SELECT author, body FROM work_item_messages WHERE work_item_id = ${item?.id ?? ""} ORDER BY id`
        assert.deepStrictEqual(conversation, [{ author: "U0BEN", body: "it is the EU one" }])
        const intakes = yield* sql<{ id: string }>`
          SELECT r.id FROM workflow_runs r JOIN jobs j ON j.run_id = r.id
          WHERE j.session_key = ${sessionKey} AND r.workflow_type = 'work_item_intake' ORDER BY r.created_at`
        assert.strictEqual(intakes.length, 2, "the follow-up queued a second intake run on the thread's session")
        const [followed] = yield* sql<{ state: string; phase: string; active_run_id: string | null }>`
          SELECT state, phase, active_run_id FROM work_items WHERE id = ${item?.id ?? ""}`
        assert.deepStrictEqual(followed, {
          state: "IN_PROGRESS",
          phase: "INTAKE",
          active_run_id: intakes[1]?.id ?? null
        })
        yield* deliver(
          callback("Ev2OWN", {
            type: "message",
            user: BOT,
            bot_id: "B0BOSUN",
            text: "On it.",
            ts: nextTs(),
            thread_ts: ts
          })
        )
        assert.strictEqual(yield* processed("Ev2OWN"), "a bot's message (Bosun's own included)")
        yield* deliver(callback("Ev2EDIT", { type: "message", subtype: "message_changed", ts: nextTs() }))
        assert.strictEqual(yield* processed("Ev2EDIT"), "message message_changed is not acted on")
        yield* deliver(callback("Ev2CHAT", { type: "message", user: "U0ADA", text: "lunch?", ts: nextTs() }))
        assert.strictEqual(yield* processed("Ev2CHAT"), "the message is not addressed to Bosun")
        yield* deliver(callback("Ev2JOIN", { type: "member_joined_channel", user: "U0CAT" }))
        assert.strictEqual(yield* processed("Ev2JOIN"), "event member_joined_channel is not handled")
        assert.strictEqual((yield* itemsOf(sessionKey)).length, 1)
      })
  )

  it.effect(
    "with passive listening on, a top-level message in the channel starts a work item; a direct message always does",
    () =>
      Effect.gen(function* () {
        const cookie = yield* connected
        const channel = "C0PASSIVE"
        const off = nextTs()
        yield* deliver(
          callback("Ev3OFF", { type: "message", channel, user: "U0ADA", text: "why is checkout slow?", ts: off })
        )
        assert.strictEqual(yield* processed("Ev3OFF"), "the message is not addressed to Bosun")

        const toggled = yield* request(
          `/api/v1/organizations/${ORG}/slack/channels/${channel}/passive-listening`,
          json(cookie, "PUT", { enabled: true })
        )
        assert.strictEqual(toggled.status, 200, toggled.text)
        const on = nextTs()
        yield* deliver(
          callback("Ev3ON", { type: "message", channel, user: "U0ADA", text: "why is search slow?", ts: on })
        )
        assert.isNull(yield* processed("Ev3ON"))
        assert.strictEqual((yield* itemsOf(`slack:${TEAM}:${channel}:${on}`)).length, 1)

        const dm = nextTs()
        yield* deliver(
          callback("Ev3DM", {
            type: "message",
            channel: "D0ADA",
            channel_type: "im",
            user: "U0ADA",
            text: "can you bump lodash?",
            ts: dm
          })
        )
        assert.isNull(yield* processed("Ev3DM"))
        assert.strictEqual((yield* itemsOf(`slack:${TEAM}:D0ADA:${dm}`)).length, 1)
      })
  )

  it("a message's title drops mentions and is at most 120 characters", () => {
    assert.strictEqual(titleOfMessage(`<@${BOT}>   please   look <@U0BEN|ben> at this`), "please look at this")
    assert.strictEqual(titleOfMessage(`<@${BOT}>`), "Slack message")
    assert.strictEqual(titleOfMessage("x".repeat(200)).length, 120)
  })

  it.effect(
    "a plain approval in the thread of a plan waiting for one is APPROVE; a cancelled item takes no follow-up",
    () =>
      Effect.gen(function* () {
        yield* connected
        const sql = yield* SqlClient.SqlClient
        const ts = nextTs()
        yield* deliver(
          callback("Ev4START", { type: "app_mention", user: "U0ADA", text: `<@${BOT}> add rate limits`, ts })
        )
        assert.isNull(yield* processed("Ev4START"))
        const [item] = yield* itemsOf(`slack:${TEAM}:${CHANNEL}:${ts}`)
        const id = item?.id ?? ""
        // As the intake run leaves a change request: a plan waiting for approval.
        yield* sql`UPDATE work_items SET state = 'WAITING', phase = 'PLANNING', waiting_reason = 'APPROVAL', active_run_id = NULL
                 WHERE id = ${id}`
        // The message event of a mention is handled as its app_mention...
        yield* deliver(
          callback("Ev4APPROVE", {
            type: "message",
            user: "U0ADA",
            text: `<@${BOT}> LGTM!`,
            ts: nextTs(),
            thread_ts: ts
          })
        )
        assert.strictEqual(yield* processed("Ev4APPROVE"), "a mention, handled as its app_mention")
        yield* deliver(
          callback("Ev4APPROVE2", {
            type: "app_mention",
            user: "U0ADA",
            text: `<@${BOT}> LGTM!`,
            ts: nextTs(),
            thread_ts: ts
          })
        )
        assert.isNull(yield* processed("Ev4APPROVE2"))
        const [approved] = yield* sql<{
          state: string
          phase: string
        }>`SELECT state, phase FROM work_items WHERE id = ${id}`
        assert.deepStrictEqual(approved, { state: "IN_PROGRESS", phase: "IMPLEMENTING" })
        const recorded = yield* sql<{
          n: number
        }>`SELECT count(*)::int AS n FROM work_item_messages WHERE work_item_id = ${id}`
        assert.deepStrictEqual(recorded, [{ n: 0 }], "an approval is an action, not part of the conversation")

        yield* sql`UPDATE work_items SET state = 'CANCELLED', phase = 'DONE' WHERE id = ${id}`
        yield* deliver(
          callback("Ev4LATE", { type: "message", user: "U0BEN", text: "any news?", ts: nextTs(), thread_ts: ts })
        )
        assert.strictEqual(yield* processed("Ev4LATE"), `work item ${id} was cancelled; REOPEN it to continue`)
      })
  )
})

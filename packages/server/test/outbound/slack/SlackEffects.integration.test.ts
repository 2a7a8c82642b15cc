/**
 * Slack, connected and posted to (Slack answering 429 twice then 200 → exactly one message; a
 * provider failing 5 times → the effect in `bosun-effects-dlq`, visible to the operator CLI and
 * replayable). A real Bosun with the real `@slack/web-api` client against a local fake of Slack's
 * Web API; the CLI runs as its own process on the same database.
 */
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { eventually, FakeSlack, TestDatabase } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { WebClient } from "@slack/web-api"
import { Duration, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { ProviderEffectsRepo } from "../../../src/outbound/effects/ProviderEffectsRepo.ts"
import { EFFECT_METADATA_TYPE } from "../../../src/outbound/slack/SlackChat.ts"
import { SLACK_MESSAGE, type SlackMessage } from "../../../src/outbound/slack/SlackEffects.ts"
import { Outbox } from "../../../src/platform/storage/Outbox.ts"
import { Queues } from "../../../src/platform/storage/Queue.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { cleanEnv } from "../../support/Process.ts"
import { generateMasterKey, layerTestServer, request } from "../../support/TestServer.ts"

const ORG = "slack-effects"
const OTHER_ORG = "slack-effects-other"
const TOKEN = "xoxb-bosun-test-token-7f3a"
const SIGNING_SECRET = "slack-signing-secret-91c2"
const CHANNEL = "C0SUPPORT"
const MASTER_KEY = generateMasterKey()

const cliScript = fileURLToPath(new URL("../../../src/cli/main.ts", import.meta.url))

const bosun = (args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const database = yield* TestDatabase
    return yield* Effect.callback<{ code: number; stdout: string; stderr: string }>((resume) => {
      execFile(
        process.execPath,
        [cliScript, ...args],
        {
          env: cleanEnv({
            DATABASE_URL: database.url,
            BOSUN_DATA_DIR: "/nonexistent/never-created",
            BOSUN_MASTER_KEY: MASTER_KEY
          }),
          timeout: 60_000
        },
        (error, stdout, stderr) =>
          resume(
            Effect.succeed({
              code: error === null ? 0 : typeof error.code === "number" ? error.code : -1,
              stdout,
              stderr
            })
          )
      )
    })
  })

const Stack = Layer.unwrap(
  Effect.map(FakeSlack, (fake) =>
    layerTestServer({
      settings: { slackApiUrl: new URL(fake.apiUrl) },
      secrets: { masterKey: { key: Redacted.make(MASTER_KEY), version: 1, previous: new Map() } }
    })
  )
).pipe(Layer.provideMerge(FakeSlack.layer))

const json = (cookie: string, method: string, body?: unknown): RequestInit => ({
  method,
  headers: { cookie, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

/** Connects ORG to the fake's workspace as an admin; answers the admin's cookie. */
const connected = Effect.gen(function* () {
  const fake = yield* FakeSlack
  fake.addWorkspace({ token: TOKEN, teamId: "T0ACME", teamName: "Acme", botUserId: "U0BOSUN" })
  const admin = yield* signIn("slack-admin", [[ORG, "ADMIN"]])
  const response = yield* request(
    `/api/v1/organizations/${ORG}/slack-connection`,
    json(admin.cookie, "PUT", { bot_token: TOKEN, signing_secret: SIGNING_SECRET })
  )
  assert.strictEqual(response.status, 200, response.text)
  return admin.cookie
})

/** A person's message in the channel, which Bosun's answer goes under. */
const threadParent = (text: string) =>
  Effect.gen(function* () {
    const fake = yield* FakeSlack
    const client = new WebClient(TOKEN, { slackApiUrl: fake.apiUrl })
    const posted = yield* Effect.promise(() => client.chat.postMessage({ channel: CHANNEL, text }))
    return posted.ts as string
  })

const sendEffect = (message: SlackMessage) =>
  Effect.gen(function* () {
    const outbox = yield* Outbox
    yield* outbox.transaction(outbox.write("bosun-effects", SLACK_MESSAGE, message))
  })

const repliesIn = (threadTs: string) =>
  Effect.map(FakeSlack, (fake) => fake.messages(CHANNEL).filter((m) => m.ts !== threadTs && m.thread_ts === threadTs))

const effectRow = (key: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ status: string; attempts: number; result: { channel: string; ts: string } | null; error: string | null }>`
      SELECT status, attempts, result, error FROM provider_effects WHERE idempotency_key = ${key}`.pipe(
      Effect.map((rows) => rows[0]),
      Effect.orDie
    )
  )

layer(Stack, { excludeTestServices: true, timeout: "120 seconds" })("Slack connection and effects", (it) => {
  it.effect("connecting checks the bot token with Slack, records its team and bot user, and returns no secret", () =>
    Effect.gen(function* () {
      const fake = yield* FakeSlack
      fake.addWorkspace({ token: TOKEN, teamId: "T0ACME", teamName: "Acme", botUserId: "U0BOSUN" })
      const admin = yield* signIn("slack-admin", [[ORG, "ADMIN"]])
      const member = yield* signIn("slack-member", [[ORG, "MEMBER"]])
      const path = `/api/v1/organizations/${ORG}/slack-connection`

      const refused = yield* request(
        path,
        json(admin.cookie, "PUT", { bot_token: "xoxb-revoked", signing_secret: SIGNING_SECRET })
      )
      assert.strictEqual(refused.status, 400)
      assert.strictEqual(errorCode(refused.json), "slack_token_invalid")
      assert.include(refused.text, "invalid_auth")
      assert.strictEqual((yield* request(path, json(admin.cookie, "GET"))).status, 404)

      const missing = yield* request(path, json(admin.cookie, "PUT", { bot_token: TOKEN }))
      assert.strictEqual(missing.status, 400)
      assert.strictEqual(errorCode(missing.json), "invalid_body")
      assert.include(missing.text, "signing_secret")

      const forbidden = yield* request(
        path,
        json(member.cookie, "PUT", { bot_token: TOKEN, signing_secret: SIGNING_SECRET })
      )
      assert.strictEqual(forbidden.status, 403)

      const saved = yield* request(
        path,
        json(admin.cookie, "PUT", { bot_token: TOKEN, signing_secret: SIGNING_SECRET })
      )
      assert.strictEqual(saved.status, 200, saved.text)
      const data = (saved.json as { data: Record<string, unknown> }).data
      assert.deepStrictEqual(Object.keys(data).sort(), [
        "bot_user_id",
        "created_at",
        "team_id",
        "team_name",
        "updated_at"
      ])
      assert.strictEqual(data.team_id, "T0ACME")
      assert.strictEqual(data.team_name, "Acme")
      assert.strictEqual(data.bot_user_id, "U0BOSUN")
      assert.notInclude(saved.text, TOKEN)
      assert.notInclude(saved.text, SIGNING_SECRET)

      const read = yield* request(path, json(member.cookie, "GET"))
      assert.strictEqual(read.status, 200)
      assert.deepStrictEqual((read.json as { data: unknown }).data, data)

      const other = yield* signIn("slack-other-admin", [[OTHER_ORG, "ADMIN"]])
      const taken = yield* request(
        `/api/v1/organizations/${OTHER_ORG}/slack-connection`,
        json(other.cookie, "PUT", { bot_token: TOKEN, signing_secret: "another-secret" })
      )
      assert.strictEqual(taken.status, 409)
      assert.strictEqual(errorCode(taken.json), "slack_workspace_taken")

      const sql = yield* SqlClient.SqlClient
      const stored = yield* sql<{ sealed: boolean }>`
        SELECT position(${TOKEN}::bytea IN bot_token) = 0 AND position(${SIGNING_SECRET}::bytea IN signing_secret) = 0
               AS sealed
        FROM slack_connections WHERE organization_id = ${ORG}`.pipe(Effect.orDie)
      assert.deepStrictEqual(stored, [{ sealed: true }])

      const deleted = yield* request(path, json(admin.cookie, "DELETE"))
      assert.deepStrictEqual(deleted.json, { data: { deleted: true } })
      assert.strictEqual((yield* request(path, json(admin.cookie, "GET"))).status, 404)
    })
  )

  it.effect("Slack answering 429 twice then 200 gets exactly one threaded message, after its Retry-After", () =>
    Effect.gen(function* () {
      yield* connected
      const fake = yield* FakeSlack
      const parent = yield* threadParent("@bosun how do refunds work?")
      fake.failNext("chat.postMessage", [
        { status: 429, retryAfter: 1 },
        { status: 429, retryAfter: 1 }
      ])
      const key = "slack.answer:wi-429"
      const started = Date.now()
      yield* sendEffect({
        organization_id: ORG,
        channel: CHANNEL,
        thread_ts: parent,
        text: "Refunds go through the payments service.",
        idempotency_key: key
      })
      yield* Effect.orDie(eventually(effectRow(key), (row) => row?.status === "SUCCEEDED"))
      assert.isAtLeast(Date.now() - started, 2_000)
      yield* Effect.sleep(Duration.millis(500))
      const replies = yield* repliesIn(parent)
      assert.strictEqual(replies.length, 1)
      assert.strictEqual(replies[0]?.text, "Refunds go through the payments service.")
      assert.strictEqual(replies[0]?.user, "U0BOSUN")
      assert.deepStrictEqual(replies[0]?.metadata, { event_type: EFFECT_METADATA_TYPE, event_payload: { key } })
      const posts = fake.calls("chat.postMessage").filter((call) => call.params.thread_ts === parent)
      assert.deepStrictEqual(
        posts.map((call) => call.status),
        [429, 429, 200]
      )
      const row = yield* effectRow(key)
      assert.deepStrictEqual(row?.result, { channel: CHANNEL, ts: replies[0]?.ts })
      assert.strictEqual(row?.attempts, 3)
    })
  )

  it.effect("an effect attempted before whose message Slack already has is found in the thread, not posted twice", () =>
    Effect.gen(function* () {
      yield* connected
      const fake = yield* FakeSlack
      const effects = yield* ProviderEffectsRepo
      const parent = yield* threadParent("@bosun where is the config?")
      const key = "slack.answer:wi-crash"
      // As if a delivery posted the message and died before recording it: the row is PENDING, attempted once.
      const client = new WebClient(TOKEN, { slackApiUrl: fake.apiUrl })
      const posted = yield* Effect.promise(() =>
        client.chat.postMessage({
          channel: CHANNEL,
          thread_ts: parent,
          text: "In config/app.yaml.",
          metadata: { event_type: EFFECT_METADATA_TYPE, event_payload: { key } }
        })
      )
      const message = {
        organization_id: ORG,
        channel: CHANNEL,
        thread_ts: parent,
        text: "In config/app.yaml.",
        idempotency_key: key
      }
      yield* effects.begin({
        organizationId: ORG,
        runId: null,
        kind: SLACK_MESSAGE,
        idempotencyKey: key,
        request: message
      })
      yield* effects.attempted(ORG, key)
      const before = fake.calls("chat.postMessage").length
      yield* sendEffect(message)
      yield* Effect.orDie(eventually(effectRow(key), (row) => row?.status === "SUCCEEDED"))
      assert.deepStrictEqual((yield* effectRow(key))?.result, { channel: CHANNEL, ts: posted.ts })
      assert.strictEqual(fake.calls("chat.postMessage").length, before)
      assert.strictEqual((yield* repliesIn(parent)).length, 1)
    })
  )

  it.effect(
    "Slack failing five deliveries puts the effect in bosun-effects-dlq with Slack's error; the CLI lists it and replays it into one message",
    () =>
      Effect.gen(function* () {
        yield* connected
        const fake = yield* FakeSlack
        const queues = yield* Queues
        const parent = yield* threadParent("@bosun is the deploy stuck?")
        fake.failNext(
          "chat.postMessage",
          Array.from({ length: 5 }, () => ({ status: 500 as const }))
        )
        const key = "slack.answer:wi-dlq"
        yield* sendEffect({
          organization_id: ORG,
          channel: CHANNEL,
          thread_ts: parent,
          text: "The deploy is waiting for approval.",
          idempotency_key: key
        })
        yield* Effect.orDie(eventually(queues.deadLetters.count("bosun-effects"), (n) => n === 1, Duration.seconds(30)))
        const row = yield* effectRow(key)
        assert.strictEqual(row?.status, "PENDING")
        assert.strictEqual(row?.attempts, 5)
        assert.include(row?.error ?? "", "Slack chat.postMessage: HTTP 500")
        assert.strictEqual((yield* repliesIn(parent)).length, 0)

        const listed = yield* bosun(["queues", "dead-letters", "list", "--queue", "bosun-effects"])
        assert.strictEqual(listed.code, 0, listed.stderr)
        const lines = listed.stdout.trim().split("\n")
        assert.strictEqual(lines.at(-1), "1 dead letter")
        const [id, queue, kind, deliveries, , error] = (lines[0] ?? "").split("\t")
        assert.strictEqual(queue, "bosun-effects")
        assert.strictEqual(kind, "kind=slack.message")
        assert.strictEqual(deliveries, "deliveries=5")
        assert.include(error ?? "", "Slack chat.postMessage: HTTP 500")
        assert.notInclude(listed.stdout + listed.stderr, TOKEN)

        const replayed = yield* bosun([
          "queues",
          "dead-letters",
          "replay",
          "--queue",
          "bosun-effects",
          "--id",
          id ?? ""
        ])
        assert.strictEqual(replayed.code, 0, replayed.stderr)
        assert.strictEqual(replayed.stdout.trim(), "Replayed 1 dead letter to bosun-effects")
        yield* Effect.orDie(eventually(effectRow(key), (found) => found?.status === "SUCCEEDED"))
        const replies = yield* repliesIn(parent)
        assert.strictEqual(replies.length, 1)
        assert.strictEqual(replies[0]?.text, "The deploy is waiting for approval.")
        assert.strictEqual(yield* queues.deadLetters.count("bosun-effects"), 0)

        const again = yield* bosun(["queues", "dead-letters", "replay", "--queue", "bosun-effects", "--id", id ?? ""])
        assert.strictEqual(again.code, 1)
        assert.include(again.stderr, "Replayed 0 of 1")
      })
  )
})

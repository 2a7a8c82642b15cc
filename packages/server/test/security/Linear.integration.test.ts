/**
 * Linear, tried as an attacker would, over real HTTP: a captured delivery resent with fresh
 * unsigned headers, and an organization connecting a workspace that is not its own. Linear is the
 * fake (`FakeLinear`), which knows which workspace each token belongs to.
 */
import { createHmac } from "node:crypto"
import { FakeLinear } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { errorCode, signIn } from "../support/Identity.ts"
import { layerTestServer, request, type TestResponse } from "../support/TestServer.ts"

const SECRET = "lin_wh_secret_security_7f3a"
const DAY = 24 * 60 * 60 * 1000

const Stack = Layer.unwrap(
  Effect.map(FakeLinear, (fake) => layerTestServer({ settings: { linearApiUrl: new URL(fake.apiUrl) } }))
).pipe(Layer.provideMerge(FakeLinear.layer))

const connect = (organization: string, cookie: string, body: Record<string, unknown>) =>
  request(`/api/v1/organizations/${organization}/linear-connection`, {
    method: "PUT",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

/** A delivery as it goes over the wire: the exact body, signed, with headers anyone can set. */
const send = (body: string, headers: { readonly delivery: string; readonly timestamp: number }) =>
  request("/api/v1/linear/webhooks", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "Linear-Delivery": headers.delivery,
      "Linear-Event": "Issue",
      "Linear-Timestamp": String(headers.timestamp),
      "Linear-Signature": createHmac("sha256", SECRET).update(body).digest("hex")
    },
    body
  })

const issuePayload = (workspace: string, id: string) => ({
  action: "create",
  type: "Issue",
  organizationId: workspace,
  data: { id, identifier: `ENG-${id}`, title: "Replayed", assigneeId: "user-bosun" }
})

const count = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ n: string }>`SELECT count(*)::text AS n FROM ${sql(table)}`.pipe(Effect.orDie), (rows) =>
      Number(rows[0]?.n ?? 0)
    )
  )

const assertEnvelope = (response: TestResponse, status: number, code: string) => {
  assert.strictEqual(response.status, status, response.text)
  const body = response.json as { error: { code: unknown; message: unknown } }
  assert.deepStrictEqual(Object.keys(body), ["error"])
  assert.deepStrictEqual(Object.keys(body.error).sort(), ["code", "message"])
  assert.strictEqual(body.error.code, code)
  assert.isString(body.error.message)
  return body.error.message as string
}

layer(Stack, { excludeTestServices: true })("Linear, attacked", (it) => {
  it.effect(
    "a valid delivery resent with a new Linear-Delivery and a fresh Linear-Timestamp is refused when its signed webhookTimestamp is stale: 401, nothing written",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeLinear
        fake.addToken("lin_api_replay_key", "ws-replay")
        const admin = yield* signIn("admin-lin-replay", [["lin-replay", "ADMIN"]])
        const connected = yield* connect("lin-replay", admin.cookie, {
          linear_organization_id: "ws-replay",
          webhook_secret: SECRET,
          access_token: "lin_api_replay_key"
        })
        assert.strictEqual(connected.status, 200, connected.text)

        const before = { deliveries: yield* count("linear_deliveries"), outbox: yield* count("outbox") }
        // Captured a day ago: the body (and so its signature) says when Linear sent it.
        const captured = JSON.stringify({ ...issuePayload("ws-replay", "900"), webhookTimestamp: Date.now() - DAY })
        const replayed = yield* send(captured, { delivery: "lin-replay-new-id", timestamp: Date.now() })
        assert.include(assertEnvelope(replayed, 401, "unauthorized"), "replay")
        // A body without the signed time cannot be told from a replay either.
        const unstamped = JSON.stringify(issuePayload("ws-replay", "901"))
        assertEnvelope(
          yield* send(unstamped, { delivery: "lin-replay-unstamped", timestamp: Date.now() }),
          401,
          "unauthorized"
        )
        assert.deepStrictEqual(
          { deliveries: yield* count("linear_deliveries"), outbox: yield* count("outbox") },
          before
        )

        const fresh = JSON.stringify({ ...issuePayload("ws-replay", "902"), webhookTimestamp: Date.now() })
        const accepted = yield* send(fresh, { delivery: "lin-replay-fresh", timestamp: Date.now() })
        assert.strictEqual(accepted.status, 202, accepted.text)
        assert.deepStrictEqual(accepted.json, { data: { accepted: true, duplicate: false } })
        assert.strictEqual(yield* count("linear_deliveries"), before.deliveries + 1)
      })
  )

  it.effect(
    "nobody can connect a workspace without a token of it; a taken workspace id answers exactly as an unknown one",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeLinear
        fake.addToken("lin_api_victim_key", "ws-victim")
        fake.addToken("lin_api_squatter_key", "ws-squatter")
        const squatter = yield* signIn("admin-lin-squatter", [["lin-squatter", "ADMIN"]])
        const victim = yield* signIn("admin-lin-victim", [["lin-victim", "ADMIN"]])
        const connections = yield* count("linear_connections")
        const audits = yield* count("audit_events")

        // The squatter's own token does not prove the victim's workspace.
        const squat = (workspace: string) =>
          connect("lin-squatter", squatter.cookie, {
            linear_organization_id: workspace,
            webhook_secret: "squatter-secret",
            access_token: "lin_api_squatter_key"
          })
        const firstTry = yield* squat("ws-victim")
        const message = assertEnvelope(firstTry, 400, "linear_workspace_mismatch")
        // A token Linear does not know proves nothing either.
        const forged = yield* connect("lin-squatter", squatter.cookie, {
          linear_organization_id: "ws-victim",
          webhook_secret: "squatter-secret",
          access_token: "lin_api_made_up"
        })
        assertEnvelope(forged, 400, "linear_token_invalid")
        // No token at all: a 400 naming the field.
        const tokenless = yield* connect("lin-squatter", squatter.cookie, {
          linear_organization_id: "ws-victim",
          webhook_secret: "squatter-secret"
        })
        assert.include(assertEnvelope(tokenless, 400, "invalid_body"), "access_token")
        assert.strictEqual(yield* count("linear_connections"), connections)
        assert.strictEqual(yield* count("audit_events"), audits)

        // The owner connects; its signed deliveries are its own.
        const owned = yield* connect("lin-victim", victim.cookie, {
          linear_organization_id: "ws-victim",
          webhook_secret: SECRET,
          access_token: "lin_api_victim_key"
        })
        assert.strictEqual(owned.status, 200, owned.text)

        // Taken or unknown, the squatter gets the same answer: ids cannot be probed.
        const taken = yield* squat("ws-victim")
        const unknown = yield* squat("ws-nobody-has-this")
        assert.strictEqual(assertEnvelope(taken, 400, "linear_workspace_mismatch"), message)
        assert.strictEqual(assertEnvelope(unknown, 400, "linear_workspace_mismatch"), message)
        assert.strictEqual(errorCode(taken.json), errorCode(unknown.json))
        assert.strictEqual(yield* count("linear_connections"), connections + 1)
      })
  )
})

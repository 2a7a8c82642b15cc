/**
 * Linear effects: a comment is made once under the id Bosun derives from its idempotency key —
 * after a 429's `Retry-After`, and however often its effect is delivered — and an issue is moved to
 * a workflow state; an expiring OAuth token is renewed once under the Mutex `tracker-token:{org}`
 * however many calls need it at once, and a revoked one is renewed and the call made again. A real
 * Bosun with the real `@linear/sdk` client against a local fake of Linear's GraphQL API and token
 * endpoint.
 */
import { eventually, FakeLinear } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { OrganizationsRepo } from "../../../src/features/identity/OrganizationsRepo.ts"
import { LinearConnectionsRepo } from "../../../src/outbound/linear/LinearConnectionsRepo.ts"
import { LINEAR_COMMENT, LINEAR_ISSUE_STATE } from "../../../src/outbound/linear/LinearEffects.ts"
import { LinearTokens } from "../../../src/outbound/linear/LinearTokens.ts"
import { commentIdFor } from "../../../src/outbound/linear/LinearTracker.ts"
import { Outbox } from "../../../src/platform/storage/Outbox.ts"
import { layerTestServer } from "../../support/TestServer.ts"

const ORG = "linear-effects"
const TOKEN = "lin_api_bosun_effects_test_4e1d"
const ISSUE = "6f1c2a9e-0000-4000-8000-00000000a001"

const Stack = Layer.unwrap(
  Effect.map(FakeLinear, (fake) => layerTestServer({ settings: { linearApiUrl: new URL(fake.apiUrl) } }))
).pipe(Layer.provideMerge(FakeLinear.layer))

const connected = Effect.gen(function* () {
  const fake = yield* FakeLinear
  fake.addToken(TOKEN)
  fake.addIssue({ id: ISSUE, identifier: "ENG-7", title: "Refunds fail for EUR", stateId: "state-todo" })
  fake.addWorkflowState({ id: "state-todo", name: "Todo" })
  fake.addWorkflowState({ id: "state-review", name: "In Review" })
  yield* (yield* OrganizationsRepo).ensure(ORG)
  yield* (yield* LinearConnectionsRepo)
    .upsert(ORG, {
      linearOrganizationId: "lin-org-effects",
      webhookSecret: Redacted.make("linear-webhook-secret-effects"),
      accessToken: Option.some(Redacted.make(TOKEN)),
      appUserId: "lin-user-bosun",
      appUserName: "bosun",
      oauth: Option.none()
    })
    .pipe(Effect.orDie)
})

const CLIENT = { clientId: "lin-client-bosun", clientSecret: "lin-client-secret-9f2e" }

/** `org` connected with an OAuth grant whose access token expires in `expiresInMillis`. */
const connectedWithGrant = (org: string, workspace: string, expiresInMillis: number, refreshToken: string) =>
  Effect.gen(function* () {
    const fake = yield* FakeLinear
    const accessToken = `lin_oauth_initial_${org}`
    fake.addToken(accessToken)
    fake.addIssue({ id: ISSUE, identifier: "ENG-7", title: "Refunds fail for EUR", stateId: "state-todo" })
    yield* (yield* OrganizationsRepo).ensure(org)
    yield* (yield* LinearConnectionsRepo)
      .upsert(org, {
        linearOrganizationId: workspace,
        webhookSecret: Redacted.make(`linear-webhook-secret-${org}`),
        accessToken: Option.some(Redacted.make(accessToken)),
        appUserId: "lin-user-bosun",
        appUserName: "bosun",
        oauth: Option.some({
          clientId: CLIENT.clientId,
          clientSecret: Redacted.make(CLIENT.clientSecret),
          refreshToken: Redacted.make(refreshToken),
          expiresAt: new Date(Date.now() + expiresInMillis)
        })
      })
      .pipe(Effect.orDie)
    return accessToken
  })

const storedGrant = (org: string) =>
  Effect.flatMap(LinearConnectionsRepo, (repo) => repo.credentials(org)).pipe(
    Effect.orDie,
    Effect.map((found) => Option.getOrThrow(found))
  )

const send = (kind: string, payload: Record<string, unknown>) =>
  Effect.gen(function* () {
    const outbox = yield* Outbox
    yield* outbox.transaction(outbox.write("bosun-effects", kind, payload))
  })

const effectRow = (key: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ status: string; attempts: number; result: Record<string, unknown> | null }>`
      SELECT status, attempts, result FROM provider_effects WHERE idempotency_key = ${key}`.pipe(
      Effect.map((rows) => rows[0]),
      Effect.orDie
    )
  )

layer(Stack, { excludeTestServices: true, timeout: "60 seconds" })("Linear effects", (it) => {
  it.effect("a comment answered 429 once is made after Retry-After, once, under the id derived from its key", () =>
    Effect.gen(function* () {
      yield* connected
      const fake = yield* FakeLinear
      fake.failNext("commentCreate", [{ status: 429, retryAfter: 1 }])
      const key = "linear.answer:wi-eng-7"
      const started = Date.now()
      yield* send(LINEAR_COMMENT, {
        organization_id: ORG,
        issue_id: ISSUE,
        body: "Refunds in EUR fail because the currency is not passed on.",
        idempotency_key: key
      })
      yield* Effect.orDie(eventually(effectRow(key), (row) => row?.status === "SUCCEEDED"))
      assert.isAtLeast(Date.now() - started, 1_000)
      // The same effect delivered again (a second wake-up of the same key) changes nothing.
      yield* send(LINEAR_COMMENT, { organization_id: ORG, issue_id: ISSUE, body: "again", idempotency_key: key })
      yield* Effect.sleep(Duration.millis(700))
      const comments = fake.comments(ISSUE)
      assert.strictEqual(comments.length, 1)
      assert.strictEqual(comments[0]?.id, commentIdFor(key))
      assert.strictEqual(comments[0]?.body, "Refunds in EUR fail because the currency is not passed on.")
      assert.deepStrictEqual(
        fake.calls("commentCreate").map((call) => call.status),
        [429, 200]
      )
      // The call after the 429 looked for the comment by its id before creating it.
      assert.strictEqual(fake.calls("comments").length, 1)
      assert.strictEqual(fake.calls("commentCreate")[0]?.headers.authorization, TOKEN)
      const row = yield* effectRow(key)
      assert.deepStrictEqual(row?.result, { comment_id: commentIdFor(key) })
      assert.strictEqual(row?.attempts, 2)
    })
  )

  it.effect("an issue-state effect moves the issue to the workflow state", () =>
    Effect.gen(function* () {
      yield* connected
      const fake = yield* FakeLinear
      const key = "linear.state:wi-eng-7:review"
      yield* send(LINEAR_ISSUE_STATE, {
        organization_id: ORG,
        issue_id: ISSUE,
        state_id: "state-review",
        idempotency_key: key
      })
      yield* Effect.orDie(eventually(effectRow(key), (row) => row?.status === "SUCCEEDED"))
      assert.strictEqual(fake.issue(ISSUE)?.stateId, "state-review")
      assert.deepStrictEqual((yield* effectRow(key))?.result, { state_id: "state-review" })
    })
  )

  it.effect(
    "an expiring OAuth token is renewed once under tracker-token:{org} though five calls need it at once; the rotated pair is stored sealed",
    () =>
      Effect.gen(function* () {
        const org = "linear-oauth-renew"
        const fake = yield* FakeLinear
        fake.reset()
        fake.addRefreshToken({ ...CLIENT, refreshToken: "lin_refresh_first" })
        // Slow enough that five unserialized refreshes would all reach Linear with the same token.
        fake.setTokenDelay(300)
        const initial = yield* connectedWithGrant(org, "lin-org-renew", 30_000, "lin_refresh_first")
        const tokens = yield* LinearTokens
        const before = Date.now()
        const answers = yield* Effect.all(
          Array.from({ length: 5 }, () => tokens.current(org)),
          { concurrency: "unbounded" }
        )
        const requests = fake.tokenRequests()
        assert.strictEqual(requests.length, 1)
        assert.deepStrictEqual(
          { grantType: requests[0]?.grantType, clientId: requests[0]?.clientId, status: requests[0]?.status },
          { grantType: "refresh_token", clientId: CLIENT.clientId, status: 200 }
        )
        const issued = requests[0]?.issued ?? ""
        assert.match(issued, /^lin_oauth_/)
        assert.notStrictEqual(issued, initial)
        for (const answer of answers) {
          assert.strictEqual(Redacted.value(answer.token), issued)
          assert.strictEqual(answer.refreshable, true)
        }
        // The lock was the Mutex's: its lease row names the key.
        const sql = yield* SqlClient.SqlClient
        const leases = yield* sql<{ lock_key: string }>`
          SELECT lock_key FROM mutex_leases WHERE lock_key = ${`tracker-token:${org}`}`
        assert.strictEqual(leases.length, 1)

        const grant = yield* storedGrant(org)
        assert.strictEqual(Redacted.value(grant.accessToken), issued)
        const renewed = Option.getOrThrow(grant.oauth)
        assert.match(Redacted.value(renewed.refreshToken), /^lin_refresh_/)
        assert.notStrictEqual(Redacted.value(renewed.refreshToken), "lin_refresh_first")
        assert.isAtLeast(renewed.expiresAt.getTime(), before + 86_399_000)
        const [row] = yield* sql<{ access_token: Uint8Array; refresh_token: Uint8Array; refreshed: Date | null }>`
          SELECT access_token, refresh_token, access_token_refreshed_at AS refreshed
          FROM linear_connections WHERE organization_id = ${org}`
        assert.notInclude(Buffer.from(row?.access_token ?? []).toString("latin1"), issued)
        assert.notInclude(
          Buffer.from(row?.refresh_token ?? []).toString("latin1"),
          Redacted.value(renewed.refreshToken)
        )
        assert.isNotNull(row?.refreshed ?? null)

        // A token far from expiry is used as it is.
        const again = yield* tokens.current(org)
        assert.strictEqual(Redacted.value(again.token), issued)
        assert.strictEqual(fake.tokenRequests().length, 1)
      })
  )

  it.effect("a revoked OAuth token is renewed with the rotated refresh token and the comment made once", () =>
    Effect.gen(function* () {
      const org = "linear-oauth-revoked"
      const fake = yield* FakeLinear
      fake.reset()
      fake.addRefreshToken({ ...CLIENT, refreshToken: "lin_refresh_revoked" })
      const initial = yield* connectedWithGrant(org, "lin-org-revoked", 3_600_000, "lin_refresh_revoked")
      fake.revokeToken(initial)
      const key = "linear.answer:wi-revoked"
      yield* send(LINEAR_COMMENT, { organization_id: org, issue_id: ISSUE, body: "Fixed.", idempotency_key: key })
      yield* Effect.orDie(eventually(effectRow(key), (row) => row?.status === "SUCCEEDED"))
      const requests = fake.tokenRequests()
      assert.strictEqual(requests.length, 1)
      const issued = requests[0]?.issued ?? ""
      const creates = fake.calls("commentCreate")
      assert.deepStrictEqual(
        creates.map((call) => [call.status, call.headers.authorization]),
        [
          [400, `Bearer ${initial}`],
          [200, `Bearer ${issued}`]
        ]
      )
      assert.strictEqual(fake.comments(ISSUE).length, 1)
      // The refresh token stored is the one Linear rotated to: it renews again.
      fake.revokeToken(issued)
      const renewed = yield* (yield* LinearTokens).renew(org, Redacted.make(issued))
      assert.strictEqual(Redacted.value(renewed.token), fake.tokenRequests()[1]?.issued)
      assert.strictEqual(fake.tokenRequests()[1]?.status, 200)
    })
  )

  it.effect("a refresh token Linear refuses fails the call as Refused with invalid_grant, naming no token", () =>
    Effect.gen(function* () {
      const org = "linear-oauth-refused"
      const fake = yield* FakeLinear
      fake.reset()
      // Never registered at the fake: Linear does not know it.
      yield* connectedWithGrant(org, "lin-org-refused", 1_000, "lin_refresh_unknown")
      const error = yield* Effect.flip((yield* LinearTokens).current(org))
      assert.strictEqual(error.reason, "Refused")
      assert.strictEqual(error.provider, "linear")
      assert.include(error.message, "invalid_grant")
      assert.notInclude(error.message, "lin_refresh_unknown")
      assert.notInclude(error.message, CLIENT.clientSecret)
      assert.strictEqual(fake.tokenRequests()[0]?.status, 400)
      // Nothing was stored: the old grant stays for an operator to replace.
      const grant = yield* storedGrant(org)
      assert.strictEqual(Redacted.value(Option.getOrThrow(grant.oauth).refreshToken), "lin_refresh_unknown")
    })
  )

  it("comment ids are UUIDs of the version-4 layout, one per key", () => {
    const ids = ["a", "b", "linear.answer:wi-1", "linear.answer:wi-1 "].map(commentIdFor)
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.strictEqual(new Set(ids).size, ids.length)
    assert.strictEqual(commentIdFor("a"), ids[0])
  })
})

/**
 * Linear effects (issue 9, "Outbound effects"): a comment is made once under the id Bosun derives
 * from its idempotency key — after a 429's `Retry-After`, and however often its effect is
 * delivered — and an issue is moved to a workflow state. A real Bosun with the real `@linear/sdk`
 * client against a local fake of Linear's GraphQL API.
 */
import { eventually, FakeLinear } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { LINEAR_COMMENT, LINEAR_ISSUE_STATE } from "../../src/linear/LinearEffects.ts"
import { LinearConnectionsRepo } from "../../src/persistence/LinearConnectionsRepo.ts"
import { OrganizationsRepo } from "../../src/persistence/OrganizationsRepo.ts"
import { commentIdFor } from "../../src/providers/LinearTracker.ts"
import { Outbox } from "../../src/storage/Outbox.ts"
import { layerTestServer } from "../support/TestServer.ts"

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
      appUserName: "bosun"
    })
    .pipe(Effect.orDie)
})

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

  it("comment ids are UUIDs of the version-4 layout, one per key", () => {
    const ids = ["a", "b", "linear.answer:wi-1", "linear.answer:wi-1 "].map(commentIdFor)
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.strictEqual(new Set(ids).size, ids.length)
    assert.strictEqual(commentIdFor("a"), ids[0])
  })
})

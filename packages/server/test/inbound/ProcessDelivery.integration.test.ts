/**
 * How the GitHub, Slack and Linear inboxes apply deliveries (`inbound/ProcessDelivery.ts`) on a
 * real Postgres: each delivery once, and one subject's deliveries in arrival order whatever order
 * their wake-ups are handled in — the inbox handles eight messages at once, so a Linear comment's
 * wake-up can run before the wake-up of the delivery that created the work item — except
 * that an earlier delivery that fails is left to its own wake-up rather than holding the subject up.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import { actedOn, processDeliveryOnce } from "../../src/inbound/ProcessDelivery.ts"
import { makeWebhookDeliveries, type WebhookDelivery } from "../../src/inbound/WebhookDeliveries.ts"
import { signIn } from "../support/Identity.ts"
import { layerTestServer, logsNamed } from "../support/TestServer.ts"

const delivery = (organizationId: string, deliveryId: string, subject: string | null): WebhookDelivery => ({
  deliveryId,
  organizationId,
  event: "Comment",
  action: "create",
  payload: { n: deliveryId },
  subject
})

/** Records `ids` one transaction each (as their webhooks are), and a handler that logs what it applied. */
const setUp = (organizationId: string, ids: ReadonlyArray<readonly [string, string | null]>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* signIn(`inbox-${organizationId}`, [[organizationId, "ADMIN"]])
    const deliveries = yield* makeWebhookDeliveries("linear_deliveries")
    for (const [id, subject] of ids) {
      yield* sql.withTransaction(deliveries.record(delivery(organizationId, id, subject), null))
    }
    const applied: Array<string> = []
    const handler = yield* processDeliveryOnce("test.delivery", "test", deliveries, (found) =>
      found.deliveryId.endsWith("-broken")
        ? // Writes, then fails: what it wrote must not outlive it.
          sql`UPDATE linear_deliveries SET ignored_reason = 'half-applied' WHERE delivery_id = ${found.deliveryId}`.pipe(
            Effect.orDie,
            Effect.andThen(Effect.die(new Error(`the provider refused ${found.deliveryId}`)))
          )
        : Effect.sync(() => {
            applied.push(found.deliveryId)
            return actedOn(found.deliveryId.endsWith("-ignored") ? "ignored by the test" : null)
          })
    )
    const wake = (id: string) =>
      handler.handle({ organization_id: organizationId, delivery_id: id }, { deliveries: 1, last: false })
    const state = sql<{ delivery_id: string; processed: boolean; ignored_reason: string | null }>`
      SELECT delivery_id, processed_at IS NOT NULL AS processed, ignored_reason FROM linear_deliveries
      WHERE organization_id = ${organizationId} ORDER BY delivery_id`
    return { applied, wake, state }
  })

layer(layerTestServer(), { excludeTestServices: true })("applying webhook deliveries", (it) => {
  it.effect("a later delivery's wake-up first applies its subject's earlier pending ones, in arrival order", () =>
    Effect.gen(function* () {
      const { applied, wake, state } = yield* setUp("inbox-order", [
        ["d1-issue", "issue-1"],
        ["d2-other", "issue-2"],
        ["d3-comment-ignored", "issue-1"],
        ["d4-comment", "issue-1"]
      ])
      yield* wake("d4-comment")
      assert.deepStrictEqual(applied, ["d1-issue", "d3-comment-ignored", "d4-comment"])
      yield* wake("d1-issue")
      yield* wake("d3-comment-ignored")
      assert.deepStrictEqual(applied, ["d1-issue", "d3-comment-ignored", "d4-comment"], "nothing applied twice")
      assert.deepStrictEqual(yield* state, [
        { delivery_id: "d1-issue", processed: true, ignored_reason: null },
        { delivery_id: "d2-other", processed: false, ignored_reason: null },
        { delivery_id: "d3-comment-ignored", processed: true, ignored_reason: "ignored by the test" },
        { delivery_id: "d4-comment", processed: true, ignored_reason: null }
      ])
      yield* wake("d2-other")
      assert.deepStrictEqual(applied.at(-1), "d2-other")
    })
  )

  it.effect("deliveries without a subject wait for nothing and apply only themselves", () =>
    Effect.gen(function* () {
      const { applied, wake } = yield* setUp("inbox-free", [
        ["f1", null],
        ["f2", null]
      ])
      yield* wake("f2")
      assert.deepStrictEqual(applied, ["f2"])
      yield* wake("f1")
      assert.deepStrictEqual(applied, ["f2", "f1"])
    })
  )

  it.effect("wake-ups of one subject handled all at once apply each delivery once, in arrival order", () =>
    Effect.gen(function* () {
      const ids = Array.from({ length: 12 }, (_, i) => `c${String(i).padStart(2, "0")}`)
      const { applied, wake, state } = yield* setUp(
        "inbox-race",
        ids.map((id) => [id, "issue-race"] as const)
      )
      yield* Effect.forEach([...ids].reverse(), wake, { concurrency: "unbounded", discard: true })
      assert.deepStrictEqual(applied, ids)
      assert.isTrue((yield* state).every((row) => row.processed))
    })
  )

  it.effect(
    "an earlier delivery that fails is rolled back and left to its own wake-up: the subject's later ones still apply",
    () =>
      Effect.gen(function* () {
        const { applied, wake, state } = yield* setUp("inbox-stuck", [
          ["s1-broken", "issue-stuck"],
          ["s2-comment", "issue-stuck"]
        ])
        yield* wake("s2-comment")
        assert.deepStrictEqual(applied, ["s2-comment"])
        assert.deepStrictEqual(yield* state, [
          { delivery_id: "s1-broken", processed: false, ignored_reason: null },
          { delivery_id: "s2-comment", processed: true, ignored_reason: null }
        ])
        const deferred = yield* logsNamed("test_delivery_deferred")
        assert.strictEqual(deferred.length, 1)
        assert.strictEqual(deferred[0]?.level, "warn")
        assert.strictEqual(deferred[0]?.delivery_id, "s1-broken")
        assert.strictEqual(deferred[0]?.applied_after, "s2-comment")
        assert.strictEqual(deferred[0]?.error, "the provider refused s1-broken")
        // Its own wake-up still fails, for the queue to retry and finally dead-letter.
        const exit = yield* Effect.exit(wake("s1-broken"))
        assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual((yield* state)[0], { delivery_id: "s1-broken", processed: false, ignored_reason: null })
      })
  )
})

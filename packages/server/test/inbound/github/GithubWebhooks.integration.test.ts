/**
 * `POST /api/v1/github/webhooks` over real HTTP (GitHub App ingress), with deliveries
 * signed the way GitHub signs them (`@octokit/webhooks-methods`): a verified delivery is recorded
 * with its inbox outbox row in one transaction and acknowledged; a redelivery of the same id is
 * acknowledged as a duplicate and writes nothing; a bad or missing signature is a 401 that writes
 * nothing; unknown events are recorded as ignored, with no outbox row; the body may exceed the API
 * limit up to the webhook limit (413 above); missing headers and non-object bodies are 400s.
 */
import { LogCapture } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { sign } from "@octokit/webhooks-methods"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ACCOUNT_ID, APP_ID, configured, type Delivery, deliver, SECRET } from "../../support/GithubDeliveries.ts"
import { errorCode } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

const pullRequestOpened = (account: number, number = 7, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    action: "opened",
    number,
    pull_request: { number, title: "Add the parser", head: { sha: "a".repeat(40) }, base: { sha: "b".repeat(40) } },
    repository: { id: 555, name: "app", full_name: "acme/app", owner: { id: account, login: "acme" } },
    installation: { id: 77 },
    sender: { id: 1, login: "octocat" },
    ...extra
  })

const rowsOf = (deliveryId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const deliveries = yield* sql<{
      organization_id: string
      event: string
      action: string | null
      installation_id: string | null
      subject: string | null
      processed_at: Date | null
      ignored_reason: string | null
    }>`SELECT organization_id, event, action, installation_id::text AS installation_id, subject, processed_at, ignored_reason
       FROM github_deliveries WHERE delivery_id = ${deliveryId}`
    const outbox = yield* sql<{ queue: string; kind: string; payload: unknown }>`
      SELECT queue, kind, payload FROM outbox WHERE payload->>'delivery_id' = ${deliveryId}`
    return { deliveries, outbox }
  })

const accepted = (response: { status: number; text: string; json: unknown }) => {
  assert.strictEqual(response.status, 202, response.text)
  return (response.json as { data: { accepted: boolean; duplicate: boolean } }).data
}

layer(layerTestServer({ settings: { webhookMaxBodyBytes: 2_097_152 } }), { excludeTestServices: true })(
  "GitHub webhooks",
  (it) => {
    it.effect("a signed pull_request delivery is recorded with its inbox row and acknowledged", () =>
      Effect.gen(function* () {
        yield* configured("gh-one", ACCOUNT_ID)
        const response = yield* deliver({ id: "d-one-1", event: "pull_request", body: pullRequestOpened(ACCOUNT_ID) })
        assert.deepStrictEqual(accepted(response), { accepted: true, duplicate: false })
        const { deliveries, outbox } = yield* rowsOf("d-one-1")
        assert.deepStrictEqual(deliveries, [
          {
            organization_id: "gh-one",
            event: "pull_request",
            action: "opened",
            installation_id: "77",
            subject: "pr:555:7",
            processed_at: null,
            ignored_reason: null
          }
        ])
        assert.deepStrictEqual(outbox, [
          {
            queue: "bosun-inbox",
            kind: "github.delivery",
            payload: { organization_id: "gh-one", delivery_id: "d-one-1" }
          }
        ])
        const logs = yield* LogCapture
        assert.notInclude(logs.lines.join("\n"), SECRET)
      })
    )

    it.effect("a redelivery of the same id is acknowledged as a duplicate and writes nothing", () =>
      Effect.gen(function* () {
        yield* configured("gh-dup", ACCOUNT_ID + 1)
        const body = pullRequestOpened(ACCOUNT_ID + 1)
        const first = yield* deliver({ id: "d-dup-1", event: "pull_request", body })
        assert.deepStrictEqual(accepted(first), { accepted: true, duplicate: false })
        const again = yield* Effect.all(
          [1, 2, 3].map(() => deliver({ id: "d-dup-1", event: "pull_request", body })),
          { concurrency: "unbounded" }
        )
        for (const response of again) assert.deepStrictEqual(accepted(response), { accepted: true, duplicate: true })
        const { deliveries, outbox } = yield* rowsOf("d-dup-1")
        assert.strictEqual(deliveries.length, 1)
        assert.strictEqual(outbox.length, 1)
      })
    )

    it.effect("a bad, missing or foreign signature is a 401 and writes nothing", () =>
      Effect.gen(function* () {
        yield* configured("gh-sig", ACCOUNT_ID + 2)
        const body = pullRequestOpened(ACCOUNT_ID + 2)
        const cases: ReadonlyArray<Delivery> = [
          { id: "d-sig-bad", event: "pull_request", body, signature: `sha256=${"0".repeat(64)}` },
          { id: "d-sig-none", event: "pull_request", body, signature: null },
          { id: "d-sig-other-secret", event: "pull_request", body, secret: "another-secret" },
          { id: "d-sig-other-app", event: "pull_request", body, appId: APP_ID + 1 },
          { id: "d-sig-sha1", event: "pull_request", body, signature: "sha1=0123456789abcdef0123456789abcdef01234567" }
        ]
        for (const delivery of cases) {
          const response = yield* deliver(delivery)
          assert.strictEqual(response.status, 401, `${delivery.id}: ${response.text}`)
          assert.strictEqual(errorCode(response.json), "unauthorized")
          const { deliveries, outbox } = yield* rowsOf(delivery.id)
          assert.deepStrictEqual([deliveries.length, outbox.length], [0, 0], delivery.id)
        }
        // A body changed after signing does not verify either.
        const signature = yield* Effect.promise(() => sign(SECRET, body))
        const tampered = yield* deliver({
          id: "d-sig-tampered",
          event: "pull_request",
          body: body.replace("opened", "closed"),
          signature
        })
        assert.strictEqual(tampered.status, 401)
      })
    )

    it.effect("without the target header every configured App's secret is tried", () =>
      Effect.gen(function* () {
        yield* configured("gh-notarget", ACCOUNT_ID + 3, "secret-of-notarget", 777)
        const response = yield* deliver({
          id: "d-notarget",
          event: "pull_request",
          body: pullRequestOpened(ACCOUNT_ID + 3),
          appId: null,
          secret: "secret-of-notarget"
        })
        assert.deepStrictEqual(accepted(response), { accepted: true, duplicate: false })
        assert.strictEqual((yield* rowsOf("d-notarget")).deliveries[0]?.organization_id, "gh-notarget")
      })
    )

    it.effect("a webhook secret changed after deliveries were verified with the old one verifies at once", () =>
      Effect.gen(function* () {
        const appId = APP_ID + 40
        yield* configured("gh-rotated", ACCOUNT_ID + 40, "secret-before", appId)
        const before = yield* deliver({
          id: "d-rotated-1",
          event: "pull_request",
          body: pullRequestOpened(ACCOUNT_ID + 40),
          appId,
          secret: "secret-before"
        })
        assert.deepStrictEqual(accepted(before), { accepted: true, duplicate: false })
        yield* configured("gh-rotated", ACCOUNT_ID + 40, "secret-after", appId)
        const after = yield* deliver({
          id: "d-rotated-2",
          event: "pull_request",
          body: pullRequestOpened(ACCOUNT_ID + 40, 8),
          appId,
          secret: "secret-after"
        })
        assert.deepStrictEqual(accepted(after), { accepted: true, duplicate: false })
        assert.strictEqual((yield* rowsOf("d-rotated-2")).deliveries[0]?.organization_id, "gh-rotated")
        const forged = yield* deliver({
          id: "d-rotated-3",
          event: "pull_request",
          body: pullRequestOpened(ACCOUNT_ID + 40, 9),
          appId,
          secret: "never-configured"
        })
        assert.strictEqual(forged.status, 401)
        assert.strictEqual((yield* rowsOf("d-rotated-3")).deliveries.length, 0)
      })
    )

    it.effect("an App's secrets kept for one organization still place a delivery of another organization on it", () =>
      Effect.gen(function* () {
        const appId = APP_ID + 41
        yield* configured("gh-first", ACCOUNT_ID + 41, "shared-secret", appId)
        const first = yield* deliver({
          id: "d-first",
          event: "pull_request",
          body: pullRequestOpened(ACCOUNT_ID + 41),
          appId,
          secret: "shared-secret"
        })
        assert.deepStrictEqual(accepted(first), { accepted: true, duplicate: false })
        // A second organization on the same App appears after the first's secrets were kept.
        yield* configured("gh-second", ACCOUNT_ID + 42, "shared-secret", appId)
        const second = yield* deliver({
          id: "d-second",
          event: "pull_request",
          body: pullRequestOpened(ACCOUNT_ID + 42),
          appId,
          secret: "shared-secret"
        })
        assert.deepStrictEqual(accepted(second), { accepted: true, duplicate: false })
        assert.strictEqual((yield* rowsOf("d-second")).deliveries[0]?.organization_id, "gh-second")
        assert.strictEqual((yield* rowsOf("d-first")).deliveries[0]?.organization_id, "gh-first")
      })
    )

    it.effect("an event Bosun does not handle is recorded as ignored, with no inbox row", () =>
      Effect.gen(function* () {
        yield* configured("gh-star", ACCOUNT_ID + 4)
        const body = JSON.stringify({
          action: "created",
          repository: { id: 1, owner: { id: ACCOUNT_ID + 4, login: "acme" } },
          installation: { id: 78 }
        })
        const response = yield* deliver({ id: "d-star", event: "star", body })
        assert.deepStrictEqual(accepted(response), { accepted: true, duplicate: false })
        const { deliveries, outbox } = yield* rowsOf("d-star")
        assert.strictEqual(deliveries.length, 1)
        assert.strictEqual(deliveries[0]?.ignored_reason, "event star is not handled")
        assert.isNotNull(deliveries[0]?.processed_at)
        assert.strictEqual(outbox.length, 0)
      })
    )

    it.effect(
      "a delivery for a GitHub account no organization mirrors is acknowledged, not accepted, not recorded",
      () =>
        Effect.gen(function* () {
          yield* configured("gh-mine", ACCOUNT_ID + 5)
          const response = yield* deliver({ id: "d-foreign", event: "pull_request", body: pullRequestOpened(123456) })
          assert.deepStrictEqual(accepted(response), { accepted: false, duplicate: false })
          assert.strictEqual((yield* rowsOf("d-foreign")).deliveries.length, 0)
        })
    )

    it.effect("missing headers and bodies that are not a JSON object are 400s that write nothing", () =>
      Effect.gen(function* () {
        yield* configured("gh-bad", ACCOUNT_ID + 6)
        const noDelivery = yield* deliver({ id: "", event: "pull_request", body: pullRequestOpened(ACCOUNT_ID + 6) })
        assert.strictEqual(noDelivery.status, 400)
        assert.strictEqual(errorCode(noDelivery.json), "invalid_header")
        assert.include(noDelivery.text, "X-GitHub-Delivery")
        const noEvent = yield* deliver({ id: "d-bad-event", event: "", body: pullRequestOpened(ACCOUNT_ID + 6) })
        assert.strictEqual(noEvent.status, 400)
        assert.include(noEvent.text, "X-GitHub-Event")
        for (const [id, body] of [
          ["d-bad-array", "[1,2]"],
          ["d-bad-json", "{not json"]
        ] as const) {
          const response = yield* deliver({ id, event: "pull_request", body })
          assert.strictEqual(response.status, 400, id)
          assert.strictEqual(errorCode(response.json), "invalid_body")
          assert.strictEqual((yield* rowsOf(id)).deliveries.length, 0)
        }
        assert.strictEqual((yield* rowsOf("d-bad-event")).deliveries.length, 0)
      })
    )

    it.effect("a body over the API limit but within the webhook limit is accepted; above it, 413", () =>
      Effect.gen(function* () {
        yield* configured("gh-big", ACCOUNT_ID + 7)
        const padding = (bytes: number) => ({ pull_request: { number: 9, title: "big", body: "x".repeat(bytes) } })
        const big = yield* deliver({
          id: "d-big",
          event: "pull_request",
          body: pullRequestOpened(ACCOUNT_ID + 7, 9, padding(1_500_000))
        })
        assert.deepStrictEqual(accepted(big), { accepted: true, duplicate: false })
        const tooBig = yield* deliver({
          id: "d-too-big",
          event: "pull_request",
          body: pullRequestOpened(ACCOUNT_ID + 7, 9, padding(2_200_000))
        })
        assert.strictEqual(tooBig.status, 413)
        assert.strictEqual(errorCode(tooBig.json), "payload_too_large")
        assert.strictEqual((yield* rowsOf("d-too-big")).deliveries.length, 0)
        // Other routes keep the API limit.
        const api = yield* request("/api/v1/organizations/gh-big/repositories/x", {
          method: "PATCH",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ enabled: true, pad: "x".repeat(1_200_000) })
        })
        assert.strictEqual(api.status, 413)
      })
    )
  }
)

/**
 * Linear, the tracker, over real HTTP: connecting an organization (ADMIN, audited,
 * secrets sealed and never returned, one owner per workspace); `POST /api/v1/linear/webhooks` with
 * deliveries signed as Linear signs them (hex HMAC-SHA256 of the body): required headers, bad
 * signature, stale timestamp, duplicate delivery; and the inbox turning an issue assigned to Bosun,
 * or a comment mentioning it, into one work item per issue.
 */
import { createHmac } from "node:crypto"
import { eventually, FakeLinear } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request, testSettings } from "../../support/TestServer.ts"

const SECRET = "lin_wh_secret_0123456789"
const BOSUN_USER = "user-bosun"

interface LinearDelivery {
  readonly id: string
  readonly event: string
  readonly payload: Record<string, unknown>
  readonly secret?: string
  readonly timestamp?: number
  readonly omit?: string
}

/** As Linear sends it: the send time both in the signed body (`webhookTimestamp`) and in the header. */
const deliver = (delivery: LinearDelivery) => {
  const body = JSON.stringify({ webhookTimestamp: delivery.timestamp ?? Date.now(), ...delivery.payload })
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "Linear-Delivery": delivery.id,
    "Linear-Event": delivery.event,
    "Linear-Timestamp": String(delivery.timestamp ?? Date.now()),
    "Linear-Signature": createHmac("sha256", delivery.secret ?? SECRET)
      .update(body)
      .digest("hex")
  }
  if (delivery.omit !== undefined) delete headers[delivery.omit]
  return request("/api/v1/linear/webhooks", { method: "POST", headers, body })
}

const issueAssigned = (workspace: string, issueId: string, extra: Record<string, unknown> = {}) => ({
  action: "create",
  type: "Issue",
  organizationId: workspace,
  url: `https://linear.app/acme/issue/ENG-${issueId}`,
  actor: { id: "user-ada", name: "ada" },
  data: {
    id: issueId,
    identifier: `ENG-${issueId}`,
    title: "Login fails with SSO",
    description: "Users of the SSO tenant get a 500 after the redirect.",
    url: `https://linear.app/acme/issue/ENG-${issueId}`,
    assigneeId: BOSUN_USER
  },
  ...extra
})

const commentOn = (workspace: string, issueId: string, body: string, userId = "user-ada") => ({
  action: "create",
  type: "Comment",
  organizationId: workspace,
  actor: { id: userId, name: "ada" },
  data: {
    id: `comment-${issueId}-${body.length}`,
    body,
    issueId,
    userId,
    issue: { id: issueId, identifier: `ENG-${issueId}`, title: "Flaky export", url: `https://linear.app/x/${issueId}` }
  }
})

const connect = (organization: string, cookie: string, body: Record<string, unknown>) =>
  request(`/api/v1/organizations/${organization}/linear-connection`, {
    method: "PUT",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

/** A Linear API key of `workspace`, known to the fake Linear. */
const keyOf = (workspace: string) =>
  Effect.map(FakeLinear, (fake) => {
    const key = `lin_api_key_of_${workspace}`
    fake.addToken(key, workspace)
    return key
  })

const connected = (organization: string, workspace: string) =>
  Effect.gen(function* () {
    const admin = yield* signIn(`admin-${organization}`, [[organization, "ADMIN"]])
    const response = yield* connect(organization, admin.cookie, {
      linear_organization_id: workspace,
      webhook_secret: SECRET,
      access_token: yield* keyOf(workspace),
      app_user_id: BOSUN_USER,
      app_user_name: "bosun"
    })
    assert.strictEqual(response.status, 200, response.text)
    return admin
  })

const rowsOf = (deliveryId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const deliveries = yield* sql<{ organization_id: string; event: string; action: string | null }>`
      SELECT organization_id, event, action FROM linear_deliveries WHERE delivery_id = ${deliveryId}`
    const outbox = yield* sql<{ queue: string; kind: string }>`
      SELECT queue, kind FROM outbox WHERE payload->>'delivery_id' = ${deliveryId}`
    return { deliveries, outbox }
  })

const processed = (deliveryId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* eventually(
      sql<{ processed_at: Date | null; ignored_reason: string | null }>`
        SELECT processed_at, ignored_reason FROM linear_deliveries WHERE delivery_id = ${deliveryId}`,
      (found) => found[0]?.processed_at != null,
      Duration.seconds(15)
    )
    return rows[0]?.ignored_reason ?? null
  })

const workItemsOf = (organization: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{
      id: string
      kind: string
      source: string
      source_url: string | null
      title: string
      summary: string | null
      state: string
      phase: string
      requested_by_login: string | null
      session_key: string | null
    }>`SELECT id, kind, source, source_url, title, summary, state, phase, requested_by_login, session_key
       FROM work_items WHERE organization_id = ${organization} ORDER BY created_at`
  )

const accepted = (response: { status: number; text: string; json: unknown }) => {
  assert.strictEqual(response.status, 202, response.text)
  return (response.json as { data: { accepted: boolean; duplicate: boolean } }).data
}

// No AGENT lane: the intake runs the inbox queues stay QUEUED for the assertions (this server has
// no agent connection, so a claimed one would fail at once and move its item to FAILED).
const defaults = testSettings()
const settings = {
  cluster: { ...defaults.cluster, scheduler: { ...defaults.cluster.scheduler, lanes: { AGENT: 0, REVIEW: 4 } } }
}

/** The item's active run: its intake, queued with the item in one transaction, on the item's session. */
const intakeOf = (itemId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ workflow_type: string; status: string; session_key: string | null; input: unknown }>`
      SELECT r.workflow_type, r.status, j.session_key, r.input_snapshot AS input
      FROM work_items w JOIN workflow_runs r ON r.id = w.active_run_id JOIN jobs j ON j.run_id = r.id
      WHERE w.id = ${itemId}`.pipe(Effect.orDie)
  )

const Stack = Layer.unwrap(
  Effect.map(FakeLinear, (fake) => layerTestServer({ settings: { ...settings, linearApiUrl: new URL(fake.apiUrl) } }))
).pipe(Layer.provideMerge(FakeLinear.layer))

layer(Stack, { excludeTestServices: true })("Linear", (it) => {
  it.effect("an admin connects a workspace: secrets sealed and never returned; members may read, not write", () =>
    Effect.gen(function* () {
      const admin = yield* connected("lin-conn", "ws-conn")
      const got = yield* request("/api/v1/organizations/lin-conn/linear-connection", {
        headers: { cookie: admin.cookie }
      })
      assert.strictEqual(got.status, 200)
      const data = (got.json as { data: Record<string, unknown> }).data
      assert.deepStrictEqual(Object.keys(data).sort(), [
        "access_token_expires_at",
        "app_user_id",
        "app_user_name",
        "created_at",
        "has_access_token",
        "linear_organization_id",
        "refreshable",
        "updated_at"
      ])
      assert.strictEqual(data.refreshable, false)
      assert.strictEqual(data.access_token_expires_at, null)
      assert.strictEqual(data.linear_organization_id, "ws-conn")
      assert.strictEqual(data.app_user_id, BOSUN_USER)
      assert.strictEqual(data.app_user_name, "bosun")
      assert.strictEqual(data.has_access_token, true)
      assert.notInclude(got.text, SECRET)
      assert.notInclude(got.text, "lin_api_key_of_ws-conn")

      const sql = yield* SqlClient.SqlClient
      const [stored] = yield* sql<{ webhook_secret: Uint8Array; access_token: Uint8Array }>`
        SELECT webhook_secret, access_token FROM linear_connections WHERE organization_id = 'lin-conn'`
      assert.notInclude(Buffer.from(stored?.webhook_secret ?? []).toString("latin1"), SECRET)
      assert.notInclude(Buffer.from(stored?.access_token ?? []).toString("latin1"), "lin_api_key_of_ws-conn")
      const [audit] = yield* sql<{ n: string }>`
        SELECT count(*)::text AS n FROM audit_events
        WHERE organization_id = 'lin-conn' AND action = 'linear_connection.connect'`
      assert.strictEqual(audit?.n, "1")

      const member = yield* signIn("member-lin-conn", [["lin-conn", "MEMBER"]])
      const refused = yield* connect("lin-conn", member.cookie, {
        linear_organization_id: "ws-x",
        webhook_secret: "s",
        access_token: yield* keyOf("ws-x")
      })
      assert.strictEqual(refused.status, 403)
      const memberRead = yield* request("/api/v1/organizations/lin-conn/linear-connection", {
        headers: { cookie: member.cookie }
      })
      assert.strictEqual(memberRead.status, 200)
    })
  )

  it.effect(
    "an OAuth grant is kept sealed and shown only as refreshable with its expiry; a grant without its token is a 400",
    () =>
      Effect.gen(function* () {
        const admin = yield* signIn("admin-lin-oauth", [["lin-oauth", "ADMIN"]])
        const fake = yield* FakeLinear
        fake.addToken("lin_oauth_access_value", "ws-oauth")
        fake.addToken("lin_api_plain_key", "ws-oauth")
        const grant = {
          client_id: "lin-oauth-client",
          client_secret: "lin-oauth-client-secret-value",
          refresh_token: "lin_refresh_secret_value",
          expires_in: 3600
        }
        const missingToken = yield* connect("lin-oauth", admin.cookie, {
          linear_organization_id: "ws-oauth",
          webhook_secret: SECRET,
          oauth: grant
        })
        assert.strictEqual(missingToken.status, 400, missingToken.text)
        assert.strictEqual(errorCode(missingToken.json), "invalid_body")
        assert.include(missingToken.text, "access_token")
        const badExpiry = yield* connect("lin-oauth", admin.cookie, {
          linear_organization_id: "ws-oauth",
          webhook_secret: SECRET,
          access_token: "lin_oauth_access_value",
          oauth: { ...grant, expires_in: 0 }
        })
        assert.strictEqual(badExpiry.status, 400, badExpiry.text)
        const sql = yield* SqlClient.SqlClient
        const none = yield* sql`SELECT 1 FROM linear_connections WHERE organization_id = 'lin-oauth'`
        assert.strictEqual(none.length, 0)

        const before = Date.now()
        const saved = yield* connect("lin-oauth", admin.cookie, {
          linear_organization_id: "ws-oauth",
          webhook_secret: SECRET,
          access_token: "lin_oauth_access_value",
          oauth: grant
        })
        assert.strictEqual(saved.status, 200, saved.text)
        const data = (saved.json as { data: { refreshable: boolean; access_token_expires_at: string } }).data
        assert.strictEqual(data.refreshable, true)
        const expiresAt = Date.parse(data.access_token_expires_at)
        assert.isAtLeast(expiresAt, before + 3_599_000)
        assert.isAtMost(expiresAt, Date.now() + 3_600_000)
        for (const secret of [grant.client_secret, grant.refresh_token, "lin_oauth_access_value"]) {
          assert.notInclude(saved.text, secret)
        }
        const [stored] = yield* sql<{
          refresh_token: Uint8Array
          oauth_client_secret: Uint8Array
          oauth_client_id: string
        }>`
        SELECT refresh_token, oauth_client_secret, oauth_client_id FROM linear_connections
        WHERE organization_id = 'lin-oauth'`
        assert.strictEqual(stored?.oauth_client_id, "lin-oauth-client")
        assert.notInclude(Buffer.from(stored?.refresh_token ?? []).toString("latin1"), grant.refresh_token)
        assert.notInclude(Buffer.from(stored?.oauth_client_secret ?? []).toString("latin1"), grant.client_secret)

        // Connected again with a key: the grant is gone with the token it renewed.
        const key = yield* connect("lin-oauth", admin.cookie, {
          linear_organization_id: "ws-oauth",
          webhook_secret: SECRET,
          access_token: "lin_api_plain_key"
        })
        assert.strictEqual(key.status, 200, key.text)
        const plain = (key.json as { data: { refreshable: boolean; access_token_expires_at: string | null } }).data
        assert.strictEqual(plain.refreshable, false)
        assert.strictEqual(plain.access_token_expires_at, null)
      })
  )

  it.effect("a workspace connected to another organization is a 409 for a proven owner and changes nothing", () =>
    Effect.gen(function* () {
      yield* connected("lin-owner", "ws-owned")
      const other = yield* signIn("admin-lin-other", [["lin-other", "ADMIN"]])
      const fake = yield* FakeLinear
      fake.addToken("lin_api_second_key_of_ws-owned", "ws-owned")
      const taken = yield* connect("lin-other", other.cookie, {
        linear_organization_id: "ws-owned",
        webhook_secret: "another",
        access_token: "lin_api_second_key_of_ws-owned"
      })
      assert.strictEqual(taken.status, 409, taken.text)
      assert.strictEqual(errorCode(taken.json), "linear_workspace_taken")
      const missing = yield* request("/api/v1/organizations/lin-other/linear-connection", {
        headers: { cookie: other.cookie }
      })
      assert.strictEqual(missing.status, 404)
      const bad = yield* connect("lin-other", other.cookie, { linear_organization_id: "", webhook_secret: "x" })
      assert.strictEqual(bad.status, 400)
    })
  )

  it.effect("an issue assigned to Bosun becomes one work item; the same delivery again is a duplicate", () =>
    Effect.gen(function* () {
      yield* connected("lin-issue", "ws-issue")
      const payload = issueAssigned("ws-issue", "101")
      const first = yield* deliver({ id: "lin-d-1", event: "Issue", payload })
      assert.deepStrictEqual(accepted(first), { accepted: true, duplicate: false })
      const { deliveries, outbox } = yield* rowsOf("lin-d-1")
      assert.deepStrictEqual(deliveries, [{ organization_id: "lin-issue", event: "Issue", action: "create" }])
      assert.deepStrictEqual(outbox, [{ queue: "bosun-inbox", kind: "linear.delivery" }])
      assert.isNull(yield* processed("lin-d-1"))

      const again = yield* deliver({ id: "lin-d-1", event: "Issue", payload })
      assert.deepStrictEqual(accepted(again), { accepted: true, duplicate: true })
      assert.strictEqual((yield* rowsOf("lin-d-1")).outbox.length, 1)

      const items = yield* workItemsOf("lin-issue")
      assert.strictEqual(items.length, 1)
      const [item] = items
      assert.deepStrictEqual(
        { ...item, id: undefined },
        {
          id: undefined,
          kind: "TASK",
          source: "TRACKER",
          source_url: "https://linear.app/acme/issue/ENG-101",
          title: "ENG-101: Login fails with SSO",
          summary: "Users of the SSO tenant get a 500 after the redirect.",
          state: "OPEN",
          phase: "INTAKE",
          requested_by_login: "ada",
          session_key: "linear:101"
        }
      )

      assert.deepStrictEqual(yield* intakeOf(item?.id ?? ""), [
        {
          workflow_type: "work_item_intake",
          status: "QUEUED",
          session_key: "linear:101",
          input: { work_item_id: item?.id, conversation_length: 0 }
        }
      ])

      // Another delivery about the same issue (re-assigned) finds the same work item.
      const reassigned = yield* deliver({
        id: "lin-d-2",
        event: "Issue",
        payload: issueAssigned("ws-issue", "101", { action: "update", updatedFrom: { assigneeId: null } })
      })
      assert.deepStrictEqual(accepted(reassigned), { accepted: true, duplicate: false })
      assert.strictEqual(yield* processed("lin-d-2"), `the issue already has work item ${item?.id}`)
      assert.strictEqual((yield* workItemsOf("lin-issue")).length, 1)

      // An issue assigned to someone else, or updated without a new assignee, is not Bosun's work.
      const theirs = yield* deliver({
        id: "lin-d-3",
        event: "Issue",
        payload: issueAssigned("ws-issue", "102", { data: { id: "102", title: "Not ours", assigneeId: "user-ada" } })
      })
      accepted(theirs)
      assert.strictEqual(yield* processed("lin-d-3"), "the issue was not just assigned to Bosun")
      const edited = yield* deliver({
        id: "lin-d-4",
        event: "Issue",
        payload: issueAssigned("ws-issue", "103", { action: "update", updatedFrom: { title: "old" } })
      })
      accepted(edited)
      assert.strictEqual(yield* processed("lin-d-4"), "the issue was not just assigned to Bosun")
      assert.strictEqual((yield* workItemsOf("lin-issue")).length, 1)
    })
  )

  it.effect("a comment mentioning @bosun starts a work item; later comments are follow-ups of it", () =>
    Effect.gen(function* () {
      yield* connected("lin-comment", "ws-comment")
      accepted(
        yield* deliver({
          id: "lin-c-0",
          event: "Comment",
          payload: commentOn("ws-comment", "201", "someone should look at this")
        })
      )
      assert.strictEqual(yield* processed("lin-c-0"), "the comment does not mention Bosun")
      accepted(
        yield* deliver({
          id: "lin-c-1",
          event: "Comment",
          payload: commentOn("ws-comment", "201", "@Bosun can you fix the export?")
        })
      )
      assert.isNull(yield* processed("lin-c-1"))
      const [item] = yield* workItemsOf("lin-comment")
      assert.strictEqual(item?.title, "ENG-201: Flaky export")
      assert.strictEqual(item?.summary, "@Bosun can you fix the export?")
      assert.strictEqual(item?.session_key, "linear:201")

      accepted(
        yield* deliver({ id: "lin-c-2", event: "Comment", payload: commentOn("ws-comment", "201", "also the CSV one") })
      )
      // A follow-up: recorded on the same item, which goes back to intake with a second run on its session.
      assert.isNull(yield* processed("lin-c-2"))
      const sql = yield* SqlClient.SqlClient
      const conversation = yield* sql<{ author: string | null; body: string }>`
        SELECT author, body FROM work_item_messages WHERE work_item_id = ${item?.id ?? ""} ORDER BY id`
      assert.deepStrictEqual(conversation, [{ author: "ada", body: "also the CSV one" }])
      const intakes = yield* sql<{ session_key: string | null }>`
        SELECT j.session_key FROM workflow_runs r JOIN jobs j ON j.run_id = r.id
        WHERE r.organization_id = ${"lin-comment"} AND r.workflow_type = 'work_item_intake' ORDER BY r.created_at`
      assert.deepStrictEqual(intakes, [{ session_key: "linear:201" }, { session_key: "linear:201" }])
      const [followed] = yield* workItemsOf("lin-comment")
      assert.deepStrictEqual([followed?.state, followed?.phase], ["IN_PROGRESS", "INTAKE"])
      accepted(
        yield* deliver({
          id: "lin-c-3",
          event: "Comment",
          payload: commentOn("ws-comment", "202", "@bosun on it", BOSUN_USER)
        })
      )
      assert.strictEqual(yield* processed("lin-c-3"), "Bosun's own comment")
      assert.strictEqual((yield* workItemsOf("lin-comment")).length, 1)
    })
  )

  it.effect("an event the inbox does not handle is recorded as ignored, with no inbox row", () =>
    Effect.gen(function* () {
      yield* connected("lin-other-event", "ws-other-event")
      const response = yield* deliver({
        id: "lin-p-1",
        event: "Project",
        payload: { action: "create", type: "Project", organizationId: "ws-other-event", data: { id: "p1" } }
      })
      assert.deepStrictEqual(accepted(response), { accepted: true, duplicate: false })
      const { deliveries, outbox } = yield* rowsOf("lin-p-1")
      assert.strictEqual(deliveries.length, 1)
      assert.strictEqual(outbox.length, 0)
    })
  )

  it.effect(
    "a missing header is a 400 naming it; a bad signature, a stale timestamp or an unknown workspace is a 401; none writes a row",
    () =>
      Effect.gen(function* () {
        yield* connected("lin-bad", "ws-bad")
        const payload = issueAssigned("ws-bad", "301")
        for (const header of ["Linear-Delivery", "Linear-Event", "Linear-Timestamp", "Linear-Signature"]) {
          const response = yield* deliver({ id: `lin-bad-${header}`, event: "Issue", payload, omit: header })
          assert.strictEqual(response.status, 400, `${header}: ${response.text}`)
          assert.strictEqual(errorCode(response.json), "invalid_header")
          assert.include((response.json as { error: { message: string } }).error.message, header)
        }
        const cases: ReadonlyArray<LinearDelivery> = [
          { id: "lin-bad-sig", event: "Issue", payload, secret: "not-the-secret" },
          { id: "lin-bad-stale", event: "Issue", payload, timestamp: Date.now() - 120_000 },
          { id: "lin-bad-future", event: "Issue", payload, timestamp: Date.now() + 120_000 },
          { id: "lin-bad-workspace", event: "Issue", payload: issueAssigned("ws-unknown", "302") }
        ]
        for (const delivery of cases) {
          const response = yield* deliver(delivery)
          assert.strictEqual(response.status, 401, `${delivery.id}: ${response.text}`)
          assert.strictEqual(errorCode(response.json), "unauthorized")
        }
        const notJson = yield* request("/api/v1/linear/webhooks", {
          method: "POST",
          headers: {
            "Linear-Delivery": "lin-bad-body",
            "Linear-Event": "Issue",
            "Linear-Timestamp": String(Date.now()),
            "Linear-Signature": createHmac("sha256", SECRET).update("[1]").digest("hex")
          },
          body: "[1]"
        })
        assert.strictEqual(notJson.status, 400)
        const sql = yield* SqlClient.SqlClient
        const [rows] = yield* sql<{ n: string }>`
        SELECT count(*)::text AS n FROM linear_deliveries WHERE delivery_id LIKE 'lin-bad-%'`
        assert.strictEqual(rows?.n, "0")
        assert.strictEqual((yield* workItemsOf("lin-bad")).length, 0)
      })
  )
})

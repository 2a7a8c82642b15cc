/**
 * Connected apps over real HTTP (docs/interface.md: Organization endpoints `composio/connections`;
 * Resources "Connected-app connection result"): the real server and Composio's official client
 * against a local fake Composio. Covers the hosted connect link for the member (API key header,
 * Bosun's Composio user id, the managed auth config created once and reused), no-auth apps, every
 * refusal before Composio is asked, Composio's own refusals and outages (never leaking the API
 * key), an instance with no key configured, and that no failure writes a row or an audit event. The
 * list shows a member their own apps only, with no link and no Composio id.
 */
import type { ConnectedApp, ConnectedAppConnection } from "@bosun/domain"
import { FakeComposio, LogCapture } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, logsNamed, request } from "../../support/TestServer.ts"

const Server = Layer.unwrap(
  Effect.map(FakeComposio, (fake) =>
    layerTestServer({
      settings: { composioApiUrl: new URL(fake.url), composioApiKey: Option.some(Redacted.make(fake.apiKey)) }
    })
  )
).pipe(Layer.provideMerge(FakeComposio.layer))

const path = (org: string) => `/api/v1/organizations/${org}/composio/connections`

const post = (cookie: string, org: string, body: unknown, headers: Record<string, string> = {}) =>
  request(path(org), {
    method: "POST",
    headers: { cookie, "content-type": "application/json", ...headers },
    body: body === undefined ? "" : JSON.stringify(body)
  })

const connected = (response: { status: number; text: string; json: unknown }) => {
  assert.strictEqual(response.status, 200, response.text)
  return (response.json as { data: ConnectedAppConnection }).data
}

/** Rows and audit events an organization has: what every failing request must leave at zero. */
const written = (org: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [counts] = yield* sql<{ connections: number; audits: number }>`
      SELECT (SELECT count(*)::int FROM composio_connections WHERE organization_id = ${org}) AS connections,
             (SELECT count(*)::int FROM audit_events WHERE organization_id = ${org}) AS audits`
    return counts ?? { connections: -1, audits: -1 }
  })

const list = (cookie: string, org: string) => request(path(org), { headers: { cookie } })

const listed = (response: { status: number; text: string; json: unknown }) => {
  assert.strictEqual(response.status, 200, response.text)
  return (response.json as { data: ReadonlyArray<ConnectedApp> }).data
}

/** The stored timestamps of a member's connection, as the API writes them. */
const stamps = (org: string, userId: string, toolkitSlug: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ created_at: Date; updated_at: Date }>`
      SELECT created_at, updated_at FROM composio_connections
      WHERE organization_id = ${org} AND user_id = ${userId} AND toolkit_slug = ${toolkitSlug}`
    assert.isDefined(row, `${org} ${toolkitSlug}`)
    return { created_at: row?.created_at.toISOString() ?? "", updated_at: row?.updated_at.toISOString() ?? "" }
  })

/** The requests the fake received since `from`. */
const sentSince = (from: number) => Effect.map(FakeComposio, (fake) => fake.requests.slice(from))

const CALLBACK_URL = "http://127.0.0.1:0/"

layer(Server, { excludeTestServices: true })("connected apps (Composio)", (it) => {
  it.effect(
    "an app that needs authorization answers AUTHORIZATION_REQUIRED with the member's hosted connect link",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeComposio
        const sql = yield* SqlClient.SqlClient
        fake.addToolkit({ slug: "github" })
        const member = yield* signIn("cx-link-member", [["cx-link", "MEMBER"]])
        const from = fake.requests.length

        const result = connected(yield* post(member.cookie, "cx-link", { toolkit_slug: "github" }))
        const link = fake.links.at(-1)
        assert.isDefined(link)
        assert.deepStrictEqual(Object.keys(result).sort(), ["expires_at", "redirect_url", "status"])
        assert.strictEqual(result.status, "AUTHORIZATION_REQUIRED")
        assert.strictEqual(result.redirect_url, link?.redirectUrl)
        assert.strictEqual(result.expires_at, link?.expiresAt)

        const sent = yield* sentSince(from)
        assert.deepStrictEqual(
          sent.map((r) => `${r.method} ${r.path}`),
          [
            "GET /api/v3.1/toolkits/github",
            "GET /api/v3.1/auth_configs",
            "POST /api/v3.1/auth_configs",
            "POST /api/v3.1/connected_accounts/link"
          ]
        )
        for (const r of sent) assert.strictEqual(r.apiKey, fake.apiKey, r.path)
        assert.deepStrictEqual(sent[1]?.query, { toolkit_slug: "github", is_composio_managed: "true" })
        assert.deepStrictEqual(sent[2]?.body, {
          toolkit: { slug: "github" },
          auth_config: { type: "use_composio_managed_auth", name: "Bosun github" }
        })
        assert.deepStrictEqual(sent[3]?.body, {
          auth_config_id: fake.authConfigs[0]?.id,
          user_id: `bosun:cx-link:${member.userId}`,
          callback_url: CALLBACK_URL
        })

        const [row] = yield* sql<{
          user_id: string
          toolkit_slug: string
          composio_user_id: string
          composio_auth_config_id: string | null
          composio_connected_account_id: string | null
          status: string
          redirect_expires_at: Date | null
        }>`SELECT user_id, toolkit_slug, composio_user_id, composio_auth_config_id, composio_connected_account_id,
                  status, redirect_expires_at
           FROM composio_connections WHERE organization_id = 'cx-link'`
        assert.deepStrictEqual(row, {
          user_id: member.userId,
          toolkit_slug: "github",
          composio_user_id: `bosun:cx-link:${member.userId}`,
          composio_auth_config_id: fake.authConfigs[0]?.id ?? null,
          composio_connected_account_id: link?.connectedAccountId ?? null,
          status: "AUTHORIZATION_REQUIRED",
          redirect_expires_at: new Date(link?.expiresAt ?? 0)
        })
        const audits = yield* sql<{ actor_user_id: string; action: string; target: string; details: unknown }>`
          SELECT actor_user_id, action, target, details FROM audit_events WHERE organization_id = 'cx-link'`
        assert.deepStrictEqual(audits, [
          {
            actor_user_id: member.userId,
            action: "composio.connect",
            target: "composio_toolkit:github",
            details: { status: "AUTHORIZATION_REQUIRED", connected_account_id: link?.connectedAccountId }
          }
        ])
        // The link is a bearer URL: it is answered, never stored or audited.
        const everything = yield* sql<{ text: string }>`
          SELECT (SELECT string_agg(c::text, ' ') FROM composio_connections c) ||
                 (SELECT string_agg(a::text, ' ') FROM audit_events a) AS text`
        assert.notInclude(everything[0]?.text ?? "", link?.redirectUrl ?? "missing")
      })
  )

  it.effect("an app that needs no authorization is ACTIVE with no link, and no auth config or link is made", () =>
    Effect.gen(function* () {
      const fake = yield* FakeComposio
      const sql = yield* SqlClient.SqlClient
      fake.addToolkit({ slug: "hackernews", noAuth: true })
      const member = yield* signIn("cx-noauth-member", [["cx-noauth", "MEMBER"]])
      const from = fake.requests.length

      const result = connected(yield* post(member.cookie, "cx-noauth", { toolkit_slug: "hackernews" }))
      assert.deepStrictEqual(result, { expires_at: null, redirect_url: null, status: "ACTIVE" })
      assert.deepStrictEqual(
        (yield* sentSince(from)).map((r) => `${r.method} ${r.path}`),
        ["GET /api/v3.1/toolkits/hackernews"]
      )
      const rows = yield* sql<{
        status: string
        composio_auth_config_id: string | null
        composio_connected_account_id: string | null
        redirect_expires_at: Date | null
      }>`SELECT status, composio_auth_config_id, composio_connected_account_id, redirect_expires_at
         FROM composio_connections WHERE organization_id = 'cx-noauth'`
      assert.deepStrictEqual(rows, [
        {
          status: "ACTIVE",
          composio_auth_config_id: null,
          composio_connected_account_id: null,
          redirect_expires_at: null
        }
      ])
      assert.deepStrictEqual(yield* written("cx-noauth"), { connections: 1, audits: 1 })
    })
  )

  it.effect("the toolkit's managed auth config is created once and reused; a new request replaces the row", () =>
    Effect.gen(function* () {
      const fake = yield* FakeComposio
      const sql = yield* SqlClient.SqlClient
      fake.addToolkit({ slug: "linear" })
      const first = yield* signIn("cx-reuse-one", [["cx-reuse", "MEMBER"]])
      const second = yield* signIn("cx-reuse-two", [["cx-reuse", "ADMIN"]])
      const from = fake.requests.length

      connected(yield* post(first.cookie, "cx-reuse", { toolkit_slug: "linear" }))
      const again = connected(yield* post(first.cookie, "cx-reuse", { toolkit_slug: "linear" }))
      connected(yield* post(second.cookie, "cx-reuse", { toolkit_slug: "linear" }))

      const sent = yield* sentSince(from)
      assert.strictEqual(sent.filter((r) => r.method === "POST" && r.path === "/api/v3.1/auth_configs").length, 1)
      const linkBodies = sent.filter((r) => r.path === "/api/v3.1/connected_accounts/link").map((r) => r.body)
      const linearConfig = fake.authConfigs.find((config) => config.toolkitSlug === "linear")?.id
      assert.deepStrictEqual(linkBodies, [
        { auth_config_id: linearConfig, user_id: `bosun:cx-reuse:${first.userId}`, callback_url: CALLBACK_URL },
        { auth_config_id: linearConfig, user_id: `bosun:cx-reuse:${first.userId}`, callback_url: CALLBACK_URL },
        { auth_config_id: linearConfig, user_id: `bosun:cx-reuse:${second.userId}`, callback_url: CALLBACK_URL }
      ])

      const rows = yield* sql<{ user_id: string; connected: string; touched: boolean }>`
        SELECT user_id, composio_connected_account_id AS connected, updated_at > created_at AS touched
        FROM composio_connections WHERE organization_id = 'cx-reuse' ORDER BY created_at`
      const firstLinks = fake.links.filter((link) => link.userId === `bosun:cx-reuse:${first.userId}`)
      assert.strictEqual(firstLinks.length, 2)
      assert.strictEqual(again.redirect_url, firstLinks[1]?.redirectUrl)
      assert.deepStrictEqual(
        rows.map((row) => [row.user_id, row.connected, row.touched]),
        [
          [first.userId, firstLinks[1]?.connectedAccountId, true],
          [second.userId, fake.links.at(-1)?.connectedAccountId, false]
        ]
      )
      assert.deepStrictEqual(yield* written("cx-reuse"), { connections: 2, audits: 3 })
    })
  )

  it.effect(
    "answers 401 without a session, 404 outside the caller's organizations, 403 to a foreign Origin and 400 for a bad or missing toolkit_slug, asking Composio nothing",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeComposio
        fake.addToolkit({ slug: "notion" })
        const member = yield* signIn("cx-guard-member", [["cx-guard", "MEMBER"]])
        yield* signIn("cx-guard-stranger", [["cx-guard-other", "ADMIN"]])
        const from = fake.requests.length

        const anonymous = yield* request(path("cx-guard"), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ toolkit_slug: "notion" })
        })
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual(errorCode(anonymous.json), "session_required")

        for (const org of ["cx-guard-other", "cx-guard-missing"]) {
          const foreign = yield* post(member.cookie, org, { toolkit_slug: "notion" })
          assert.strictEqual(foreign.status, 404, org)
          assert.strictEqual(errorCode(foreign.json), "not_found", org)
        }

        const crossSite = yield* post(
          member.cookie,
          "cx-guard",
          { toolkit_slug: "notion" },
          { origin: "https://evil.example" }
        )
        assert.strictEqual(crossSite.status, 403)
        assert.strictEqual(errorCode(crossSite.json), "origin_mismatch")

        for (const body of [
          undefined,
          {},
          { toolkit_slug: "" },
          { toolkit_slug: "GitHub" },
          { toolkit_slug: "-github" },
          { toolkit_slug: "git hub" },
          { toolkit_slug: "../toolkits" },
          { toolkit_slug: "a".repeat(65) },
          { toolkit_slug: 42 }
        ]) {
          const response = yield* post(member.cookie, "cx-guard", body)
          assert.strictEqual(response.status, 400, `${JSON.stringify(body)} ${response.text}`)
          assert.strictEqual(errorCode(response.json), "invalid_body", JSON.stringify(body))
          assert.notInclude(response.text, "../toolkits")
        }

        assert.deepStrictEqual(yield* sentSince(from), [])
        assert.deepStrictEqual(yield* written("cx-guard"), { connections: 0, audits: 0 })
        assert.deepStrictEqual(yield* written("cx-guard-other"), { connections: 0, audits: 0 })
      })
  )

  it.effect("a toolkit Composio does not know is 404 composio_toolkit_not_found and writes nothing", () =>
    Effect.gen(function* () {
      const member = yield* signIn("cx-unknown-member", [["cx-unknown", "MEMBER"]])
      const response = yield* post(member.cookie, "cx-unknown", { toolkit_slug: "no_such_toolkit" })
      assert.strictEqual(response.status, 404, response.text)
      assert.deepStrictEqual(response.json, {
        error: { code: "composio_toolkit_not_found", message: "Composio has no toolkit with this slug" }
      })
      assert.deepStrictEqual(yield* written("cx-unknown"), { connections: 0, audits: 0 })
    })
  )

  it.effect("a toolkit whose authentication Composio does not manage is 409 composio_auth_config_required", () =>
    Effect.gen(function* () {
      const fake = yield* FakeComposio
      fake.addToolkit({ slug: "posthog", managed: false })
      const member = yield* signIn("cx-unmanaged-member", [["cx-unmanaged", "MEMBER"]])
      const from = fake.requests.length
      const response = yield* post(member.cookie, "cx-unmanaged", { toolkit_slug: "posthog" })
      assert.strictEqual(response.status, 409, response.text)
      assert.strictEqual(errorCode(response.json), "composio_auth_config_required")
      assert.deepStrictEqual(
        (yield* sentSince(from)).map((r) => `${r.method} ${r.path}`),
        ["GET /api/v3.1/toolkits/posthog", "GET /api/v3.1/auth_configs"]
      )
      assert.deepStrictEqual(yield* written("cx-unmanaged"), { connections: 0, audits: 0 })
    })
  )

  it.effect(
    "Composio failing or unreachable is 502 composio_unavailable and a refused key 503, with the key in no answer and no log line",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeComposio
        const capture = yield* LogCapture
        fake.addToolkit({ slug: "slack" })
        const member = yield* signIn("cx-down-member", [["cx-down", "MEMBER"]])

        const outcomes: Array<readonly [number, string]> = []
        for (const failure of [503, 500, "connection-reset", 401] as const) {
          fake.failWith(failure)
          const response = yield* post(member.cookie, "cx-down", { toolkit_slug: "slack" })
          fake.failWith(undefined)
          assert.notInclude(response.text, fake.apiKey)
          outcomes.push([response.status, errorCode(response.json)])
        }
        assert.deepStrictEqual(outcomes, [
          [502, "composio_unavailable"],
          [502, "composio_unavailable"],
          [502, "composio_unavailable"],
          [503, "composio_credentials_rejected"]
        ])

        const failures = yield* logsNamed("composio_request_failed")
        assert.deepStrictEqual(
          failures.slice(-4).map((record) => [record.level, record.operation, record.status]),
          [
            ["warn", "GET toolkits/{slug}", 503],
            ["warn", "GET toolkits/{slug}", 500],
            ["warn", "GET toolkits/{slug}", null],
            ["warn", "GET toolkits/{slug}", 401]
          ]
        )
        assert.notInclude(capture.lines.join("\n"), fake.apiKey)
        assert.deepStrictEqual(yield* written("cx-down"), { connections: 0, audits: 0 })

        // Back up: the same request succeeds.
        assert.strictEqual(
          connected(yield* post(member.cookie, "cx-down", { toolkit_slug: "slack" })).status,
          "AUTHORIZATION_REQUIRED"
        )
      })
  )

  it.effect(
    "lists the signed-in member's own connected apps in the organization by toolkit slug, with the link's expiry and never the link or a Composio id",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeComposio
        fake.addToolkit({ slug: "list_weather", noAuth: true })
        fake.addToolkit({ slug: "list_asana" })
        const member = yield* signIn("cx-list-member", [
          ["cx-list", "MEMBER"],
          ["cx-list-second", "MEMBER"]
        ])
        const colleague = yield* signIn("cx-list-colleague", [["cx-list", "ADMIN"]])
        const newcomer = yield* signIn("cx-list-newcomer", [["cx-list", "MEMBER"]])

        connected(yield* post(member.cookie, "cx-list", { toolkit_slug: "list_weather" }))
        connected(yield* post(member.cookie, "cx-list", { toolkit_slug: "list_asana" }))
        connected(yield* post(colleague.cookie, "cx-list", { toolkit_slug: "list_asana" }))
        connected(yield* post(member.cookie, "cx-list-second", { toolkit_slug: "list_weather" }))
        const link = fake.links.filter((l) => l.userId === `bosun:cx-list:${member.userId}`).at(-1)
        assert.isDefined(link)

        const response = yield* list(member.cookie, "cx-list")
        const apps = listed(response)
        assert.deepStrictEqual(Object.keys(response.json as object), ["data"])
        assert.deepStrictEqual(apps, [
          {
            ...(yield* stamps("cx-list", member.userId, "list_asana")),
            expires_at: link?.expiresAt ?? "missing",
            status: "AUTHORIZATION_REQUIRED",
            toolkit_slug: "list_asana"
          },
          {
            ...(yield* stamps("cx-list", member.userId, "list_weather")),
            expires_at: null,
            status: "ACTIVE",
            toolkit_slug: "list_weather"
          }
        ])
        assert.deepStrictEqual(Object.keys(apps[0] ?? {}).sort(), [
          "created_at",
          "expires_at",
          "status",
          "toolkit_slug",
          "updated_at"
        ])
        // Neither the bearer link nor any Composio id reaches the dashboard.
        for (const secret of [
          link?.redirectUrl,
          link?.connectedAccountId,
          link?.authConfigId,
          `bosun:cx-list:${member.userId}`
        ]) {
          assert.notInclude(response.text, secret ?? "missing")
        }

        assert.deepStrictEqual(
          listed(yield* list(colleague.cookie, "cx-list")).map((app) => app.toolkit_slug),
          ["list_asana"]
        )
        assert.deepStrictEqual(
          listed(yield* list(member.cookie, "cx-list-second")).map((app) => [app.toolkit_slug, app.status]),
          [["list_weather", "ACTIVE"]]
        )
        assert.deepStrictEqual(listed(yield* list(newcomer.cookie, "cx-list")), [])
      })
  )

  it.effect("a new request for a toolkit shows in the list with the new link's expiry and a later updated_at", () =>
    Effect.gen(function* () {
      const fake = yield* FakeComposio
      fake.addToolkit({ slug: "list_trello" })
      const member = yield* signIn("cx-relist-member", [["cx-relist", "MEMBER"]])
      connected(yield* post(member.cookie, "cx-relist", { toolkit_slug: "list_trello" }))
      const [before] = listed(yield* list(member.cookie, "cx-relist"))
      connected(yield* post(member.cookie, "cx-relist", { toolkit_slug: "list_trello" }))
      const after = listed(yield* list(member.cookie, "cx-relist"))
      const latest = fake.links.filter((l) => l.userId === `bosun:cx-relist:${member.userId}`).at(-1)
      assert.strictEqual(after.length, 1)
      assert.strictEqual(after[0]?.created_at, before?.created_at)
      assert.strictEqual(after[0]?.expires_at, latest?.expiresAt)
      assert.isTrue(Date.parse(after[0]?.updated_at ?? "") > Date.parse(before?.updated_at ?? ""))
    })
  )

  it.effect(
    "the list answers 401 without a session, 404 outside the caller's organizations and 400 for a 129-character organization id",
    () =>
      Effect.gen(function* () {
        const member = yield* signIn("cx-list-guard-member", [["cx-list-guard", "MEMBER"]])
        yield* signIn("cx-list-guard-stranger", [["cx-list-guard-other", "ADMIN"]])
        const anonymous = yield* request(path("cx-list-guard"))
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual(errorCode(anonymous.json), "session_required")
        for (const org of ["cx-list-guard-other", "cx-list-guard-missing"]) {
          const foreign = yield* list(member.cookie, org)
          assert.strictEqual(foreign.status, 404, org)
          assert.strictEqual(errorCode(foreign.json), "not_found", org)
        }
        const long = yield* list(member.cookie, "o".repeat(129))
        assert.strictEqual(long.status, 400)
        assert.strictEqual(errorCode(long.json), "invalid_path_parameter")
      })
  )
})

layer(layerTestServer(), { excludeTestServices: true })("connected apps without a Composio API key", (it) => {
  it.effect("answers 503 composio_unconfigured naming BOSUN_COMPOSIO_API_KEY and writes nothing", () =>
    Effect.gen(function* () {
      const member = yield* signIn("cx-nokey-member", [["cx-nokey", "MEMBER"]])
      const response = yield* post(member.cookie, "cx-nokey", { toolkit_slug: "github" })
      assert.strictEqual(response.status, 503, response.text)
      assert.deepStrictEqual(response.json, {
        error: {
          code: "composio_unconfigured",
          message: "Connected apps are not configured: the operator must set BOSUN_COMPOSIO_API_KEY"
        }
      })
      assert.deepStrictEqual(yield* written("cx-nokey"), { connections: 0, audits: 0 })
    })
  )
})

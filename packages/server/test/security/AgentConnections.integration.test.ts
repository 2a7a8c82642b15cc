/**
 * Agent connections as an attacker would try them, over real HTTP: a member must not be able to
 * confirm a guessed provider key from the fingerprint the API shows (it is a random label per
 * credential version, not a hash of the key), and an import must not store a `base_url` or
 * `headers` the agent would follow or send somewhere else than a provider over https.
 */
import { createHash } from "node:crypto"
import { type AgentConnection, canonicalJson } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { loadMigrations } from "../../src/platform/db/Migrator.ts"
import { errorCode, signIn } from "../support/Identity.ts"
import { layerTestServer, migrationsDir, request } from "../support/TestServer.ts"

const base = (org: string) => `/api/v1/organizations/${org}/opencode-connection`

const put = (cookie: string, path: string, body: unknown) =>
  request(path, { method: "PUT", headers: { cookie, "content-type": "application/json" }, body: JSON.stringify(body) })

const read = (cookie: string, org: string) =>
  Effect.map(request(base(org), { headers: { cookie } }), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json as { data: AgentConnection }).data
  })

const writtenConnection = (response: { status: number; text: string; json: unknown }) => {
  assert.strictEqual(response.status, 200, response.text)
  return (response.json as { data: { connection: AgentConnection } }).data.connection
}

const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex")

/** What anyone holding a guessed key can compute without Bosun's help. */
const offlineGuesses = (key: string) => {
  const credentials = canonicalJson({ openai: { type: "api", key } })
  return [sha256Hex(credentials), sha256Hex(key)].map((hex) => hex.slice(0, 16))
}

const FINGERPRINT = /^fp:[0-9a-f]{16}$/

const KEY = "sk-guessable-provider-key-4d2f"

const members = (org: string) =>
  Effect.all({
    admin: signIn(`sec-ac-admin-${org}`, [[org, "ADMIN"]]),
    member: signIn(`sec-ac-member-${org}`, [[org, "MEMBER"]])
  })

layer(layerTestServer(), { excludeTestServices: true })("agent connection security", (it) => {
  it.effect("a member cannot confirm a guessed key from the credential fingerprint", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const one = yield* members("sec-fp-one")
      const two = yield* members("sec-fp-two")
      const first = writtenConnection(
        yield* put(one.admin.cookie, `${base("sec-fp-one")}/api-keys/openai`, { api_key: KEY })
      )
      const seen = yield* read(one.member.cookie, "sec-fp-one")
      const fingerprint = seen.auth.fingerprint ?? ""
      assert.strictEqual(fingerprint, first.auth.fingerprint)
      for (const guess of offlineGuesses(KEY)) assert.notInclude(fingerprint, guess)
      assert.match(fingerprint, FINGERPRINT)
      // The discovery queued by the write names the credentials it is for by the same label.
      assert.strictEqual(seen.catalog.credential_fingerprint, fingerprint)

      // The same key elsewhere, or written again, gets another label: nothing links equal keys.
      const elsewhere = writtenConnection(
        yield* put(two.admin.cookie, `${base("sec-fp-two")}/api-keys/openai`, { api_key: KEY })
      )
      assert.match(elsewhere.auth.fingerprint ?? "", FINGERPRINT)
      assert.notStrictEqual(elsewhere.auth.fingerprint, fingerprint)
      const again = writtenConnection(
        yield* put(one.admin.cookie, `${base("sec-fp-one")}/api-keys/openai`, { api_key: KEY })
      )
      assert.strictEqual(again.auth.active_version, 2)
      assert.match(again.auth.fingerprint ?? "", FINGERPRINT)
      assert.notStrictEqual(again.auth.fingerprint, fingerprint)
      assert.strictEqual(again.catalog.credential_fingerprint, again.auth.fingerprint)

      // The audit evidence names each version by its label, never by a hash of the key.
      const audited = yield* sql<{ fingerprint: string; version: number }>`
        SELECT details->>'fingerprint' AS fingerprint, (details->>'version')::int AS version FROM audit_events
        WHERE organization_id = 'sec-fp-one' ORDER BY (details->>'version')::int`
      assert.deepStrictEqual(audited, [
        { fingerprint, version: 1 },
        { fingerprint: again.auth.fingerprint ?? "", version: 2 }
      ])
    })
  )

  it.effect("credentials stored with a hash fingerprint get a random one, their discoveries too", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { admin, member } = yield* members("sec-fp-legacy")
      writtenConnection(yield* put(admin.cookie, `${base("sec-fp-legacy")}/api-keys/openai`, { api_key: KEY }))
      // As an earlier Bosun stored them: the unkeyed hash on the credentials and their discovery.
      const legacy = `sha256:${offlineGuesses(KEY)[0]}`
      yield* sql`UPDATE agent_connections SET auth_fingerprint = ${legacy} WHERE organization_id = 'sec-fp-legacy'`
      yield* sql`UPDATE agent_catalog_discoveries SET credential_fingerprint = ${legacy}
                 WHERE organization_id = 'sec-fp-legacy'`
      assert.strictEqual((yield* read(member.cookie, "sec-fp-legacy")).auth.fingerprint, legacy)

      const migration = (yield* loadMigrations(migrationsDir)).find((file) =>
        file.name.endsWith("_agent_credential_fingerprints.sql")
      )
      assert.isDefined(migration)
      yield* sql.withTransaction(Effect.forEach(migration?.statements ?? [], (statement) => sql.unsafe(statement)))

      const after = yield* read(member.cookie, "sec-fp-legacy")
      assert.match(after.auth.fingerprint ?? "", FINGERPRINT)
      assert.strictEqual(after.auth.active_version, 1)
      assert.strictEqual(after.catalog.credential_fingerprint, after.auth.fingerprint)
    })
  )

  it.effect("an import refuses a base_url or headers the agent must not use, names the field, writes nothing", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const { admin, member } = yield* members("sec-url")
      const SECRET = "secret-header-value-8c1e"
      const entry = (fields: Record<string, unknown>) => ({
        auth: { fake: { type: "api", key: "sk-fake-1", npm: "@ai-sdk/openai-compatible", ...fields } }
      })
      const refused: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
        ["plain http to a private address", { base_url: "http://10.0.0.5/v1" }, "auth.fake.base_url"],
        ["plain http to the metadata service", { base_url: "http://169.254.169.254/latest" }, "auth.fake.base_url"],
        ["plain http to a public name", { base_url: "http://api.example.com/v1" }, "auth.fake.base_url"],
        ["a file URL", { base_url: "file:///etc/passwd" }, "auth.fake.base_url"],
        ["an ftp URL", { base_url: "ftp://example.com/v1" }, "auth.fake.base_url"],
        ["no URL at all", { base_url: "api.example.com/v1" }, "auth.fake.base_url"],
        ["a URL with a line break", { base_url: "https://api.exa\nmple.com/v1" }, "auth.fake.base_url"],
        ["a URL with spaces around it", { base_url: " https://api.example.com/v1" }, "auth.fake.base_url"],
        ["a base_url that is no string", { base_url: 443 }, "auth.fake.base_url"],
        ["headers that are no object", { headers: "X-Title: Bosun" }, "auth.fake.headers"],
        ["a header name with a space", { headers: { "X Title": SECRET } }, "auth.fake.headers"],
        ["a header name with a colon", { headers: { "X-Title:": SECRET } }, "auth.fake.headers"],
        ["a header value with CR/LF", { headers: { "X-Title": `a\r\nX-Injected: ${SECRET}` } }, "auth.fake.headers"],
        [
          "a header value with a control character",
          { headers: { "X-Title": `a\u0007${SECRET}` } },
          "auth.fake.headers"
        ],
        ["a header value that is no string", { headers: { "X-Title": 7 } }, "auth.fake.headers"]
      ]
      for (const [why, fields, field] of refused) {
        const response = yield* put(admin.cookie, `${base("sec-url")}/import`, entry(fields))
        assert.strictEqual(response.status, 400, `${why}: ${response.text}`)
        assert.strictEqual(errorCode(response.json), "invalid_body", why)
        const message = (response.json as { error: { message: string } }).error.message
        assert.include(message, `"${field}`, why)
        assert.notInclude(response.text, SECRET, why)
        assert.notInclude(response.text, "sk-fake-1", why)
      }
      const untouched = yield* read(member.cookie, "sec-url")
      assert.deepStrictEqual(
        [untouched.auth.configured, untouched.auth.active_version, untouched.catalog.status],
        [false, 0, null]
      )
      const [rows] = yield* sql<{ connections: number; discoveries: number; audits: number }>`
        SELECT (SELECT count(*)::int FROM agent_connections WHERE organization_id = 'sec-url') AS connections,
               (SELECT count(*)::int FROM agent_catalog_discoveries WHERE organization_id = 'sec-url') AS discoveries,
               (SELECT count(*)::int FROM audit_events WHERE organization_id = 'sec-url') AS audits`
      assert.deepStrictEqual(rows, { connections: 0, discoveries: 0, audits: 0 })

      // https anywhere, plain http on a loopback host (a local stand-in), and well-formed headers.
      const accepted = writtenConnection(
        yield* put(admin.cookie, `${base("sec-url")}/import`, {
          auth: {
            remote: {
              type: "api",
              key: "sk-remote",
              base_url: "https://api.example.com/v1",
              headers: { "HTTP-Referer": "https://bosun.example", "X-Title": "Bosun review\tbot" }
            },
            local: { type: "api", key: "sk-local", base_url: "http://127.0.0.1:9/v1" },
            named: { type: "api", key: "sk-named", base_url: "http://localhost:8080/v1" },
            six: { type: "api", key: "sk-six", base_url: "http://[::1]:9/v1" },
            plain: { type: "api", key: "sk-plain" }
          }
        })
      )
      assert.deepStrictEqual(accepted.auth.provider_ids, ["local", "named", "plain", "remote", "six"])
      assert.strictEqual(accepted.auth.active_version, 1)
    })
  )
})

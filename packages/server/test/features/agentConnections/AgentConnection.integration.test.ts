/**
 * The agent connection over real HTTP (docs/interface.md: Organization endpoints
 * `opencode-connection`; Resources "Agent connection"; Authentication 3, 7): api-key writes and
 * imports sealed and never returned, versions and fingerprints, repository overrides that leave the
 * organization's credentials alone, excluded import sections, the catalog discovery queued; 403
 * below ADMIN for writes, 401, 404 across organizations, 400 for bad input; no key in responses,
 * logs or audit.
 */
import type { AgentConnection } from "@bosun/domain"
import { LogCapture } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { Secrets } from "../../../src/platform/crypto/Secrets.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

interface Written {
  readonly connection: AgentConnection
  readonly excluded_sections: ReadonlyArray<string>
}

const base = (org: string) => `/api/v1/organizations/${org}/opencode-connection`

const put = (cookie: string, path: string, body: unknown) =>
  request(path, { method: "PUT", headers: { cookie, "content-type": "application/json" }, body: JSON.stringify(body) })

const written = (response: { status: number; text: string; json: unknown }) => {
  assert.strictEqual(response.status, 200, response.text)
  return (response.json as { data: Written }).data
}

const read = (cookie: string, path: string) =>
  Effect.map(request(path, { headers: { cookie } }), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json as { data: AgentConnection }).data
  })

const fixture = (org: string) =>
  Effect.gen(function* () {
    const repositories = yield* RepositoriesRepo
    const admin = yield* signIn(`ac-admin-${org}`, [[org, "ADMIN"]])
    const member = yield* signIn(`ac-member-${org}`, [[org, "MEMBER"]])
    const repository = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: "acme",
      name: "one",
      defaultBranch: "main"
    })
    const other = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: "acme",
      name: "two",
      defaultBranch: "main"
    })
    return { admin, member, repository, other }
  })

const KEY_OPENAI = "sk-openai-plaintext-5c1d9e"
const KEY_ANTHROPIC = "sk-ant-plaintext-77aa01"

layer(layerTestServer(), { excludeTestServices: true })("agent connection", (it) => {
  it.effect("reads an unconfigured connection with every field of the spec's resource", () =>
    Effect.gen(function* () {
      const f = yield* fixture("ac-empty")
      const connection = yield* read(f.member.cookie, base("ac-empty"))
      assert.deepStrictEqual(connection, {
        auth: {
          active_version: 0,
          configured: false,
          fingerprint: null,
          inherited: false,
          mode: "NONE",
          provider_ids: [],
          source_scope: "ORGANIZATION"
        },
        catalog: {
          catalog: { providers: [], runtime_version: "" },
          configuration_fingerprint: null,
          credential_fingerprint: null,
          error: null,
          finished_at: null,
          id: null,
          last_successful_at: null,
          organization_id: "ac-empty",
          provider_version: null,
          repository_id: null,
          started_at: null,
          status: null,
          updated_at: null,
          workflow_run_id: null
        },
        configuration: {
          active_version: 0,
          configured: false,
          fingerprint: null,
          inherited: false,
          source_scope: "ORGANIZATION"
        },
        organization_id: "ac-empty",
        ready: false,
        repository_id: null
      })
    })
  )

  it.effect("seals each api key, raises the version, changes the fingerprint and queues a discovery", () =>
    Effect.gen(function* () {
      const f = yield* fixture("ac-keys")
      const sql = yield* SqlClient.SqlClient
      const first = yield* put(f.admin.cookie, `${base("ac-keys")}/api-keys/openai`, { api_key: KEY_OPENAI })
      assert.notInclude(first.text, KEY_OPENAI)
      const one = written(first)
      assert.deepStrictEqual(one.excluded_sections, [])
      assert.deepStrictEqual(
        { ...one.connection.auth, fingerprint: "f" },
        {
          active_version: 1,
          configured: true,
          fingerprint: "f",
          inherited: false,
          mode: "CREDENTIALS",
          provider_ids: ["openai"],
          source_scope: "ORGANIZATION"
        }
      )
      assert.match(one.connection.auth.fingerprint ?? "", /^fp:[0-9a-f]{16}$/)
      assert.strictEqual(one.connection.catalog.status, "QUEUED")
      assert.strictEqual(one.connection.catalog.credential_fingerprint, one.connection.auth.fingerprint)
      assert.isFalse(one.connection.ready)

      const two = written(
        yield* put(f.admin.cookie, `${base("ac-keys")}/api-keys/anthropic`, { api_key: KEY_ANTHROPIC })
      )
      assert.strictEqual(two.connection.auth.active_version, 2)
      assert.deepStrictEqual(two.connection.auth.provider_ids, ["anthropic", "openai"])
      assert.notStrictEqual(two.connection.auth.fingerprint, one.connection.auth.fingerprint)

      // Sealed in the database, bound to its row, opening to both credentials.
      const [row] = yield* sql<{ id: string; auth: Uint8Array; plain: number }>`
        SELECT id, auth, position(convert_to(${KEY_OPENAI}, 'UTF8') in auth) AS plain
        FROM agent_connections WHERE organization_id = 'ac-keys'`
      assert.strictEqual(row?.plain, 0)
      const secrets = yield* Secrets
      const opened = yield* secrets.open(row?.auth ?? new Uint8Array(), {
        table: "agent_connections",
        column: "auth",
        rowId: row?.id ?? ""
      })
      assert.deepStrictEqual(JSON.parse(Redacted.value(opened)), {
        anthropic: { type: "api", key: KEY_ANTHROPIC },
        openai: { type: "api", key: KEY_OPENAI }
      })
    })
  )

  it.effect("a repository override leaves the organization's credentials alone; other repositories inherit", () =>
    Effect.gen(function* () {
      const f = yield* fixture("ac-scope")
      const organization = written(
        yield* put(f.admin.cookie, `${base("ac-scope")}/api-keys/openai`, { api_key: KEY_OPENAI })
      )
      const override = written(
        yield* put(f.admin.cookie, `${base("ac-scope")}/api-keys/openai?repository_id=${f.repository.id}`, {
          api_key: "sk-repo-key-1"
        })
      )
      assert.deepStrictEqual(
        [
          override.connection.auth.source_scope,
          override.connection.auth.inherited,
          override.connection.auth.active_version,
          override.connection.repository_id
        ],
        ["REPOSITORY", false, 1, f.repository.id]
      )
      const orgNow = yield* read(f.member.cookie, base("ac-scope"))
      assert.deepStrictEqual(orgNow.auth, organization.connection.auth)
      const inherited = yield* read(f.member.cookie, `${base("ac-scope")}?repository_id=${f.other.id}`)
      assert.deepStrictEqual(
        [inherited.auth.source_scope, inherited.auth.inherited, inherited.auth.fingerprint, inherited.repository_id],
        ["ORGANIZATION", true, organization.connection.auth.fingerprint, f.other.id]
      )
    })
  )

  it.effect("an import keeps only auth and lists the sections it excluded", () =>
    Effect.gen(function* () {
      const f = yield* fixture("ac-import")
      const result = written(
        yield* put(f.admin.cookie, `${base("ac-import")}/import`, {
          auth: { openai: { type: "api", key: KEY_OPENAI }, "my.provider": { type: "oauth", refresh: "r-token-9" } },
          plugins: ["x"],
          permissions: { bash: "allow" },
          instructions: ["AGENTS.md"]
        })
      )
      assert.deepStrictEqual(result.excluded_sections, ["instructions", "permissions", "plugins"])
      assert.deepStrictEqual(result.connection.auth.provider_ids, ["my.provider", "openai"])
      assert.strictEqual(result.connection.auth.active_version, 1)
      const again = written(
        yield* put(f.admin.cookie, `${base("ac-import")}/import`, { auth: { openai: { type: "api", key: "sk-new" } } })
      )
      assert.deepStrictEqual(again.excluded_sections, [])
      assert.deepStrictEqual(again.connection.auth.provider_ids, ["openai"])
      assert.strictEqual(again.connection.auth.active_version, 2)
    })
  )

  it.effect(
    "answers 403 to a MEMBER's writes, 401 without a session, 404 across organizations, 400 for bad input",
    () =>
      Effect.gen(function* () {
        const f = yield* fixture("ac-guard")
        const other = yield* fixture("ac-guard-other")
        const member = yield* put(f.member.cookie, `${base("ac-guard")}/api-keys/openai`, { api_key: KEY_OPENAI })
        assert.strictEqual(member.status, 403)
        assert.strictEqual(errorCode(member.json), "forbidden")
        const memberImport = yield* put(f.member.cookie, `${base("ac-guard")}/import`, {
          auth: { openai: { key: "k" } }
        })
        assert.strictEqual(memberImport.status, 403)
        assert.strictEqual((yield* read(f.member.cookie, base("ac-guard"))).auth.configured, false)
        assert.strictEqual((yield* request(base("ac-guard"))).status, 401)
        for (const path of [
          base("ac-guard-other"),
          `${base("ac-guard")}?repository_id=${other.repository.id}`,
          `${base("ac-guard")}?repository_id=missing`
        ]) {
          assert.strictEqual((yield* request(path, { headers: { cookie: f.admin.cookie } })).status, 404, path)
        }
        assert.strictEqual(
          (yield* put(f.admin.cookie, `${base("ac-guard")}/api-keys/openai?repository_id=${other.repository.id}`, {
            api_key: "k"
          })).status,
          404
        )
        for (const [path, body, code] of [
          [`${base("ac-guard")}/api-keys/Bad_ID`, { api_key: "k" }, "invalid_path_parameter"],
          [`${base("ac-guard")}/api-keys/${"a".repeat(129)}`, { api_key: "k" }, "invalid_path_parameter"],
          [`${base("ac-guard")}/api-keys/openai`, { api_key: "" }, "invalid_body"],
          [`${base("ac-guard")}/api-keys/openai`, {}, "invalid_body"],
          [`${base("ac-guard")}/import`, { auth: {} }, "invalid_body"],
          [`${base("ac-guard")}/import`, { plugins: [] }, "invalid_body"],
          [`${base("ac-guard")}/import`, { auth: { openai: "not-an-object" } }, "invalid_body"],
          [
            `${base("ac-guard")}/api-keys/openai?repository_id=${"r".repeat(129)}`,
            { api_key: "k" },
            "invalid_query_parameter"
          ]
        ] as const) {
          const response = yield* put(f.admin.cookie, path, body)
          assert.strictEqual(response.status, 400, `${path} ${response.text}`)
          assert.strictEqual(errorCode(response.json), code, path)
          assert.notInclude(response.text, "not-an-object")
        }
        assert.strictEqual((yield* read(f.member.cookie, base("ac-guard"))).auth.active_version, 0)
      })
  )

  it.effect("two first writes at once both land, one after the other; a SUPER_USER may write too", () =>
    Effect.gen(function* () {
      const f = yield* fixture("ac-race")
      const results = yield* Effect.all(
        [
          put(f.admin.cookie, `${base("ac-race")}/api-keys/openai`, { api_key: "k1" }),
          put(f.admin.cookie, `${base("ac-race")}/api-keys/anthropic`, { api_key: "k2" })
        ],
        { concurrency: 2 }
      )
      assert.deepStrictEqual(
        results.map((r) => r.status),
        [200, 200]
      )
      const after = yield* read(f.member.cookie, base("ac-race"))
      assert.strictEqual(after.auth.active_version, 2)
      assert.deepStrictEqual(after.auth.provider_ids, ["anthropic", "openai"])
      const operator = yield* signIn("ac-operator", [], true)
      const byOperator = yield* put(operator.cookie, `${base("ac-race")}/api-keys/mistral`, { api_key: "k3" })
      assert.strictEqual(written(byOperator).connection.auth.active_version, 3)
    })
  )

  it.effect("never puts a key in a log line or in audit evidence", () =>
    Effect.gen(function* () {
      const capture = yield* LogCapture
      const sql = yield* SqlClient.SqlClient
      const f = yield* fixture("ac-quiet")
      written(yield* put(f.admin.cookie, `${base("ac-quiet")}/api-keys/openai`, { api_key: "sk-quiet-plaintext-31" }))
      assert.notInclude(capture.lines.join("\n"), "sk-quiet-plaintext-31")
      const rows = yield* sql<{
        row: string
      }>`SELECT audit_events::text AS row FROM audit_events WHERE organization_id = 'ac-quiet'`
      assert.lengthOf(rows, 1)
      assert.notInclude(rows[0]?.row ?? "", "sk-quiet-plaintext-31")
      assert.include(rows[0]?.row ?? "", "fp:")
    })
  )
})

/**
 * Catalog discovery end to end (the first real workflow type): an agent connection write
 * over HTTP queues a catalog_discovery run; the Scheduler claims it, RunAttemptWorkflow runs the
 * real runtime's CATALOG task with the real OpenCode / Codex CLI on the scope's credentials, and
 * publish fills the connection's catalog and discovery record — read back through
 * `GET .../opencode-connection` field by field. Also: a discovery that fails shows FAILED with the
 * run's error and keeps `ready` false; a newer write re-queues it while the last catalog stays on
 * show; the configured agent (AGENT_ONE) decides which CLI is asked, and a configuration change of
 * the repository re-queues its discovery.
 */
import * as path from "node:path"
import type { AgentConnection } from "@bosun/domain"
import { eventually } from "@bosun/testing"
import { makeFixtures, type RuntimeProcess, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../../../src/features/agentConnections/ConfigurationRepo.ts"
import { signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

class TestRuntime extends Context.Service<TestRuntime, RuntimeProcess>()("test/TestRuntime") {}

const fixtures = makeFixtures()

const layerRuntime = Layer.effect(
  TestRuntime,
  Effect.acquireRelease(
    Effect.promise(() => startRuntime({ BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data") })),
    (runtime) => Effect.promise(() => runtime.stop())
  )
)

const layerServer = Layer.unwrap(
  Effect.map(TestRuntime, (runtime) =>
    layerTestServer({
      settings: {
        runtime: {
          external: Option.some({ url: new URL(runtime.base), token: Redacted.make(TOKEN) }),
          embeddedPort: 0,
          reviewAgentProfile: Option.none()
        }
      }
    })
  )
).pipe(Layer.provide(layerRuntime))

const base = (org: string) => `/api/v1/organizations/${org}/opencode-connection`

const send = (cookie: string, url: string, body: unknown) =>
  Effect.map(
    request(url, {
      method: "PUT",
      headers: { cookie, "content-type": "application/json" },
      body: JSON.stringify(body)
    }),
    (response) => {
      assert.strictEqual(response.status, 200, response.text)
      return (response.json as { data: { connection: AgentConnection } }).data.connection
    }
  )

const read = (cookie: string, url: string) =>
  Effect.map(request(url, { headers: { cookie } }), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json as { data: AgentConnection }).data
  })

const settled = (cookie: string, url: string) =>
  eventually(
    read(cookie, url),
    (connection) => connection.catalog.status === "SUCCEEDED" || connection.catalog.status === "FAILED",
    Duration.seconds(60)
  )

const fakeProvider = (models: Record<string, unknown>) => ({
  auth: {
    fake: {
      type: "api",
      key: "sk-fake-discovery-key-31337",
      npm: "@ai-sdk/openai-compatible",
      name: "Fake Provider",
      base_url: "http://127.0.0.1:9/v1",
      models
    }
  }
})

const iso = (value: string | null) => {
  assert.isNotNull(value)
  assert.match(value ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
  return Date.parse(value ?? "")
}

layer(layerServer, { excludeTestServices: true, timeout: Duration.seconds(120) })("catalog discovery", (it) => {
  it.effect(
    "a credential write queues a discovery whose run fills the catalog through the real OpenCode CLI",
    () =>
      Effect.gen(function* () {
        const admin = yield* signIn("cat-admin", [["cat-org", "ADMIN"]])
        const queued = yield* send(
          admin.cookie,
          `${base("cat-org")}/import`,
          fakeProvider({ m1: { name: "Model One", limit: { context: 32000, output: 2000 } } })
        )
        assert.strictEqual(queued.catalog.status, "QUEUED")
        assert.strictEqual(queued.ready, false)
        assert.isNotNull(queued.catalog.workflow_run_id)
        assert.deepStrictEqual(queued.catalog.catalog, { providers: [], runtime_version: "" })

        const done = yield* settled(admin.cookie, base("cat-org"))
        assert.strictEqual(done.catalog.status, "SUCCEEDED", done.catalog.error ?? "")
        assert.strictEqual(done.ready, true)
        assert.deepStrictEqual(done.catalog.catalog, {
          providers: [
            {
              id: "fake",
              name: "Fake Provider",
              models: [
                {
                  id: "m1",
                  name: "Model One",
                  variants: [],
                  capabilities: { attachment: false, reasoning: false, temperature: false, tool_call: true },
                  limits: { context: 32000, output: 2000 }
                }
              ]
            }
          ],
          runtime_version: "bosun-runtime 0.1.0"
        })
        assert.match(done.catalog.provider_version ?? "", /^opencode \d+\.\d+\.\d+/)
        assert.strictEqual(done.catalog.id, queued.catalog.id)
        assert.strictEqual(done.catalog.workflow_run_id, queued.catalog.workflow_run_id)
        assert.strictEqual(done.catalog.organization_id, "cat-org")
        assert.isNull(done.catalog.repository_id)
        assert.isNull(done.catalog.error)
        assert.strictEqual(done.catalog.credential_fingerprint, done.auth.fingerprint)
        assert.match(done.catalog.configuration_fingerprint ?? "", /^sha256:[0-9a-f]{16}$/)
        const started = iso(done.catalog.started_at)
        const finished = iso(done.catalog.finished_at)
        assert.isAtMost(started, finished)
        assert.strictEqual(done.catalog.last_successful_at, done.catalog.finished_at)
        iso(done.catalog.updated_at)

        // The run behind it is an ordinary workflow run of the organization, finished once.
        // (publish records the catalog; the run itself ends a step later, at finish-attempt).
        const run = yield* eventually(
          request(`/api/v1/organizations/cat-org/workflow-runs/${done.catalog.workflow_run_id}`, {
            headers: { cookie: admin.cookie }
          }),
          (response) => response.text.includes('"status":"SUCCEEDED"')
        )
        assert.strictEqual(run.status, 200, run.text)
        const body = run.json as {
          data: { run: { status: string; workflow_type: string; provider: string }; attempts: Array<unknown> }
        }
        assert.strictEqual(body.data.run.workflow_type, "catalog_discovery")
        assert.strictEqual(body.data.run.status, "SUCCEEDED")
        assert.strictEqual(body.data.run.provider, "OPENCODE")
        assert.lengthOf(body.data.attempts, 1)
        // The key went to the CLI, never into the catalog or the response.
        assert.notInclude(JSON.stringify(done), "sk-fake-discovery-key-31337")
      }),
    { timeout: 120_000 }
  )

  it.effect(
    "a newer write re-queues the discovery, keeps the last catalog on show and is not ready until it succeeds",
    () =>
      Effect.gen(function* () {
        const admin = yield* signIn("cat-admin-2", [["cat-org-2", "ADMIN"]])
        yield* send(admin.cookie, `${base("cat-org-2")}/import`, fakeProvider({ first: { name: "First" } }))
        const first = yield* settled(admin.cookie, base("cat-org-2"))
        assert.strictEqual(first.catalog.status, "SUCCEEDED", first.catalog.error ?? "")

        const again = yield* send(
          admin.cookie,
          `${base("cat-org-2")}/import`,
          fakeProvider({ second: { name: "Second" } })
        )
        assert.strictEqual(again.catalog.status, "QUEUED")
        assert.notStrictEqual(again.catalog.id, first.catalog.id)
        assert.strictEqual(again.ready, false)
        assert.deepStrictEqual(again.catalog.catalog, first.catalog.catalog)
        assert.strictEqual(again.catalog.last_successful_at, first.catalog.last_successful_at)
        assert.notStrictEqual(again.catalog.credential_fingerprint, first.catalog.credential_fingerprint)

        const second = yield* settled(admin.cookie, base("cat-org-2"))
        assert.strictEqual(second.catalog.status, "SUCCEEDED")
        assert.strictEqual(second.ready, true)
        assert.deepStrictEqual(
          second.catalog.catalog.providers.flatMap((provider) => provider.models.map((model) => model.id)),
          ["second"]
        )
      }),
    { timeout: 120_000 }
  )

  it.effect(
    "a discovery the CLI cannot run is FAILED with the run's error, and the connection is not ready",
    () =>
      Effect.gen(function* () {
        const admin = yield* signIn("cat-admin-3", [["cat-org-3", "ADMIN"]])
        yield* send(admin.cookie, `${base("cat-org-3")}/import`, {
          auth: { fake: { key: "sk-unreadable-secret-999", not_an_opencode_field: true } }
        })
        const failed = yield* settled(admin.cookie, base("cat-org-3"))
        assert.strictEqual(failed.catalog.status, "FAILED")
        assert.strictEqual(failed.ready, false)
        assert.include(failed.catalog.error ?? "", "provider_credentials")
        assert.notInclude(failed.catalog.error ?? "", "sk-unreadable-secret-999")
        iso(failed.catalog.finished_at)
        assert.isNull(failed.catalog.last_successful_at)
        assert.deepStrictEqual(failed.catalog.catalog, { providers: [], runtime_version: "" })
      }),
    { timeout: 120_000 }
  )

  it.effect(
    "the configured agent decides which CLI is asked (AGENT_ONE: Codex), and changing it re-queues the discovery",
    () =>
      Effect.gen(function* () {
        const admin = yield* signIn("cat-admin-4", [["cat-org-4", "ADMIN"]])
        const sql = yield* SqlClient.SqlClient
        const [repository] = yield* sql<{ id: string }>`
          INSERT INTO repositories (organization_id, owner, name, default_branch)
          VALUES ('cat-org-4', 'acme', 'codex', 'main') RETURNING id`
        const repositoryId = repository?.id ?? ""
        const configurations = yield* ConfigurationRepo
        yield* configurations.setOrganizationGroup(
          "cat-org-4",
          "agent",
          { agent_provider: "AGENT_ONE", model: "openai/gpt-5.5" },
          admin.userId
        )
        const url = `${base("cat-org-4")}?repository_id=${repositoryId}`
        const queued = yield* send(admin.cookie, `${base("cat-org-4")}/api-keys/openai?repository_id=${repositoryId}`, {
          api_key: "sk-codex-discovery-key"
        })
        assert.strictEqual(queued.catalog.repository_id, repositoryId)
        const done = yield* settled(admin.cookie, url)
        assert.strictEqual(done.catalog.status, "SUCCEEDED", done.catalog.error ?? "")
        assert.strictEqual(done.catalog.repository_id, repositoryId)
        assert.match(done.catalog.provider_version ?? "", /^codex \d+\.\d+/)
        assert.deepStrictEqual(
          done.catalog.catalog.providers.map((provider) => provider.id),
          ["openai"]
        )
        assert.isAbove(done.catalog.catalog.providers[0]?.models.length ?? 0, 0)

        // Switching the repository to OPENCODE changes what it was discovered with: a new discovery.
        const configured = yield* request(
          `/api/v1/organizations/cat-org-4/repositories/${repositoryId}/configuration`,
          {
            method: "PUT",
            headers: { cookie: admin.cookie, "content-type": "application/json" },
            body: JSON.stringify({
              agent_provider: "OPENCODE",
              automatic_pr_description: "DISABLED",
              issue_pull_request_mode: "DRAFT",
              review_policy: {
                comment_limit: 10,
                excluded_authors: [],
                excluded_paths: [],
                max_changed_files: 100,
                review_drafts: false,
                review_on_open: true,
                review_on_push: true,
                review_on_ready: true,
                review_on_reopen: false,
                strictness: "LOW"
              },
              sandbox_config: {},
              sandbox_provider: "EXTERNAL_RUNTIME"
            })
          }
        )
        assert.strictEqual(configured.status, 204, configured.text)
        const requeued = yield* read(admin.cookie, url)
        assert.notStrictEqual(requeued.catalog.id, done.catalog.id)
        assert.notStrictEqual(requeued.catalog.status, "SUCCEEDED")
        const rediscovered = yield* eventually(
          read(admin.cookie, url),
          (connection) => connection.catalog.status === "SUCCEEDED" || connection.catalog.status === "FAILED",
          Duration.seconds(60)
        )
        assert.strictEqual(rediscovered.catalog.status, "SUCCEEDED", rediscovered.catalog.error ?? "")
        assert.match(rediscovered.catalog.provider_version ?? "", /^opencode /)
        assert.notStrictEqual(rediscovered.catalog.configuration_fingerprint, done.catalog.configuration_fingerprint)
        assert.deepStrictEqual(
          rediscovered.catalog.catalog.providers.map((provider) => provider.id),
          ["openai"]
        )

        // The organization's own connection is untouched: it has no credentials and no discovery.
        const organization = yield* read(admin.cookie, base("cat-org-4"))
        assert.strictEqual(organization.auth.configured, false)
        assert.isNull(organization.catalog.status)
      }),
    { timeout: 120_000 }
  )
})

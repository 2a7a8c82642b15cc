/**
 * What configuration gives an agent run, end to end (a real server, the real runtime and OpenCode
 * against scripted models, the fake GitHub): a deep scan's agent gets the team's instructions, its
 * MCP server with the sealed header and its skill; a configured model gone from the catalog fails
 * the run in prepare, before any agent starts; the agent connection's Test and the setup checklist
 * say whether the model answered.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { AgentConnection, ModelTurnResult, RepositoryConfiguration, SetupChecklist } from "@bosun/domain"
import {
  chatMessages,
  eventually,
  type FakeModelRequest,
  type FakeModelScript,
  type GitRepository,
  LogCapture,
  messageText,
  offeredTools,
  startFakeModelServer,
  systemPrompt,
  toolResults
} from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { MODEL_TURN_PROMPT } from "../../src/features/agentConnections/ModelTurn.ts"
import { skillFile } from "../../src/features/agentConnections/RunSettings.ts"
import { jsonRequest, layerAgentServer, layerGitRepository } from "../support/AgentStack.ts"
import { errorCode, signIn } from "../support/Identity.ts"
import { deliveries, installApp, type Tenant } from "../support/InstalledApp.ts"
import { logsNamed, request, type TestResponse } from "../support/TestServer.ts"

const tenant = (n: number, name: string): Tenant => ({
  org: `agent-settings-${name}`,
  account: { id: 73_500 + n, login: `acme-settings-${name}` },
  installationId: 83_500 + n,
  githubRepositoryId: 94_500 + n,
  fullName: `acme-settings-${name}/shop`
})
const SCAN = tenant(1, "scan")
const STALE = tenant(2, "stale")
const TESTED = tenant(3, "tested")
/** An organization with no GitHub App: only credentials, for the refused test turn. */
const REFUSED = "agent-settings-refused"

class ScanRepository extends Context.Service<ScanRepository, GitRepository>()("test/AgentSettingsScanRepository") {}
class StaleRepository extends Context.Service<StaleRepository, GitRepository>()("test/AgentSettingsStaleRepository") {}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-agent-settings-"))

const Server = layerAgentServer({
  name: "bosun-agent-settings",
  title: "Settings",
  // Every test scripts a model server of its own; the shared one is never a provider.
  turns: [],
  repositories: Layer.mergeAll(
    layerGitRepository(ScanRepository, root, SCAN.fullName),
    layerGitRepository(StaleRepository, root, STALE.fullName)
  )
})

/** A scripted model server of the test's own, closed with the test. */
const modelServer = (script: FakeModelScript) =>
  Effect.acquireRelease(
    Effect.promise(() => startFakeModelServer(script)),
    (handle) => Effect.promise(() => handle.close())
  )

const okJson = <A>(response: TestResponse) => {
  assert.strictEqual(response.status, 200, response.text)
  return (response.json as { data: A }).data
}

const get = <A>(cookie: string, url: string) => Effect.map(request(url, jsonRequest(cookie, "GET")), okJson<A>)

const connectionOf = (org: string, cookie: string) =>
  get<AgentConnection>(cookie, `/api/v1/organizations/${org}/opencode-connection`)

/** Waits for the organization's latest catalog discovery to end; asserts it SUCCEEDED. */
const discovered = (org: string, cookie: string) =>
  Effect.gen(function* () {
    const connection = yield* eventually(
      connectionOf(org, cookie),
      (found) => found.catalog.status === "SUCCEEDED" || found.catalog.status === "FAILED",
      Duration.seconds(90)
    )
    assert.strictEqual(connection.catalog.status, "SUCCEEDED", connection.catalog.error ?? "")
    return connection
  })

/** Imports OpenCode credentials for the provider `fake` at `baseUrl` with `models`; waits for its catalog. */
const connectProvider = (org: string, cookie: string, baseUrl: string, models: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const imported = yield* request(
      `/api/v1/organizations/${org}/opencode-connection/import`,
      jsonRequest(cookie, "PUT", {
        auth: {
          fake: {
            type: "api",
            key: `sk-${org}-0123456789abcdef`,
            npm: "@ai-sdk/openai-compatible",
            name: "Fake Provider",
            base_url: baseUrl,
            models: Object.fromEntries(models.map((model) => [model, { name: model }]))
          }
        }
      })
    )
    assert.strictEqual(imported.status, 200, imported.text)
    return yield* discovered(org, cookie)
  })

/** A PUT of the organization's configuration; a model change re-queues discovery, which is awaited. */
const configure = (org: string, cookie: string, body: Readonly<Record<string, unknown>>) =>
  Effect.gen(function* () {
    const response = yield* request(`/api/v1/organizations/${org}/configuration`, jsonRequest(cookie, "PUT", body))
    assert.strictEqual(response.status, 204, response.text)
    if (body.model !== undefined) yield* discovered(org, cookie)
  })

interface ScanView {
  readonly id: string
  readonly status: string
  readonly model: string | null
  readonly error_message: string | null
}

/** Launches a deep scan of the repository and waits for it to end; answers the scan. */
const scanToTheEnd = (org: string, cookie: string, repositoryId: string) =>
  Effect.gen(function* () {
    const launched = yield* request(
      `/api/v1/organizations/${org}/deep-scans`,
      jsonRequest(cookie, "POST", { repository_id: repositoryId })
    )
    assert.strictEqual(launched.status, 202, launched.text)
    const id = (launched.json as { data: { id: string } }).data.id
    return yield* Effect.orDie(
      eventually(
        get<ScanView>(cookie, `/api/v1/organizations/${org}/deep-scans/${id}`),
        (scan) => ["SUCCEEDED", "FAILED", "CANCELLED"].includes(scan.status),
        Duration.seconds(150)
      )
    )
  })

/** The organization's one deep-scan run. */
const scanRun = (org: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const runs = yield* sql<{
      id: string
      status: string
      error_code: string | null
      error_message: string | null
      model: string | null
      sandbox_id: string | null
    }>`
      SELECT id, status, error_code, error_message, model, sandbox_id FROM workflow_runs
      WHERE organization_id = ${org} AND workflow_type = 'deep_scan'`
    assert.strictEqual(runs.length, 1)
    const [run] = runs
    assert.isDefined(run)
    return run ?? { id: "", status: "", error_code: null, error_message: null, model: null, sandbox_id: null }
  })

const REPORT = {
  summary: "Audited `src/`: nothing stands out.",
  coverage: { complete: true, skipped: [] },
  findings: []
}

const SKILL = {
  name: "house-style",
  description: "How this team writes error messages and log lines.",
  content: "Error messages name the value that was wrong and what was expected."
}

/** Where OpenCode's system prompt says the skill's SKILL.md is. */
const skillLocation = (request: FakeModelRequest) =>
  new RegExp(`<name>${SKILL.name}</name>[\\s\\S]*?<location>([^<]+)</location>`).exec(systemPrompt(request))?.[1] ??
  "missing"

/** The test turn as the checklist shows it passing. */
const passed = (result: ModelTurnResult) => `${result.model} answered at ${result.tested_at}`

layer(Server, { excludeTestServices: true, timeout: Duration.minutes(8) })("agent settings end to end", (it) => {
  it.effect(
    "a deep scan's agent gets the organization's custom instructions and guidance, its MCP server with the sealed header, and its skill",
    () =>
      Effect.gen(function* () {
        const model = yield* modelServer({
          turns: [
            {
              type: "tools",
              calls: [
                { name: "docs_search_docs", arguments: { query: "billing table" } },
                // The skill's file where OpenCode says it is. (Its `skill` tool also lists the
                // skill's directory with ripgrep, which the runtime image has and a test host may not.)
                {
                  name: "bash",
                  arguments: (request) => ({
                    command: `cat "${skillLocation(request)}"`,
                    description: "Read the skill"
                  })
                },
                {
                  name: "bash",
                  arguments: {
                    command: `cat > "$BOSUN_OUTPUT_DIR/deep-scan.json" <<'JSON'\n${JSON.stringify(REPORT)}\nJSON`,
                    description: "Write the report"
                  }
                }
              ],
              usage: { input: 900, output: 60 }
            },
            { type: "text", text: "Audit written.", usage: { input: 950, output: 3 } }
          ],
          mcpTools: [{ name: "search_docs", description: "Searches the team's internal documentation." }]
        })
        const repository = yield* ScanRepository
        yield* Effect.promise(() =>
          repository.commit("main", { "README.md": "# shop\n", "src/index.js": "exports.one = 1\n" }, "init")
        )
        const repositoryId = yield* installApp(
          SCAN,
          { slug: "bosun", clientId: "Iv1.settings-scan" },
          deliveries(SCAN.org).sendNew
        )
        const admin = yield* signIn(`${SCAN.org}-admin`, [[SCAN.org, "ADMIN"]])
        yield* connectProvider(SCAN.org, admin.cookie, model.url, ["fake-coder"])

        const token = `mcp-secret-${randomUUID()}`
        const secret = `Bearer ${token}`
        const instructions = "Name every function that reads the legacy billing table."
        const guidance = "Treat anything under src/payments as security-critical."
        const mcpUrl = `${model.origin}/mcp`
        yield* configure(SCAN.org, admin.cookie, {
          model: "fake/fake-coder",
          custom_instructions: instructions,
          review_policy: { guidance },
          mcp_servers: [{ name: "docs", url: mcpUrl, headers: { Authorization: secret } }],
          skills: [SKILL]
        })

        const scan = yield* scanToTheEnd(SCAN.org, admin.cookie, repositoryId)
        assert.strictEqual(scan.status, "SUCCEEDED", `the scan failed: ${scan.error_message}`)
        assert.strictEqual(scan.model, "fake/fake-coder")

        const agent = model.agentRequests()
        assert.strictEqual(agent.length, 2, "the tool step and the closing step")
        for (const entry of agent) {
          const system = systemPrompt(entry)
          assert.include(system, `Instructions from this team:\n${instructions}`)
          assert.include(system, `Guidance for this repository:\n${guidance}`)
          // OpenCode lists the skills it found in the system prompt; its `skill` tool loads one by name.
          assert.include(
            system,
            `<name>${SKILL.name}</name>\n    <description>${SKILL.description}</description>`,
            "the skill is offered with its name and description"
          )
          const tools = offeredTools(entry)
          const mcpTool = tools.find((tool) => tool.name === "docs_search_docs")
          assert.strictEqual(mcpTool?.description, "Searches the team's internal documentation.")
          assert.isDefined(tools.find((tool) => tool.name === "skill"))
        }
        // What the agent got back from the MCP tool and from reading the skill's file.
        const [, closing] = agent
        const results = closing === undefined ? [] : toolResults(closing).map((result) => result.content)
        assert.strictEqual(results.length, 3, results.join("\n---\n"))
        assert.isTrue(
          results.some((content) => content.includes("fake result of search_docs")),
          "the MCP tool answered the agent"
        )
        assert.isTrue(
          results.some((content) => content.trim() === skillFile(SKILL).content.trim()),
          `the skill's SKILL.md, with the front matter Bosun adds, is where OpenCode reads it: ${results.join("\n---\n")}`
        )

        const mcp = model.requests.filter((entry) => entry.kind === "mcp")
        const methods = mcp.map((entry) => (entry.body as { method?: string } | undefined)?.method)
        assert.includeMembers(methods, ["initialize", "tools/list", "tools/call"])
        assert.deepStrictEqual(
          mcp.map((entry) => entry.headers.authorization),
          mcp.map(() => secret),
          "every request to the MCP server carried the sealed header, opened for the run"
        )

        // The header's value is in no answer of the API and in no log line.
        const answers = [
          yield* request(`/api/v1/organizations/${SCAN.org}/configuration`, jsonRequest(admin.cookie, "GET")),
          yield* request(
            `/api/v1/organizations/${SCAN.org}/repositories/${repositoryId}/configuration`,
            jsonRequest(admin.cookie, "GET")
          ),
          yield* request(`/api/v1/organizations/${SCAN.org}/deep-scans/${scan.id}`, jsonRequest(admin.cookie, "GET")),
          yield* request(`/api/v1/organizations/${SCAN.org}/workflow-runs/${(yield* scanRun(SCAN.org)).id}`, {
            headers: { cookie: admin.cookie }
          })
        ]
        for (const answer of answers) {
          assert.strictEqual(answer.status, 200, answer.text)
          assert.notInclude(answer.text, token)
        }
        const configuration = okJson<RepositoryConfiguration>(answers[0] as TestResponse)
        assert.deepStrictEqual(configuration.mcp_servers, [
          { name: "docs", url: mcpUrl, header_names: ["Authorization"] }
        ])
        assert.deepStrictEqual(configuration.skills, [SKILL])
        assert.strictEqual(configuration.custom_instructions, instructions)
        assert.strictEqual(configuration.review_policy.guidance, guidance)
        const logs = yield* LogCapture
        assert.isAbove(logs.lines.length, 0)
        assert.deepStrictEqual(
          logs.lines.filter((line) => line.includes(token)),
          [],
          "no log line carries the header's value"
        )
      }),
    { timeout: 240_000 }
  )

  it.effect(
    "a run whose model is no longer in the catalog fails in prepare with a message naming it, before any agent starts",
    () =>
      Effect.gen(function* () {
        const model = yield* modelServer({ turns: [{ type: "text", text: "An agent should not have started." }] })
        const repository = yield* StaleRepository
        yield* Effect.promise(() => repository.commit("main", { "src/index.js": "exports.one = 1\n" }, "init"))
        const repositoryId = yield* installApp(
          STALE,
          { slug: "bosun", clientId: "Iv1.settings-stale" },
          deliveries(STALE.org).sendNew
        )
        const admin = yield* signIn(`${STALE.org}-admin`, [[STALE.org, "ADMIN"]])
        yield* connectProvider(STALE.org, admin.cookie, model.url, ["fake-coder-v1", "fake-coder-v2"])
        yield* configure(STALE.org, admin.cookie, { model: "fake/fake-coder-v1" })

        // The provider dropped the model: the newest successful discovery is the catalog in force.
        const before = yield* connectionOf(STALE.org, admin.cookie)
        const newer = {
          ...before.catalog.catalog,
          providers: before.catalog.catalog.providers.map((provider) => ({
            ...provider,
            models: provider.models.filter((entry) => entry.id !== "fake-coder-v1")
          }))
        }
        const sql = yield* SqlClient.SqlClient
        yield* sql`
          INSERT INTO agent_catalog_discoveries (organization_id, repository_id, status, credential_fingerprint, catalog,
                                                 provider_version, started_at, finished_at, last_successful_at)
          VALUES (${STALE.org}, NULL, 'SUCCEEDED', ${before.catalog.credential_fingerprint},
                  ${JSON.stringify(newer)}::jsonb, ${before.catalog.provider_version}, now(), now(), now())`
        const after = yield* connectionOf(STALE.org, admin.cookie)
        assert.deepStrictEqual(
          after.catalog.catalog.providers.map((provider) => [provider.id, provider.models.map((entry) => entry.id)]),
          [["fake", ["fake-coder-v2"]]]
        )

        const scan = yield* scanToTheEnd(STALE.org, admin.cookie, repositoryId)
        const message =
          "The configured model is no longer offered by the organization's agent credentials: " +
          'Model "fake/fake-coder-v1" is not in the catalog of provider "fake" (models are named provider/model); ' +
          "close matches: fake/fake-coder-v2. Choose a model in the organization's settings"
        assert.strictEqual(scan.status, "FAILED")
        assert.strictEqual(scan.error_message, message)
        assert.isNull(scan.model)

        const run = yield* scanRun(STALE.org)
        assert.strictEqual(run.status, "FAILED")
        assert.strictEqual(run.error_code, "model_unavailable")
        assert.strictEqual(run.error_message, message)
        assert.isNull(run.model)
        assert.isNull(run.sandbox_id)
        const attempts = yield* sql<{
          status: string
          error_code: string | null
          exit_reason: string | null
          retryable: boolean
          sandbox_id: string | null
          request_key: string | null
        }>`
          SELECT status, error_code, exit_reason, retryable, sandbox_id, request_key FROM workflow_attempts
          WHERE run_id = ${run.id}`
        assert.deepStrictEqual(attempts, [
          {
            status: "FAILED",
            error_code: "model_unavailable",
            exit_reason: "model_unavailable",
            retryable: false,
            sandbox_id: null,
            request_key: null
          }
        ])
        const steps = yield* sql<{ step: string; status: string; error: string | null }>`
          SELECT step, status, error FROM workflow_attempt_steps WHERE attempt_id = ${`${run.id}:1`}`
        assert.deepStrictEqual(
          steps.find((step) => step.step === "prepare"),
          { step: "prepare", status: "FAILED", error: message }
        )
        assert.deepStrictEqual(
          steps.filter((step) => step.step === "acquire-sandbox" || step.step === "execute"),
          [],
          "no sandbox was asked for and no agent ran"
        )
        assert.deepStrictEqual(model.agentRequests(), [], "the model got no agent request")

        const failures = (yield* logsNamed("attempt_step_failed")).filter((record) => record.run_id === run.id)
        assert.deepStrictEqual(
          failures.map((record) => [record.level, record.step, record.code, record.retryable, record.error]),
          [["error", "prepare", "model_unavailable", false, message]]
        )
      }),
    { timeout: 240_000 }
  )

  it.effect(
    "the agent connection's Test answers whether the model answered, and the setup checklist turns green",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const testPath = (org: string) => `/api/v1/organizations/${org}/opencode-connection/test`
        const checklistOf = (org: string, cookie: string) =>
          get<SetupChecklist>(cookie, `/api/v1/organizations/${org}/setup`)
        const audited = (org: string) =>
          sql<{ target: string; details: unknown }>`
            SELECT target, details FROM audit_events
            WHERE organization_id = ${org} AND action = 'agent_connection.test' ORDER BY id`

        // A provider that answers.
        const answering = yield* modelServer({ turns: [{ type: "text", text: "OK", usage: { input: 12, output: 1 } }] })
        yield* installApp(TESTED, { slug: "bosun", clientId: "Iv1.settings-tested" }, deliveries(TESTED.org).sendNew)
        const admin = yield* signIn(`${TESTED.org}-admin`, [[TESTED.org, "ADMIN"]])
        yield* connectProvider(TESTED.org, admin.cookie, answering.url, ["fake-coder"])
        yield* configure(TESTED.org, admin.cookie, { model: "fake/fake-coder" })
        assert.isNull(yield* get<ModelTurnResult | null>(admin.cookie, testPath(TESTED.org)))
        const untested = yield* checklistOf(TESTED.org, admin.cookie)
        assert.deepStrictEqual(untested.steps.at(-1), {
          id: "test_turn",
          done: false,
          detail: "Run the agent connection's Test"
        })
        assert.strictEqual(untested.complete, false)

        const started = Date.now()
        const result = okJson<ModelTurnResult>(yield* request(testPath(TESTED.org), jsonRequest(admin.cookie, "POST")))
        assert.strictEqual(result.ok, true)
        assert.strictEqual(result.model, "fake/fake-coder")
        assert.strictEqual(result.message, "the model answered (13 tokens)")
        assert.isAtLeast(Date.parse(result.tested_at), started - 1000)
        assert.isAbove(result.duration_ms, 0)
        assert.isAtMost(result.duration_ms, Date.now() - started)
        // One agent step, on the server's runtime, asking the model in force the one-word question.
        const turns = answering.agentRequests()
        assert.strictEqual(turns.length, 1)
        assert.deepStrictEqual(
          turns.map((entry) => (entry.body as { model?: string }).model),
          ["fake-coder"]
        )
        assert.deepStrictEqual(
          turns.map((entry) =>
            chatMessages(entry)
              .filter((message) => message.role === "user")
              .map(messageText)
              .join("\n")
          ),
          [MODEL_TURN_PROMPT]
        )
        assert.deepStrictEqual(yield* get<ModelTurnResult | null>(admin.cookie, testPath(TESTED.org)), result)

        const green = yield* checklistOf(TESTED.org, admin.cookie)
        assert.deepStrictEqual(green.steps[0], {
          id: "github_app",
          done: true,
          detail: "GitHub App bosun is configured"
        })
        assert.deepStrictEqual(green.steps[1], { id: "app_installed", done: true, detail: "1 repository is connected" })
        assert.deepStrictEqual(green.steps[2], {
          id: "agent_credentials",
          done: true,
          detail: "Credentials for fake"
        })
        assert.deepStrictEqual(green.steps[3], { id: "model_chosen", done: true, detail: "fake/fake-coder" })
        assert.deepStrictEqual(green.steps[4], { id: "test_turn", done: true, detail: passed(result) })
        assert.strictEqual(green.steps.length, 5)
        assert.strictEqual(green.complete, true)
        assert.deepStrictEqual(yield* audited(TESTED.org), [
          { target: `organization:${TESTED.org}`, details: { model: "fake/fake-coder", ok: true } }
        ])

        // A provider that refuses the key.
        const providerError = "Incorrect API key provided: sk-agent-***cdef. You can find your API key in your account."
        const refusing = yield* modelServer({
          turns: [{ type: "error", status: 401, message: providerError, times: Number.POSITIVE_INFINITY }]
        })
        const owner = yield* signIn(`${REFUSED}-admin`, [[REFUSED, "ADMIN"]])
        const member = yield* signIn(`${REFUSED}-member`, [[REFUSED, "MEMBER"]])
        yield* connectProvider(REFUSED, owner.cookie, refusing.url, ["fake-coder"])

        const forbidden = yield* request(testPath(REFUSED), jsonRequest(member.cookie, "POST"))
        assert.strictEqual(forbidden.status, 403, forbidden.text)
        assert.strictEqual(errorCode(forbidden.json), "forbidden")
        assert.isNull(yield* get<ModelTurnResult | null>(member.cookie, testPath(REFUSED)))
        assert.deepStrictEqual(yield* audited(REFUSED), [])
        assert.deepStrictEqual(refusing.agentRequests(), [], "a refused caller starts no turn")

        const failed = okJson<ModelTurnResult>(yield* request(testPath(REFUSED), jsonRequest(owner.cookie, "POST")))
        assert.strictEqual(failed.ok, false)
        assert.strictEqual(failed.model, "fake/fake-coder", "Bosun's default pick: no model is configured")
        // The provider's own words, with the status and the run's error code.
        assert.strictEqual(failed.message, `APIError (HTTP 401): ${providerError} (model_api_error)`)
        assert.isAbove(failed.duration_ms, 0)
        assert.isAtLeast(refusing.agentRequests().length, 1)
        assert.deepStrictEqual(yield* get<ModelTurnResult | null>(member.cookie, testPath(REFUSED)), failed)

        const red = yield* checklistOf(REFUSED, member.cookie)
        assert.deepStrictEqual(red.steps[0], {
          id: "github_app",
          done: false,
          detail: "Create a GitHub App and give Bosun its credentials (PUT /api/v1/organizations/{id}/github-app)"
        })
        assert.deepStrictEqual(red.steps[1], {
          id: "app_installed",
          done: false,
          detail: "Install the GitHub App on at least one repository"
        })
        assert.deepStrictEqual(red.steps[2], { id: "agent_credentials", done: true, detail: "Credentials for fake" })
        assert.deepStrictEqual(red.steps[3], {
          id: "model_chosen",
          done: true,
          detail: "fake/fake-coder (Bosun's default pick from the catalog)"
        })
        assert.deepStrictEqual(red.steps[4], {
          id: "test_turn",
          done: false,
          detail: `The last test failed: ${failed.message}`
        })
        assert.strictEqual(red.steps.length, 5)
        assert.strictEqual(red.complete, false)
        assert.deepStrictEqual(yield* audited(REFUSED), [
          { target: `organization:${REFUSED}`, details: { model: "fake/fake-coder", ok: false } }
        ])
        const logged = (yield* logsNamed("model_turn_failed")).filter((record) => record.organization_id === REFUSED)
        assert.deepStrictEqual(
          logged.map((record) => [record.level, record.model, record.message]),
          [["warn", "fake/fake-coder", failed.message]]
        )
      }),
    { timeout: 240_000 }
  )
})

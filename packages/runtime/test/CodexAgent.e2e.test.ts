/**
 * The AGENT_ONE adapter end to end (a full agent turn offline): the real runtime process runs the
 * real Codex CLI against the fixture repository, with a fake model speaking the Responses API that
 * scripts the turn in Codex's own shell tool (`exec_command` `{cmd}`; an `apply_patch` heredoc
 * through it is Codex's file edit). Checked: the run's diff, outputs, usage and events; that the
 * key, the tool results, the instructions, the skill and the MCP server reached the model (and no
 * AGENTS.md of the host, whose checkout holds the data directory); that the key stays out of every
 * file of the attempt; and that model failures and unusable credentials fail the run.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { RunEvent, RunState } from "@bosun/domain"
import {
  type FakeModelRequest,
  type FakeModelServerHandle,
  type FakeModelTurn,
  offeredTools,
  startFakeModelServer,
  systemPrompt,
  toolResults
} from "@bosun/testing/FakeModelServer"
import {
  awaitEnd,
  call,
  makeFixtures,
  type RuntimeProcess,
  readTail,
  runRequest,
  startRuntime
} from "@bosun/testing/RuntimeProcess"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

const fixtures = makeFixtures()
// The data directory inside a git checkout of the host with its own AGENTS.md and project
// config, as with the default `./.bosun-runtime`: neither may reach the agent.
const host = path.join(fixtures.root, "host")
fs.mkdirSync(path.join(host, ".codex"), { recursive: true })
execFileSync("git", ["init", "-q", host])
fs.writeFileSync(path.join(host, "AGENTS.md"), "Host instructions marker\n")
fs.writeFileSync(path.join(host, ".codex", "config.toml"), 'developer_instructions = "Host config marker"\n')
const dataDir = path.join(host, "data")
const API_KEY = "sk-fake-0123456789abcdef0123456789abcdef"
const MCP_TOKEN = "mcp-token-5f0e3c"

const decodeState = Schema.decodeUnknownSync(RunState)
const isEvent = Schema.is(RunEvent)

let runtime: RuntimeProcess
let fake: FakeModelServerHandle | undefined
let attempt = 0

beforeAll(async () => {
  runtime = await startRuntime({ BOSUN_RUNTIME_DATA_DIR: dataDir, BOSUN_RUNTIME_CANCEL_GRACE: "2 seconds" })
})

afterAll(async () => {
  await runtime?.stop()
})

afterEach(async () => {
  await fake?.close()
  fake = undefined
})

interface Attempt {
  readonly ids: { readonly run_id: string; readonly attempt_id: string }
  /** The attempt's workspace directory, as the runtime lays it out. */
  readonly workspace: string
}

const nextAttempt = (): Attempt => {
  attempt++
  const ids = { run_id: `cx-${attempt}`, attempt_id: `cx-${attempt}:1` }
  return { ids, workspace: path.join(dataDir, "workspaces", ids.attempt_id) }
}

/** An AGENT_ONE request whose model is the fake, reached through a provider defined in the credentials. */
const codexRequest = (ids: Attempt["ids"], url: string, overrides: Record<string, unknown> = {}) =>
  runRequest(fixtures, {
    ...ids,
    agent: { kind: "AGENT_ONE" },
    model: "fake/fake-coder",
    prompt: "Add a notes file, greet in the README, and write a report.",
    provider_credentials: { fake: { key: API_KEY, base_url: url } },
    ...overrides
  })

/** Starts a fake model with the turns and an AGENT_ONE run against it, and waits for the run to end. */
const start = async (
  turns: ReadonlyArray<FakeModelTurn>,
  overrides: (origin: string) => Record<string, unknown> = () => ({})
) => {
  const next = nextAttempt()
  const model = await startFakeModelServer({
    turns,
    mcpTools: [{ name: "search", description: "Searches the team docs" }]
  })
  fake = model
  const posted = Date.now()
  const response = await call(
    runtime.base,
    "POST",
    "/v1/runs",
    codexRequest(next.ids, model.url, overrides(model.origin))
  )
  expect(response.status, response.text).toBe(201)
  const final = decodeState(await awaitEnd(runtime.base, next.ids.attempt_id, 50_000))
  const events = (await readTail(`${runtime.base}/v1/runs/${next.ids.attempt_id}/events?after=0`)).lines.filter(isEvent)
  return { ...next, fake: model, final, events, posted }
}

/** Every file under a directory, recursively. */
const filesUnder = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? filesUnder(full) : entry.isFile() ? [full] : []
  })

const PATCH = [
  "apply_patch <<'EOF'",
  "*** Begin Patch",
  "*** Update File: app/README.md",
  "@@",
  "-hello",
  "+hello, world",
  "*** Add File: app/NOTES.md",
  "+written by the agent",
  "*** End Patch",
  "EOF"
].join("\n")

describe("the AGENT_ONE (Codex) agent", () => {
  it("runs a full turn offline: patches and creates files, runs commands, and reports events, usage, diff and outputs", async () => {
    const turns: ReadonlyArray<FakeModelTurn> = [
      {
        type: "tools",
        text: "Looking at the README first.",
        calls: [{ name: "exec_command", arguments: { cmd: "cat app/README.md" } }],
        usage: { input: 1200, output: 40 }
      },
      {
        type: "tools",
        calls: [
          { name: "exec_command", arguments: { cmd: PATCH } },
          {
            name: "exec_command",
            arguments: { cmd: `printf '{"findings": 1}\\n' > "$BOSUN_OUTPUT_DIR/report.json" && env | sort` }
          }
        ],
        usage: { input: 1500, output: 60 }
      },
      {
        type: "tools",
        calls: [{ name: "exec_command", arguments: { cmd: "git -C app status --short" } }],
        usage: { input: 1700, output: 30 }
      },
      {
        type: "text",
        text: "Done: NOTES.md added, README greets the world, report written.",
        usage: { input: 1800, output: 20 }
      }
    ]
    const run = await start(turns, (origin) => ({
      reasoning_effort: "high",
      instructions: "Bosun instruction marker: keep every change small.",
      skills: [
        { name: "release-notes", content: "# Writes release notes\n\nCollect the merged changes and summarise them." }
      ],
      mcp_servers: [{ name: "docs", url: `${origin}/mcp`, headers: { authorization: `Bearer ${MCP_TOKEN}` } }]
    }))
    const { final, events } = run

    expect(final.status, JSON.stringify(final.error)).toBe("SUCCEEDED")
    expect(final).toMatchObject({ agent: "AGENT_ONE", exit_code: 0, error: null, phase: "DONE" })

    // Usage: what the fake reported, summed over the four steps; Codex reports no cost.
    expect(final.usage.input_tokens).toBe(1200 + 1500 + 1700 + 1800)
    expect(final.usage.output_tokens).toBe(40 + 60 + 30 + 20)
    expect(run.fake.reportedUsage()).toEqual({ input: 6200, output: 150 })
    expect(final.usage.cost_usd).toBeNull()

    // The changes and the output written outside the workspace.
    expect(final.files.map((file) => file.path)).toEqual(["changes.diff", "outputs/report.json"])
    const diff = await call(runtime.base, "GET", `/v1/runs/${run.ids.attempt_id}/files/changes.diff`)
    expect(diff.text).toContain("--- a/app/README.md\n+++ b/app/README.md")
    expect(diff.text).toContain("-hello\n+hello, world")
    expect(diff.text).toContain("+++ b/app/NOTES.md")
    expect(diff.text).toContain("+written by the agent")
    const report = await call(runtime.base, "GET", `/v1/runs/${run.ids.attempt_id}/files/outputs/report.json`)
    expect(report.json).toEqual({ findings: 1 })

    // Events: no gap, the phases around Codex's own events, in the order of its steps.
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1))
    expect(events.map((event) => event.type).filter((type) => type !== "agent.event")).toEqual([
      "run.phase",
      "run.phase",
      "run.phase",
      "run.finished"
    ])
    const firstAgent = events.findIndex((event) => event.type === "agent.event")
    expect(events[firstAgent - 1]?.data).toEqual({ phase: "AGENT" })
    const agentEvents = events
      .filter((event) => event.type === "agent.event")
      .map((event) => event.data as { type: string; item?: Record<string, unknown>; usage?: unknown })
    // Items of type `error` are Codex's warnings (here: no metadata for the fake's model).
    const steps = agentEvents
      .filter((event) => event.item?.type !== "error")
      .map((event) => (event.item === undefined ? event.type : `${event.type} ${String(event.item.type)}`))
    expect(steps[0]).toBe("thread.started")
    expect(steps[1]).toBe("turn.started")
    expect(steps.at(-1)).toBe("turn.completed")
    const items = steps.slice(2, -1)
    for (const step of items) expect(step).toMatch(/^item\.(started|completed) /)
    // The two calls of the second step run in parallel: their items may complete in either order.
    const completedTypes = items.filter((step) => step.startsWith("item.completed")).map((step) => step.slice(15))
    expect([completedTypes.slice(0, 2), completedTypes.slice(4)]).toEqual([
      ["agent_message", "command_execution"],
      ["command_execution", "agent_message"]
    ])
    expect(completedTypes.slice(2, 4).sort()).toEqual(["command_execution", "file_change"])
    const completedItems = agentEvents
      .filter((event) => event.type === "item.completed")
      .map((event) => event.item as Record<string, unknown>)
    for (const item of completedItems.filter((entry) => entry.type === "command_execution")) {
      expect(item, JSON.stringify(item)).toMatchObject({ status: "completed", exit_code: 0 })
    }
    const patch = completedItems.find((item) => item.type === "file_change") ?? {}
    expect(patch).toMatchObject({ status: "completed" })
    const changes = (patch.changes ?? []) as ReadonlyArray<{ path: string; kind: string }>
    expect(changes.map((change) => `${change.kind} ${path.basename(change.path)}`).sort()).toEqual([
      "add NOTES.md",
      "update README.md"
    ])
    const lastCommand = completedItems.filter((item) => item.type === "command_execution").at(-1)
    expect(lastCommand?.aggregated_output).toContain("M README.md")
    expect(completedItems.at(-1)).toMatchObject({
      type: "agent_message",
      text: "Done: NOTES.md added, README greets the world, report written."
    })
    expect(agentEvents.at(-1)?.usage).toMatchObject({ input_tokens: 6200, output_tokens: 150 })

    // On the wire: four Responses requests, each with the key and the reasoning effort; every
    // tool result came back in the next one.
    const requests = run.fake.agentRequests()
    expect(requests).toHaveLength(4)
    const [first, second, third, fourth] = requests as [
      FakeModelRequest,
      FakeModelRequest,
      FakeModelRequest,
      FakeModelRequest
    ]
    for (const request of requests) {
      expect(request.path).toBe("/v1/responses")
      expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`)
      expect(request.body).toMatchObject({ model: "fake-coder", stream: true, reasoning: { effort: "high" } })
    }
    expect(run.fake.requests.filter((request) => request.kind === "other")).toEqual([])
    expect(toolResults(first)).toEqual([])
    expect(toolResults(second).map((result) => result.id)).toEqual(["call_1"])
    expect(toolResults(second)[0]?.content).toContain("hello")
    const patched = toolResults(third)
    expect(patched.map((result) => result.id)).toEqual(["call_1", "call_2", "call_3"])
    expect(patched.find((result) => result.id === "call_2")?.content).toContain("Success. Updated the following files:")
    // The key is kept out of the environment of the commands the model runs.
    const environment = patched.find((result) => result.id === "call_3")?.content
    expect(environment).toContain("BOSUN_OUTPUT_DIR=")
    expect(environment).not.toContain(API_KEY)
    expect(environment).not.toContain(MCP_TOKEN)
    expect(toolResults(fourth).at(-1)?.content).toContain("M README.md")

    // The instructions, the skill and the MCP server's tools reached the model; nothing of the host's.
    const sent = JSON.stringify(first.body)
    expect(sent).toContain("Bosun instruction marker: keep every change small.")
    expect(sent).not.toContain("Host instructions marker")
    expect(sent).not.toContain("Host config marker")
    expect(systemPrompt(first)).toContain("release-notes")
    const offered = offeredTools(first).map((tool) => tool.name)
    expect(offered).toContain("exec_command")
    expect(offered).not.toContain("web_search")
    // MCP tools come as a namespace per server.
    expect(offered).toContain("mcp__docs.search")
    const mcpCalls = run.fake.requests.filter((request) => request.kind === "mcp")
    expect(mcpCalls.length).toBeGreaterThan(0)
    for (const request of mcpCalls) expect(request.headers.authorization).toBe(`Bearer ${MCP_TOKEN}`)

    // Nothing of the key or the MCP token is in any file of the attempt: the runtime's run files
    // (log, state, request, files) and the agent's home (Codex's config, sessions, logs).
    const attemptFiles = [
      ...filesUnder(path.join(dataDir, "runs", run.ids.attempt_id)),
      ...filesUnder(path.join(run.workspace, "home"))
    ]
    expect(attemptFiles.some((file) => file.endsWith(path.join(".codex", "config.toml")))).toBe(true)
    for (const file of attemptFiles) {
      const text = fs.readFileSync(file, "latin1")
      expect(text.includes(API_KEY.slice(3, 20)), file).toBe(false)
      expect(text.includes(MCP_TOKEN), file).toBe(false)
    }
  })

  it("fails at once with the model's error on a 400, and after Codex's retries on a 401 and on a 500", async () => {
    const rejected = await start([{ type: "error", status: 400, message: "Unsupported parameter: reasoning.effort" }])
    expect(rejected.final).toMatchObject({
      status: "FAILED",
      retryable: false,
      exit_code: 1,
      error: {
        code: "model_api_error",
        message: "Unsupported parameter: reasoning.effort (invalid_request_error)"
      }
    })
    expect(rejected.fake.agentRequests()).toHaveLength(1)
    const agentEvents = rejected.events
      .filter((event) => event.type === "agent.event")
      .map((event) => (event.data as { type: string }).type)
    expect(agentEvents.slice(-2)).toEqual(["error", "turn.failed"])
    expect(Date.now() - rejected.posted).toBeLessThan(10_000)
    await rejected.fake.close()

    // Codex retries even a 401 (five times, backing off), then fails the turn.
    const unauthorized = await start([
      { type: "error", status: 401, message: "Incorrect API key provided", times: Number.POSITIVE_INFINITY }
    ])
    expect(unauthorized.final).toMatchObject({ status: "FAILED", exit_code: 1, error: { code: "model_auth_error" } })
    expect(unauthorized.final.error?.message).toContain("401 Unauthorized")
    expect(unauthorized.final.error?.message).toContain("Incorrect API key provided")
    expect(unauthorized.fake.agentRequests()).toHaveLength(6)
    await unauthorized.fake.close()

    // A 5xx: by default Codex makes 30 requests over about 25 s; the provider's retry settings
    // pass through from the credentials (here: 2 × 2 requests).
    const overloaded = await start(
      [{ type: "error", status: 500, message: "upstream exploded", times: Number.POSITIVE_INFINITY }],
      (origin) => ({
        provider_credentials: {
          fake: { key: API_KEY, base_url: `${origin}/v1`, request_max_retries: 1, stream_max_retries: 1 }
        }
      })
    )
    expect(overloaded.final).toMatchObject({ status: "FAILED", exit_code: 1, error: { code: "model_api_error" } })
    expect(overloaded.final.error?.message).toContain("(after 1 retry)")
    expect(overloaded.fake.agentRequests()).toHaveLength(4)
  })

  it("refuses provider credentials it cannot use without running Codex, and without echoing them", async () => {
    const misplaced = await start([], () => ({
      provider_credentials: { fake: { apiKey: API_KEY, base_url: "http://127.0.0.1:9/v1" } }
    }))
    expect(misplaced.final).toMatchObject({
      status: "FAILED",
      exit_code: null,
      error: { code: "invalid_provider_credentials" }
    })
    expect(misplaced.final.error?.message).toContain(`["fake"]["apiKey"]`)
    expect(misplaced.events.filter((event) => event.type === "agent.event")).toEqual([])
    for (const file of filesUnder(path.join(dataDir, "runs", misplaced.ids.attempt_id))) {
      expect(fs.readFileSync(file, "latin1").includes(API_KEY.slice(3, 20)), file).toBe(false)
    }
    await misplaced.fake.close()

    // A key is sent only over https, or plain http on loopback, with well-formed headers.
    for (const [entry, where] of [
      [{ base_url: "http://10.0.0.5/v1" }, `["fake"]["base_url"]`],
      [{ base_url: "http://127.0.0.1:9/v1", headers: { "X-Title": "a\r\nX-Injected: 1" } }, `["fake"]["headers"]`]
    ] as const) {
      const unsafe = await start([], () => ({ provider_credentials: { fake: { key: API_KEY, ...entry } } }))
      expect(unsafe.final).toMatchObject({ status: "FAILED", error: { code: "invalid_provider_credentials" } })
      expect(unsafe.final.error?.message).toContain(where)
      expect(unsafe.events.filter((event) => event.type === "agent.event")).toEqual([])
      await unsafe.fake.close()
    }

    const redefined = await start([], () => ({
      model: "openai/gpt-5-codex",
      provider_credentials: { openai: { key: API_KEY, headers: { "x-team": "a" } } }
    }))
    expect(redefined.final).toMatchObject({ status: "FAILED", error: { code: "invalid_provider_credentials" } })
    expect(redefined.final.error?.message).toContain("built-in provider")
  })
})

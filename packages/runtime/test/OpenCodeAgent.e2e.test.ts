/**
 * The OPENCODE adapter end to end (a full agent turn offline): the real runtime process runs the
 * real OpenCode CLI against the fixture repository, with a fake OpenAI-compatible model that
 * scripts the turn in OpenCode's own tool names (read, write, edit, bash). Checked: the run's diff,
 * outputs, usage and events; that the key, the tool results, the instructions, the skill and the
 * MCP server reached the model (and no AGENTS.md of the host); that the key stays out of the
 * runtime's run files; and that model failures (retried or not), a tool OpenCode refuses and
 * unreadable credentials fail the run.
 */
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
const dataDir = path.join(fixtures.root, "data")
// Above the runtime's data directory, as a host's own files would be: never the agent's.
fs.writeFileSync(path.join(fixtures.root, "AGENTS.md"), "Host instructions marker\n")
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

/** A fresh pair of ids and the directories the runtime gives that attempt. */
const nextAttempt = (): Attempt => {
  attempt++
  const ids = { run_id: `oc-${attempt}`, attempt_id: `oc-${attempt}:1` }
  const workspace = path.join(dataDir, "workspaces", ids.attempt_id)
  return { ids, repo: path.join(workspace, "repos", "app"), outputs: path.join(workspace, "outputs") }
}

/** An OPENCODE request whose model is the fake, reached through a provider defined in the credentials. */
const openCodeRequest = (
  ids: { run_id: string; attempt_id: string },
  url: string,
  overrides: Record<string, unknown> = {}
) =>
  runRequest(fixtures, {
    ...ids,
    agent: { kind: "OPENCODE" },
    model: "fake/fake-coder",
    prompt: "Add a notes file, greet in the README, and write a report.",
    provider_credentials: {
      fake: {
        type: "api",
        key: API_KEY,
        npm: "@ai-sdk/openai-compatible",
        base_url: url,
        // Per million tokens: the cost OpenCode reports is priced from these.
        models: { "fake-coder": { cost: { input: 3, output: 15 } } }
      }
    },
    ...overrides
  })

interface Attempt {
  readonly ids: { readonly run_id: string; readonly attempt_id: string }
  /** The checkout of the fixture repository, and the output directory, as the runtime lays them out. */
  readonly repo: string
  readonly outputs: string
}

/** Starts a fake model with the turns and an OPENCODE run against it, and waits for the run to end. */
const start = async (
  turns: (attempt: Attempt) => ReadonlyArray<FakeModelTurn>,
  overrides: (origin: string) => Record<string, unknown> = () => ({})
) => {
  const next = nextAttempt()
  const model = await startFakeModelServer({
    turns: turns(next),
    mcpTools: [{ name: "search", description: "Searches the team docs" }]
  })
  fake = model
  const response = await call(
    runtime.base,
    "POST",
    "/v1/runs",
    openCodeRequest(next.ids, model.url, overrides(model.origin))
  )
  expect(response.status, response.text).toBe(201)
  const final = decodeState(await awaitEnd(runtime.base, next.ids.attempt_id, 50_000))
  const events = (await readTail(`${runtime.base}/v1/runs/${next.ids.attempt_id}/events?after=0`)).lines.filter(isEvent)
  return { ...next, fake: model, final, events }
}

/** Every file under a directory, recursively. */
const filesUnder = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? filesUnder(full) : entry.isFile() ? [full] : []
  })

describe("the OPENCODE agent", () => {
  it("runs a full turn offline: reads, writes, edits and runs bash in the checkout, and reports events, usage, diff and outputs", async () => {
    const turns = (next: Attempt): ReadonlyArray<FakeModelTurn> => [
      {
        type: "tools",
        text: "Looking at the README first.",
        calls: [
          { name: "read", arguments: { filePath: path.join(next.repo, "README.md") } },
          {
            name: "write",
            arguments: { filePath: path.join(next.repo, "NOTES.md"), content: "written by the agent\n" }
          }
        ],
        usage: { input: 1200, output: 40 }
      },
      {
        type: "tools",
        calls: [
          {
            name: "edit",
            arguments: { filePath: path.join(next.repo, "README.md"), oldString: "hello", newString: "hello, world" }
          },
          {
            name: "bash",
            arguments: {
              command: `printf '{"findings": 1}\\n' > "$BOSUN_OUTPUT_DIR/report.json" && git -C app status --short`,
              description: "Write the report"
            }
          },
          { name: "write", arguments: { filePath: path.join(next.outputs, "summary.md"), content: "# Summary\n" } }
        ],
        usage: { input: 1500, output: 60 }
      },
      {
        type: "text",
        text: "Done: NOTES.md added, README greets the world, report written.",
        usage: { input: 1800, output: 20 }
      }
    ]
    const run = await start(turns, (origin) => ({
      instructions: "Bosun instruction marker: keep every change small.",
      skills: [
        { name: "release-notes", content: "# Writes release notes\n\nCollect the merged changes and summarise them." }
      ],
      mcp_servers: [{ name: "docs", url: `${origin}/mcp`, headers: { authorization: `Bearer ${MCP_TOKEN}` } }]
    }))
    const { final, events } = run

    expect(final.status, JSON.stringify(final.error)).toBe("SUCCEEDED")
    expect(final).toMatchObject({ agent: "OPENCODE", exit_code: 0, error: null, phase: "DONE" })

    // Usage: what the fake reported, summed over the three steps; the cost priced by OpenCode.
    expect(final.usage.input_tokens).toBe(1200 + 1500 + 1800)
    expect(final.usage.output_tokens).toBe(40 + 60 + 20)
    expect(run.fake.reportedUsage()).toEqual({ input: 4500, output: 120 })
    expect(final.usage.cost_usd).toBeCloseTo((4500 * 3 + 120 * 15) / 1_000_000, 8)

    // The changes, the outputs (one by bash, one by the write tool outside the workspace).
    expect(final.files.map((file) => file.path)).toEqual(["changes.diff", "outputs/report.json", "outputs/summary.md"])
    const diff = await call(runtime.base, "GET", `/v1/runs/${run.ids.attempt_id}/files/changes.diff`)
    expect(diff.text).toContain("--- a/app/README.md\n+++ b/app/README.md")
    expect(diff.text).toContain("-hello\n+hello, world")
    expect(diff.text).toContain("+++ b/app/NOTES.md")
    expect(diff.text).toContain("+written by the agent")
    const report = await call(runtime.base, "GET", `/v1/runs/${run.ids.attempt_id}/files/outputs/report.json`)
    expect(report.json).toEqual({ findings: 1 })
    const summary = await call(runtime.base, "GET", `/v1/runs/${run.ids.attempt_id}/files/outputs/summary.md`)
    expect(summary.text).toBe("# Summary\n")

    // Events: no gap, the phases around OpenCode's own events, in the order of its steps.
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1))
    expect(events.map((event) => event.type).filter((type) => type !== "agent.event")).toEqual([
      "run.phase",
      "run.phase",
      "run.phase",
      "run.finished"
    ])
    const agentEvents = events
      .filter((event) => event.type === "agent.event")
      .map((event) => event.data as Record<string, unknown>)
    expect(agentEvents.map((event) => event.type)).toEqual([
      "step_start",
      "text",
      "tool_use",
      "tool_use",
      "step_finish",
      "step_start",
      "tool_use",
      "tool_use",
      "tool_use",
      "step_finish",
      "step_start",
      "text",
      "step_finish"
    ])
    const firstAgent = events.findIndex((event) => event.type === "agent.event")
    expect(events[firstAgent - 1]?.data).toEqual({ phase: "AGENT" })
    const tools = agentEvents
      .filter((event) => event.type === "tool_use")
      .map((event) => event.part as { tool: string; state: { status: string; input: unknown; output: string } })
    expect(tools.map((tool) => tool.tool).sort()).toEqual(["bash", "edit", "read", "write", "write"])
    for (const tool of tools) expect(tool.state.status, JSON.stringify(tool.state)).toBe("completed")
    expect(tools.find((tool) => tool.tool === "bash")?.state.output).toContain("M README.md")
    const finished = agentEvents
      .filter((event) => event.type === "step_finish")
      .map((event) => event.part as { reason: string })
    expect(finished.map((part) => part.reason)).toEqual(["tool-calls", "tool-calls", "stop"])
    expect(agentEvents[11]?.part).toMatchObject({
      text: "Done: NOTES.md added, README greets the world, report written."
    })

    // On the wire: three agent steps (no title call: the adapter names the session), each with
    // the key; every tool result came back in the next step.
    const steps = run.fake.agentRequests()
    expect(steps).toHaveLength(3)
    const [first, second, third] = steps as [FakeModelRequest, FakeModelRequest, FakeModelRequest]
    expect(run.fake.requests.filter((request) => request.kind === "auxiliary")).toEqual([])
    for (const step of steps) expect(step.headers.authorization).toBe(`Bearer ${API_KEY}`)
    expect(toolResults(first)).toEqual([])
    const firstResults = toolResults(second)
    expect(firstResults.map((result) => result.id)).toEqual(["call_1", "call_2"])
    expect(firstResults[0]?.content).toContain("hello")
    expect(firstResults[1]?.content).toContain("Wrote file successfully")
    const secondResults = toolResults(third)
    expect(secondResults.map((result) => result.id)).toEqual(["call_1", "call_2", "call_3", "call_4", "call_5"])
    expect(secondResults.find((result) => result.id === "call_4")?.content).toContain("M README.md")

    // The instructions, the skill and the MCP server's tools reached the model.
    expect(systemPrompt(first)).toContain("Bosun instruction marker: keep every change small.")
    expect(systemPrompt(first)).not.toContain("Host instructions marker")
    const offered = offeredTools(first)
    expect(offered.map((tool) => tool.name)).toEqual(expect.arrayContaining(["bash", "edit", "read", "write", "skill"]))
    expect(systemPrompt(first)).toContain("release-notes")
    expect(offered.map((tool) => tool.name)).toContain("docs_search")
    const mcpCalls = run.fake.requests.filter((request) => request.kind === "mcp")
    expect(mcpCalls.length).toBeGreaterThan(0)
    for (const request of mcpCalls) expect(request.headers.authorization).toBe(`Bearer ${MCP_TOKEN}`)

    // Nothing of the key is in the runtime's run files (log, state, request, files).
    const runFiles = filesUnder(path.join(dataDir, "runs", run.ids.attempt_id))
    expect(runFiles.length).toBeGreaterThan(3)
    for (const file of runFiles) {
      const text = fs.readFileSync(file, "latin1")
      expect(text.includes(API_KEY.slice(3, 20)), file).toBe(false)
      expect(text.includes(MCP_TOKEN), file).toBe(false)
    }
  })

  it("fails the run with the model's error when the model keeps answering 500, after OpenCode's retries", async () => {
    const started = Date.now()
    const run = await start(() => [
      { type: "error", status: 500, message: "upstream exploded", retryAfterMs: 20, times: Number.POSITIVE_INFINITY }
    ])
    expect(run.final).toMatchObject({
      status: "FAILED",
      retryable: false,
      exit_code: 1,
      error: { code: "model_api_error", message: "APIError (HTTP 500): upstream exploded" }
    })
    // OpenCode retries a 5xx (here after the 20 ms the fake asks for, not its 2-32 s backoff).
    expect(run.fake.agentRequests().length).toBeGreaterThan(1)
    expect(Date.now() - started).toBeLessThan(30_000)
    const agentEvents = run.events.filter((event) => event.type === "agent.event")
    expect(agentEvents.map((event) => (event.data as { type: string }).type)).toContain("error")
  })

  it("fails at once on a 4xx the model does not retry, and on a tool OpenCode refuses though it exits 0", async () => {
    const rejected = await start(() => [{ type: "error", status: 401, message: "invalid api key" }])
    expect(rejected.final).toMatchObject({
      status: "FAILED",
      exit_code: 1,
      error: { code: "model_api_error", message: "APIError (HTTP 401): invalid api key" }
    })
    expect(rejected.fake.agentRequests()).toHaveLength(1)
    await rejected.fake.close()

    // Reading outside the workspace asks for permission; a non-interactive run refuses and ends
    // the turn with exit code 0 and a step still waiting for its tool result.
    const refused = await start(() => [
      { type: "tools", calls: [{ name: "read", arguments: { filePath: "/etc/hostname" } }] },
      { type: "text", text: "never reached" }
    ])
    expect(refused.final).toMatchObject({ status: "FAILED", exit_code: 0, error: { code: "tool_refused" } })
    expect(refused.final.error?.message).toContain("read")
    expect(refused.fake.agentRequests()).toHaveLength(1)
  })

  it("refuses provider credentials it cannot read without running OpenCode, and without echoing them", async () => {
    const run = await start(
      () => [],
      () => ({ provider_credentials: { fake: { type: "api", apiKey: API_KEY, base_url: "http://127.0.0.1:9/v1" } } })
    )
    expect(run.final).toMatchObject({
      status: "FAILED",
      exit_code: null,
      error: { code: "invalid_provider_credentials" }
    })
    expect(run.final.error?.message).toContain(`["fake"]["apiKey"]`)
    expect(run.events.filter((event) => event.type === "agent.event")).toEqual([])
    for (const file of filesUnder(path.join(dataDir, "runs", run.ids.attempt_id))) {
      expect(fs.readFileSync(file, "latin1").includes(API_KEY.slice(3, 20)), file).toBe(false)
    }
    await run.fake.close()

    // A key is sent only over https, or plain http on loopback, with well-formed headers.
    for (const [entry, where] of [
      [{ base_url: "http://10.0.0.5/v1" }, `["fake"]["base_url"]`],
      [{ base_url: "http://127.0.0.1:9/v1", headers: { "X-Title": "a\r\nX-Injected: 1" } }, `["fake"]["headers"]`]
    ] as const) {
      const unsafe = await start(
        () => [],
        () => ({
          provider_credentials: { fake: { type: "api", key: API_KEY, npm: "@ai-sdk/openai-compatible", ...entry } }
        })
      )
      expect(unsafe.final).toMatchObject({ status: "FAILED", error: { code: "invalid_provider_credentials" } })
      expect(unsafe.final.error?.message).toContain(where)
      expect(unsafe.events.filter((event) => event.type === "agent.event")).toEqual([])
      await unsafe.fake.close()
    }
  })
})

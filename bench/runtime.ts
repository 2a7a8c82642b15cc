/**
 * `npm run bench:runtime`: the agent runtime as the control plane sees it, a real runtime process
 * (as `npm run runtime` runs it) with two custom agent profiles, beside a baseline taken in the
 * same run: the same agent program spawned directly with `child_process`, its stdout read raw.
 *
 * - **Start latency**: from `POST /v1/runs` to the first `agent.event` line on the tail (the
 *   checkout of a one-commit repository, the spawn, the event written to disk and streamed),
 *   against spawn → first stdout line of the bare program. BENCH_STARTS runs (default 20).
 * - **Stream rate**: events per second one run streams to a tail, its agent printing
 *   BENCH_EVENTS JSON lines (default 100,000) as fast as it can, against the same program's lines
 *   per second read straight from its stdout.
 *
 * Writes the figures to `.bench/runtime.json`.
 */
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { Effect } from "effect"
import { runContext, writeReport } from "./Report.ts"

const starts = Number(process.env.BENCH_STARTS ?? 20)
const eventCount = Number(process.env.BENCH_EVENTS ?? 100_000)
const root = fileURLToPath(new URL("..", import.meta.url))
const token = "bench-runtime-token-0123456789"
const headers = { authorization: `Bearer ${token}`, "x-bosun-protocol": "1.0", "content-type": "application/json" }

const work = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-bench-runtime-"))
// As root the runtime runs agents as users of their own: they pass through here (docs/agent-isolation.md).
fs.chmodSync(work, 0o711)
const repo = path.join(work, "repo")
fs.mkdirSync(repo)
const git = (...args: Array<string>) => execFileSync("git", args, { cwd: repo })
git("init", "-q", "-b", "main")
git("-c", "user.email=b@bosun.invalid", "-c", "user.name=bench", "commit", "-q", "--allow-empty", "-m", "init")

/** The agents: a Node program printing `count` JSON lines as fast as it can, then exiting. */
const agentScript = path.join(work, "blast.mjs")
fs.writeFileSync(
  agentScript,
  `const count = Number(process.argv[2])
const chunk = []
for (let i = 1; i <= count; i++) {
  chunk.push(JSON.stringify({ type: "tick", n: i }))
  if (chunk.length === 1000 || i === count) { process.stdout.write(chunk.join("\\n") + "\\n"); chunk.length = 0 }
}
`
)
const profiles = {
  quick: { command: [process.execPath, agentScript, "1"] },
  blast: { command: [process.execPath, agentScript, String(eventCount)] }
}

const quantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
}
const round = (value: number) => Math.round(value * 100) / 100

/** Baseline: spawn → first stdout line, and lines/s of the whole output, with no runtime between. */
const bare = (args: ReadonlyArray<string>) =>
  new Promise<{ firstLineMs: number; totalMs: number; lines: number }>((resolve) => {
    const started = performance.now()
    let first = 0
    let lines = 0
    const child = spawn(process.execPath, [agentScript, ...args], { stdio: ["ignore", "pipe", "ignore"] })
    child.stdout.on("data", (chunk: Buffer) => {
      if (first === 0) first = performance.now() - started
      for (const byte of chunk) if (byte === 10) lines++
    })
    child.on("close", () => resolve({ firstLineMs: first, totalMs: performance.now() - started, lines }))
  })

let counter = 0
const request = (profile: string) => {
  counter++
  return {
    run_id: `bench-${counter}`,
    attempt_id: `bench-${counter}:1`,
    agent: { kind: "CUSTOM", profile },
    model: "bench/none",
    prompt: "go",
    repositories: [{ id: "repo", url: `file://${repo}`, ref: "main", path: "repo", credential: null }],
    mcp_servers: [],
    skills: [],
    egress_tier: "STRICT",
    time_limit_seconds: 600,
    credential_mode: "INLINE",
    provider_credentials: {}
  }
}

/** Posts a run, tails it from the start, and times the first agent event and the whole stream. */
const runOnce = async (base: string, profile: string) => {
  const body = request(profile)
  const started = performance.now()
  const posted = await fetch(`${base}/v1/runs`, { method: "POST", headers, body: JSON.stringify(body) })
  if (posted.status !== 201) throw new Error(`POST /v1/runs answered ${posted.status}: ${await posted.text()}`)
  const response = await fetch(`${base}/v1/runs/${body.attempt_id}/events?after=0`, { headers })
  if (response.body === null) throw new Error("the tail has no body")
  let firstAgentMs = 0
  let firstAgentAt = 0
  let agentEvents = 0
  let buffered = ""
  const decoder = new TextDecoder()
  const reader = response.body.getReader()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buffered += decoder.decode(value, { stream: true })
    let newline = buffered.indexOf("\n")
    while (newline !== -1) {
      const line = buffered.slice(0, newline)
      buffered = buffered.slice(newline + 1)
      newline = buffered.indexOf("\n")
      if (line.includes('"type":"agent.event"')) {
        agentEvents++
        if (firstAgentMs === 0) {
          firstAgentAt = performance.now()
          firstAgentMs = firstAgentAt - started
        }
      }
    }
  }
  return { firstAgentMs, agentEvents, streamMs: performance.now() - firstAgentAt }
}

const main = async () => {
  const port = await Effect.runPromise(freePort)
  const child = spawn(process.execPath, [path.join(root, "packages/runtime/src/main.ts")], {
    env: {
      ...process.env,
      BOSUN_RUNTIME_PORT: String(port),
      BOSUN_RUNTIME_TOKEN: token,
      BOSUN_RUNTIME_DATA_DIR: path.join(work, "data"),
      BOSUN_RUNTIME_MAX_RUNS: "4",
      BOSUN_RUNTIME_AGENTS: JSON.stringify(profiles)
    },
    stdio: ["ignore", "ignore", "inherit"]
  })
  const base = `http://127.0.0.1:${port}`
  for (let i = 0; i < 600; i++) {
    const up = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false
    )
    if (up) break
    await new Promise((r) => setTimeout(r, 50))
  }
  try {
    // Warm-up: one run of each, not counted.
    await runOnce(base, "quick")
    await bare(["1"])

    const runtimeStarts: Array<number> = []
    const bareStarts: Array<number> = []
    for (let i = 0; i < starts; i++) {
      runtimeStarts.push((await runOnce(base, "quick")).firstAgentMs)
      bareStarts.push((await bare(["1"])).firstLineMs)
    }
    const stream = await runOnce(base, "blast")
    if (stream.agentEvents !== eventCount) throw new Error(`expected ${eventCount} events, got ${stream.agentEvents}`)
    const bareStream = await bare([String(eventCount)])

    const figures = {
      start: {
        runs: starts,
        runtime_first_event_ms: { p50: round(quantile(runtimeStarts, 0.5)), p99: round(quantile(runtimeStarts, 0.99)) },
        bare_spawn_first_line_ms: { p50: round(quantile(bareStarts, 0.5)), p99: round(quantile(bareStarts, 0.99)) }
      },
      stream: {
        events: eventCount,
        runtime_events_per_s: Math.round(stream.agentEvents / (stream.streamMs / 1000)),
        bare_lines_per_s: Math.round(bareStream.lines / (bareStream.totalMs / 1000))
      }
    }
    const context = runContext("runtime")
    console.log(`bench:runtime — ${context.machine.cpus}× ${context.machine.cpu}, Node ${context.node}`)
    console.log(
      `start → first agent event: runtime p50 ${figures.start.runtime_first_event_ms.p50} ms, p99 ${figures.start.runtime_first_event_ms.p99} ms (${starts} runs, each a git checkout + spawn)`
    )
    console.log(
      `bare spawn → first line:   p50 ${figures.start.bare_spawn_first_line_ms.p50} ms, p99 ${figures.start.bare_spawn_first_line_ms.p99} ms`
    )
    console.log(
      `stream: runtime ${figures.stream.runtime_events_per_s} events/s to a tail (each written to disk first), bare stdout ${figures.stream.bare_lines_per_s} lines/s (${eventCount} events)`
    )
    await writeReport("runtime", { ...context, figures })
    console.log("figures written to .bench/runtime.json")
  } finally {
    child.kill("SIGTERM")
    fs.rmSync(work, { recursive: true, force: true })
  }
}

await main()

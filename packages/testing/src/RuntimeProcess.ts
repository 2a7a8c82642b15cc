/**
 * The real runtime process (`node packages/runtime/src/main.ts`, as `npm run runtime` runs it) on
 * a free loopback port with a data directory of its own, the agent scripts tests register as
 * custom profiles, a local git repository to check out, and a protocol client for the tests.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const mainScript = fileURLToPath(new URL("../../runtime/src/main.ts", import.meta.url))

export const TOKEN = "runtime-test-token-0123456789"

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/**
 * A directory with a git repository `repo` (branch main, one commit) and room for agent scripts.
 * A runtime started as root runs its agents as users of their own (docs/agent-isolation.md): they
 * must reach the scripts and the runtime's workspaces under this directory, and the scripts may
 * leave files here for the test (pid files, markers), so it is like /tmp: 1777.
 */
export const makeFixtures = () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-runtime-test-"))
  fs.chmodSync(root, 0o1777)
  const repo = path.join(root, "repo")
  fs.mkdirSync(repo)
  const git = (...args: Array<string>) =>
    execFileSync("git", args, { cwd: repo, env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null" } })
  git("init", "-q", "-b", "main")
  git("config", "user.email", "fixture@bosun.invalid")
  git("config", "user.name", "fixture")
  fs.writeFileSync(path.join(repo, "README.md"), "hello\n")
  git("add", ".")
  git("commit", "-qm", "init")
  const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: repo }).toString().trim()
  /** Writes an executable shell script and returns its path. */
  const script = (name: string, body: string) => {
    const file = path.join(root, name)
    fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 })
    return file
  }
  return { root, repo, repoUrl: `file://${repo}`, head, script }
}

export interface RuntimeProcess {
  readonly base: string
  readonly child: ChildProcess
  readonly output: () => string
  readonly stop: (signal?: NodeJS.Signals) => Promise<void>
}

/** Starts the runtime on a free port, or on `env.BOSUN_RUNTIME_PORT` when given. */
export const startRuntime = async (env: Record<string, string>): Promise<RuntimeProcess> => {
  const port = env.BOSUN_RUNTIME_PORT === undefined ? await freePort() : Number(env.BOSUN_RUNTIME_PORT)
  const inherited: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith("BOSUN_")) inherited[key] = value
  const child = spawn(process.execPath, [mainScript], {
    env: { ...inherited, BOSUN_RUNTIME_PORT: String(port), BOSUN_RUNTIME_TOKEN: TOKEN, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const base = `http://127.0.0.1:${port}`
  const until = Date.now() + 30_000
  for (;;) {
    const ok = await fetch(`${base}/healthz`).then(
      (response) => response.ok,
      () => false
    )
    if (ok) break
    if (child.exitCode !== null || Date.now() > until) throw new Error(`the runtime did not start: ${output}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    base,
    child,
    output: () => output,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited
    }
  }
}

export const protocolHeaders = {
  authorization: `Bearer ${TOKEN}`,
  "x-bosun-protocol": "1.0",
  "content-type": "application/json"
}

/** A JSON answer: an error envelope, or anything else the test decodes. */
type ErrorOr = { readonly error: { readonly code: string; readonly message: string } } & Record<string, unknown>

export const call = async (base: string, method: string, pathname: string, body?: unknown) => {
  const response = await fetch(`${base}${pathname}`, {
    method,
    headers: protocolHeaders,
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  const isJson = (response.headers.get("content-type") ?? "").includes("json")
  // Tests decode run states with the domain schemas and read error envelopes directly.
  const json = (isJson && text !== "" ? JSON.parse(text) : undefined) as ErrorOr
  return { status: response.status, headers: response.headers, text, json }
}

/** Reads an NDJSON tail until it ends or `stopAfter` lines arrived, then disconnects. */
export const readTail = async (url: string, stopAfter = Number.POSITIVE_INFINITY) => {
  const controller = new AbortController()
  const response = await fetch(url, { headers: protocolHeaders, signal: controller.signal })
  const lines: Array<Record<string, unknown>> = []
  if (response.body === null) return { status: response.status, lines }
  const decoder = new TextDecoder()
  let buffered = ""
  const reader = response.body.getReader()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buffered += decoder.decode(value, { stream: true })
    let newline = buffered.indexOf("\n")
    while (newline !== -1) {
      lines.push(JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>)
      buffered = buffered.slice(newline + 1)
      newline = buffered.indexOf("\n")
      if (lines.length >= stopAfter) {
        controller.abort()
        return { status: response.status, lines, contentType: response.headers.get("content-type") }
      }
    }
  }
  return { status: response.status, lines, contentType: response.headers.get("content-type") }
}

/** Polls `GET .../result` until the run has ended. */
export const awaitEnd = async (base: string, attemptId: string, timeoutMs = 30_000) => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const result = await call(base, "GET", `/v1/runs/${attemptId}/result`)
    if (result.json?.status !== "RUNNING") return result.json as Record<string, unknown>
    if (Date.now() > until) throw new Error(`run ${attemptId} did not end within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export const runRequest = (
  fixtures: { readonly repoUrl: string },
  overrides: Record<string, unknown> = {}
): Record<string, unknown> => ({
  run_id: "run-1",
  attempt_id: "run-1:1",
  agent: { kind: "CUSTOM", profile: "writer" },
  model: "fake/model",
  prompt: "make the change",
  repositories: [{ id: "repo-1", url: fixtures.repoUrl, ref: "main", path: "app", credential: null }],
  mcp_servers: [],
  skills: [],
  egress_tier: "STRICT",
  time_limit_seconds: 60,
  credential_mode: "INLINE",
  provider_credentials: {},
  ...overrides
})

export const isAlive = (pid: number) => {
  const state = fs.existsSync(`/proc/${pid}/stat`) ? fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(" ")[2] : "X"
  return state !== "X" && state !== "Z"
}

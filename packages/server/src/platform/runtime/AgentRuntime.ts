/**
 * The runtime EXTERNAL_RUNTIME attempts run on (`npm start` launches one locally on 8787 as the
 * embedded default; docs/interface.md: What the service does 5 — agent code never runs inside the
 * API process).
 *
 * - `BOSUN_RUNTIME_URL` + `BOSUN_RUNTIME_TOKEN` set: the operator's runtime; nothing is launched.
 * - Otherwise the server launches the embedded runtime: the same `packages/runtime` server as a
 *   child process on `127.0.0.1:BOSUN_EMBEDDED_RUNTIME_PORT` (8787; 0 = any free port), data in
 *   `BOSUN_DATA_DIR/runtime`, with a token only the two processes know, derived from the master
 *   key (HKDF), so a server restarted after a crash or a kill -9 talks to its runtime under the
 *   same token and resumes the runs it left. The child gets none of the server's secrets: its environment is the basic process
 *   variables plus the operator's `BOSUN_RUNTIME_*` settings (agent profiles, run limits). It runs
 *   supervised — it stops when its stdin, held by the server, closes — so even a server killed
 *   with SIGKILL leaves no runtime behind; a runtime that dies on its own is started again (its
 *   interrupted runs are reported failed-retryable by the runtime itself) after a growing pause.
 *   The server stops it with SIGTERM (SIGKILL after the grace period) when it shuts down.
 * Its log lines (JSON, like the server's) are passed through to the server's stdout.
 *
 * As root the runtime runs each agent as an OS user of its own (docs/agent-isolation.md), and
 * `BOSUN_DATA_DIR` is no place those users may enter: the workspaces then go beside it, in
 * `<BOSUN_DATA_DIR>-workspaces` (unless the operator's `BOSUN_RUNTIME_WORKSPACES_DIR` says where).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { hkdfSync, randomBytes } from "node:crypto"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { RuntimeEndpoint } from "@bosun/actors/runtime/RuntimeClient"
import { Context, Data, Duration, Effect, Fiber, Layer, Option, Redacted, Schedule } from "effect"
import { AppConfig, type MasterKeySettings } from "../config/AppConfig.ts"
import { InstanceSecrets } from "../config/InstanceSecrets.ts"

export class EmbeddedRuntimeError extends Data.TaggedError("EmbeddedRuntimeError")<{
  readonly message: string
}> {}

export class AgentRuntime extends Context.Service<
  AgentRuntime,
  { readonly endpoint: RuntimeEndpoint; readonly embedded: boolean }
>()("bosun/server/AgentRuntime") {
  static readonly layer = Layer.effect(
    AgentRuntime,
    Effect.gen(function* () {
      const config = yield* AppConfig
      if (Option.isSome(config.runtime.external)) {
        const { url, token } = config.runtime.external.value
        return AgentRuntime.of({ endpoint: { baseUrl: url, token }, embedded: false })
      }
      const secrets = yield* InstanceSecrets
      const endpoint = yield* launchEmbedded({
        token: embeddedRuntimeToken(secrets.masterKey),
        port: config.runtime.embeddedPort,
        dataDir: path.resolve(config.dataDir, "runtime"),
        workspacesDir: embeddedWorkspacesDir(config.dataDir)
      })
      return AgentRuntime.of({ endpoint, embedded: true })
    })
  )
}

/**
 * The embedded runtime's token: the same on every start of this instance, and not the master key
 * itself (a separate key from HKDF), so the runtime, which never sees the master key, cannot
 * recover it from its token.
 */
export const embeddedRuntimeToken = (masterKey: MasterKeySettings): Redacted.Redacted<string> =>
  Redacted.make(
    Buffer.from(
      hkdfSync("sha256", Buffer.from(Redacted.value(masterKey.key), "base64"), "", "bosun/embedded-runtime-token", 32)
    ).toString("base64url")
  )

const runtimeMain = fileURLToPath(import.meta.resolve("@bosun/runtime/main"))

/**
 * Where the embedded runtime keeps workspaces, when not where it would by default (inside its
 * data directory): as root, outside `BOSUN_DATA_DIR`, which agents' users cannot enter.
 */
const embeddedWorkspacesDir = (dataDir: string): string | undefined =>
  process.getuid?.() === 0 && process.env.BOSUN_RUNTIME_WORKSPACES_DIR === undefined
    ? `${path.resolve(dataDir)}-workspaces`
    : undefined

/** What the child may see of our environment: nothing secret, only what a process needs to run. */
const BASE_VARIABLES = ["PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR", "SHELL"]

/** The settings we set ourselves; an operator's value for them would be overridden anyway. */
const OWN_SETTINGS = new Set([
  "BOSUN_RUNTIME_HOST",
  "BOSUN_RUNTIME_PORT",
  "BOSUN_RUNTIME_TOKEN",
  "BOSUN_RUNTIME_DATA_DIR",
  "BOSUN_RUNTIME_SUPERVISED",
  "BOSUN_RUNTIME_URL"
])

const childEnvironment = (settings: Record<string, string>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = {}
  for (const name of BASE_VARIABLES) if (process.env[name] !== undefined) env[name] = process.env[name]
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith("BOSUN_RUNTIME_") && !OWN_SETTINGS.has(name)) env[name] = value
  }
  return { ...env, ...settings }
}

/** The grace the runtime gets to stop its agents before SIGKILL: its own cancel grace and a margin. */
const STOP_GRACE = Duration.seconds(15)

interface Started {
  readonly child: ChildProcess
  readonly port: number
  readonly exited: Promise<number | null>
}

/** Starts one runtime process and resolves once it listens (with the port it took), or fails with its last words. */
const start = (settings: Record<string, string>, logs: NodeJS.WritableStream) =>
  Effect.callback<Started, EmbeddedRuntimeError>((resume) => {
    const child = spawn(process.execPath, [runtimeMain], {
      env: childEnvironment(settings),
      stdio: ["pipe", "pipe", "pipe"]
    })
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    let pending = ""
    let stderr = ""
    // Streaming decoders: a character split across two chunks is decoded whole.
    const stdoutText = new TextDecoder()
    const stderrText = new TextDecoder()
    let listening = false
    child.stdout?.on("data", (chunk: Buffer) => {
      logs.write(chunk)
      if (listening) return
      pending += stdoutText.decode(chunk, { stream: true })
      const lines = pending.split("\n")
      pending = lines.pop() ?? ""
      for (const line of lines) {
        const port = listeningPort(line)
        if (port !== undefined) {
          listening = true
          resume(Effect.succeed({ child, port, exited }))
          return
        }
      }
    })
    child.stderr?.on("data", (chunk: Buffer) => {
      process.stderr.write(chunk)
      stderr = (stderr + stderrText.decode(chunk, { stream: true })).slice(-2000)
    })
    child.once("error", (cause) =>
      resume(
        Effect.fail(new EmbeddedRuntimeError({ message: `the embedded runtime could not start: ${cause.message}` }))
      )
    )
    child.once("exit", (code) => {
      if (listening) return
      const reason = stderr.trim().split("\n").pop() ?? `exit code ${code}`
      resume(Effect.fail(new EmbeddedRuntimeError({ message: `the embedded runtime could not start: ${reason}` })))
    })
    return Effect.sync(() => {
      if (!listening) child.kill("SIGKILL")
    })
  })

/** The port of the runtime's `bosun_runtime_listening` log line, if this is that line. */
const listeningPort = (line: string): number | undefined => {
  if (!line.includes("bosun_runtime_listening")) return undefined
  const address = /"address":"[^"]*:(\d+)"/.exec(line)?.[1]
  return address === undefined ? undefined : Number(address)
}

const stop = (started: Started) =>
  Effect.promise(async () => {
    if (started.child.exitCode !== null || started.child.signalCode !== null) return
    started.child.kill("SIGTERM")
    const timer = setTimeout(() => started.child.kill("SIGKILL"), Duration.toMillis(STOP_GRACE))
    await started.exited
    clearTimeout(timer)
  })

/**
 * Starts a supervised embedded runtime for the caller's scope and answers its endpoint. The
 * server's passes its log lines to stdout; `bosun doctor`'s, started for one model turn, to
 * stderr (its stdout is the report).
 */
export const launchEmbedded = Effect.fn("AgentRuntime.launchEmbedded")(function* (options: {
  /** The token the runtime accepts; a random one for this launch when not given. */
  readonly token?: Redacted.Redacted<string>
  readonly port: number
  readonly dataDir: string
  readonly workspacesDir: string | undefined
  readonly logs?: NodeJS.WritableStream
}) {
  const logs = options.logs ?? process.stdout
  const token = options.token ?? Redacted.make(randomBytes(32).toString("base64url"))
  const settings = (port: number) => ({
    BOSUN_RUNTIME_HOST: "127.0.0.1",
    BOSUN_RUNTIME_PORT: String(port),
    BOSUN_RUNTIME_TOKEN: Redacted.value(token),
    BOSUN_RUNTIME_DATA_DIR: options.dataDir,
    ...(options.workspacesDir === undefined ? {} : { BOSUN_RUNTIME_WORKSPACES_DIR: options.workspacesDir }),
    BOSUN_RUNTIME_SUPERVISED: "true"
  })
  const first = yield* start(settings(options.port), logs)
  const port = first.port
  let current = first
  yield* Effect.annotateCurrentSpan("port", port)

  // Restart on an unexpected exit, on the same port and token, so the endpoint never changes.
  const supervise = Effect.gen(function* () {
    const code = yield* Effect.promise(() => current.exited)
    yield* Effect.logError("embedded_runtime_exited").pipe(Effect.annotateLogs({ exit_code: code }))
    current = yield* start(settings(port), logs).pipe(
      Effect.tapError((error) => Effect.logError("embedded_runtime_restart_failed", error.message)),
      Effect.retry(
        Schedule.exponential(Duration.seconds(1)).pipe(
          Schedule.modifyDelay(({ duration }) => Effect.succeed(Duration.min(duration, Duration.seconds(30))))
        )
      )
    )
    yield* Effect.logInfo("embedded_runtime_restarted").pipe(Effect.annotateLogs({ port }))
  }).pipe(Effect.forever)
  const supervisor = yield* Effect.forkScoped(supervise)
  yield* Effect.addFinalizer(() =>
    Effect.andThen(
      Fiber.interrupt(supervisor),
      Effect.suspend(() => stop(current))
    )
  )

  return { baseUrl: new URL(`http://127.0.0.1:${port}`), token } satisfies RuntimeEndpoint
})

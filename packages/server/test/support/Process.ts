/**
 * Runs the real `bosun` server process (`node packages/server/src/main.ts`, as `npm start` does)
 * for end-to-end tests, with its stdout/stderr collected and a way to signal it; and the operator
 * CLI (`runCli`).
 */

import { type ChildProcess, execFile, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { eventually } from "@bosun/testing"
import { Duration, Effect } from "effect"

export const mainScript = fileURLToPath(new URL("../../src/main.ts", import.meta.url))

export interface ServerProcess {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Effect.Effect<number | null>
}

/** The environment of this test process without the Bosun/Postgres/Redis settings, plus `env`. */
export const cleanEnv = (env: Record<string, string>): NodeJS.ProcessEnv => {
  const base: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("BOSUN_") && key !== "DATABASE_URL" && key !== "REDIS_URL") base[key] = value
  }
  return { ...base, ...env }
}

/**
 * The server with `env` (or another entry point built on the server, `script`); its embedded
 * runtime and its cluster runner take free ports unless `env` says otherwise, so test servers
 * running side by side do not contend for 8787 and 34431. SIGKILLed when the scope closes.
 */
export const spawnServer = (env: Record<string, string>, script: string = mainScript) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      // Two free-port probes in a row may return the same port: the runner's must not be one the
      // caller already chose for this server.
      const taken = new Set(Object.values(env))
      let runnerPort = yield* Effect.orDie(freePort)
      while (taken.has(String(runnerPort))) runnerPort = yield* Effect.orDie(freePort)
      const child = spawn(process.execPath, [script], {
        env: cleanEnv({ BOSUN_EMBEDDED_RUNTIME_PORT: "0", BOSUN_RUNNER_PORT: String(runnerPort), ...env }),
        stdio: ["ignore", "pipe", "pipe"]
      })
      let out = ""
      let err = ""
      child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString()))
      child.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()))
      const exitedPromise = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
      return {
        child,
        stdout: () => out,
        stderr: () => err,
        exited: Effect.promise(() => exitedPromise)
      } satisfies ServerProcess
    }),
    (server) =>
      Effect.suspend(() => {
        if (server.child.exitCode !== null || server.child.signalCode !== null) return Effect.void
        server.child.kill("SIGKILL")
        return Effect.asVoid(server.exited)
      })
  )

/** Waits until the server on `port` answers `/readyz` with 200; dies with its output if it does not in time. */
export const untilReady = (server: ServerProcess, port: number, deadline: Duration.Duration = Duration.seconds(30)) =>
  eventually(
    Effect.promise(() =>
      // A bounded request: a connection the server accepted but never answers must not stall the wait.
      fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
        (response) => response.status,
        () => 0
      )
    ),
    (status) => status === 200,
    deadline
  ).pipe(
    Effect.catch(() =>
      Effect.die(new Error(`the server on ${port} did not come up: ${server.stdout()}${server.stderr()}`))
    ),
    Effect.asVoid
  )

/** SIGKILLs the server and waits for it to be gone. */
export const killServer = (server: ServerProcess) =>
  Effect.suspend(() => {
    server.child.kill("SIGKILL")
    return Effect.asVoid(server.exited)
  })

const cliScript = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url))

/**
 * Runs the `bosun` operator CLI with `env` (nothing of this process's BOSUN_* settings leaks in),
 * SIGTERMed after `timeoutMs`.
 */
export const runCli = (args: ReadonlyArray<string>, env: Record<string, string>, timeoutMs = 60_000) =>
  Effect.callback<{ readonly code: number; readonly stdout: string; readonly stderr: string }>((resume) => {
    execFile(
      process.execPath,
      [cliScript, ...args],
      { env: cleanEnv(env), timeout: timeoutMs },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1
        resume(Effect.succeed({ code, stdout, stderr }))
      }
    )
  })

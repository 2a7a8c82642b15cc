/**
 * An agent CLI as a child process. Every adapter runs its CLI through here:
 * - the process leads its own process group, so a cancel or a time limit reaches whatever it
 *   started: SIGTERM to the group, SIGKILL after the grace period;
 * - each stdout line that is a JSON object is handed to `onJson`, any other line to `onText`;
 * - the last stderr lines are kept, so a crash can be reported with them;
 * - with `runAs` (the runtime is root: docs/agent-isolation.md), the directories the runtime
 *   wrote for the agent are handed to the attempt's user first, the process runs with that
 *   user's uid and gid (no supplementary groups), umask 077 and `USER`/`LOGNAME` naming it, and once it has
 *   exited — or been stopped — every process of that user is ended, whatever process group or
 *   session it moved to: nothing of the agent outlives its turn.
 * Interrupting the effect stops the process this way and waits until it has exited.
 */
import { spawn } from "node:child_process"
import { type Duration, Effect } from "effect"
import { type AgentUser, handOver, killProcessesOf } from "../AgentUsers.ts"

/** The attempt's own user, and what the runtime wrote for it that must become that user's. */
export interface RunAs {
  readonly user: AgentUser
  readonly handOver: ReadonlyArray<string>
}

export interface AgentProcessOptions {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly cwd: string
  readonly env: Readonly<Record<string, string>>
  readonly grace: Duration.Duration
  /** Written to the process's stdin, which is then closed. */
  readonly stdin?: string
  /** Called with the process id once it runs (it is also its process group id). */
  readonly onSpawn?: (pid: number) => void
  readonly onJson: (value: Record<string, unknown>) => void
  readonly onText: (line: string) => void
  readonly runAs?: RunAs | undefined
}

export interface AgentExit {
  /** The exit code, or null when a signal ended the process. */
  readonly exitCode: number | null
  readonly signal: string | null
  readonly stderrTail: ReadonlyArray<string>
}

const STDERR_LINES = 40

const parseObject = (line: string): Record<string, unknown> | undefined => {
  if (!line.startsWith("{")) return undefined
  const parsed: unknown = JSON.parse(line)
  return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : undefined
}

/**
 * Splits a stream of byte chunks into lines, calling `onLine` for each complete one. The decoder
 * keeps a character split across two chunks until its last byte arrives; invalid bytes become
 * U+FFFD as the WHATWG decoder replaces them.
 */
const lines = (onLine: (line: string) => void) => {
  const decoder = new TextDecoder("utf-8")
  // The pieces of the line not yet ended: only newly decoded text is searched for a newline, so a
  // very long line costs its length, not its length squared.
  let pending: Array<string> = []
  const take = (text: string) => {
    let start = 0
    let newline = text.indexOf("\n")
    while (newline !== -1) {
      pending.push(text.slice(start, newline))
      const line = pending.join("")
      pending = []
      onLine(line.endsWith("\r") ? line.slice(0, -1) : line)
      start = newline + 1
      newline = text.indexOf("\n", start)
    }
    if (start < text.length) pending.push(text.slice(start))
  }
  return {
    push: (chunk: Buffer) => take(decoder.decode(chunk, { stream: true })),
    flush: () => {
      // Bytes of a character the stream ended in the middle of become U+FFFD.
      take(decoder.decode())
      const rest = pending.join("")
      pending = []
      if (rest !== "") onLine(rest)
    }
  }
}

export const runAgentProcess = (options: AgentProcessOptions): Effect.Effect<AgentExit> => {
  const runAs = options.runAs
  if (runAs === undefined) return runProcess(options)
  return Effect.sync(() => {
    for (const dir of runAs.handOver) handOver(dir, runAs.user)
  }).pipe(Effect.andThen(runProcess(options)), Effect.ensuring(killProcessesOf(runAs.user)))
}

const runProcess = (options: AgentProcessOptions): Effect.Effect<AgentExit> =>
  Effect.callback<AgentExit>((resume) => {
    const user = options.runAs?.user
    // An agent under its own user starts with umask 077: what it leaves in /tmp is its alone. The
    // child takes the umask at fork, inside the synchronous spawn, so the runtime's is restored at once.
    const umask = user === undefined ? undefined : process.umask(0o077)
    const child = (() => {
      try {
        return spawn(options.command, [...options.args], {
          cwd: options.cwd,
          env: { ...options.env, ...(user === undefined ? {} : { USER: user.name, LOGNAME: user.name }) },
          detached: true,
          stdio: ["pipe", "pipe", "pipe"],
          ...(user === undefined ? {} : { uid: user.uid, gid: user.gid })
        })
      } finally {
        if (umask !== undefined) process.umask(umask)
      }
    })()
    if (child.pid !== undefined) options.onSpawn?.(child.pid)
    const stderrTail: Array<string> = []
    const stdout = lines((line) => {
      if (line.trim() === "") return
      const value = safeParse(line)
      if (value !== undefined) options.onJson(value)
      else options.onText(line)
    })
    const stderr = lines((line) => {
      stderrTail.push(line)
      if (stderrTail.length > STDERR_LINES) stderrTail.shift()
    })
    child.stdout.on("data", stdout.push)
    child.stderr.on("data", stderr.push)
    child.stdin.on("error", () => {})
    child.stdin.end(options.stdin ?? "")
    let exited = false
    const exit = new Promise<void>((resolve) => {
      child.on("error", (error) => {
        exited = true
        stderrTail.push(`could not start ${options.command}: ${error.message}`)
        resume(Effect.succeed({ exitCode: 127, signal: null, stderrTail }))
        resolve()
      })
      child.on("close", (code, signal) => {
        exited = true
        stdout.flush()
        stderr.flush()
        resume(Effect.succeed({ exitCode: code, signal, stderrTail }))
        resolve()
      })
    })
    // The negative pid is the process group: the CLI and everything it started. It may be gone
    // between the check and the signal; that is what was wanted anyway.
    const signalGroup = (signal: NodeJS.Signals) =>
      Effect.try({
        try: () => {
          if (!exited && child.pid !== undefined) process.kill(-child.pid, signal)
        },
        catch: () => undefined
      }).pipe(Effect.ignore)
    const awaitExit = Effect.promise(() => exit)
    return signalGroup("SIGTERM").pipe(
      Effect.andThen(
        Effect.raceFirst(
          awaitExit,
          Effect.sleep(options.grace).pipe(Effect.andThen(signalGroup("SIGKILL")), Effect.andThen(awaitExit))
        )
      )
    )
  })

/** A JSON object line, or undefined for anything else (a JSON syntax error is just text). */
const safeParse = (line: string): Record<string, unknown> | undefined => {
  if (!line.startsWith("{")) return undefined
  return Effect.runSync(
    Effect.try({ try: () => parseObject(line), catch: () => undefined }).pipe(Effect.orElseSucceed(() => undefined))
  )
}

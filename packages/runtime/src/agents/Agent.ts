/**
 * What an agent adapter gets and gives back. The runtime prepares the workspace, then hands the
 * adapter the run request and a place to put things; the adapter runs its CLI to the end (or until
 * interrupted: cancel, time limit) and reports the exit, the last stderr lines and the usage it
 * saw. Everything the CLI says along the way goes out through `emit` as it happens.
 *
 * The agent's environment is built from nothing: the runtime's own variables (its bearer token
 * among them) never reach agent code. As root the runtime also runs it as the attempt's own OS
 * user (`runAs`, docs/agent-isolation.md): every adapter passes `runAs` on to `runAgentProcess`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { RunRequest, RunUsage } from "@bosun/domain"
import { type Duration, Effect } from "effect"
import type { RunAs } from "./AgentProcess.ts"

export interface AgentContext {
  readonly request: RunRequest
  /** The workspace root: each repository is a directory under it. */
  readonly workspace: string
  /** Files the agent leaves here become `outputs/<name>` of the run. */
  readonly outputDir: string
  /** HTML reports left here become `artifacts/<name>`. */
  readonly artifactsDir: string
  /** HOME, XDG_* and TMPDIR of the agent: its CLI state stays inside the attempt. */
  readonly homeDir: string
  readonly grace: Duration.Duration
  readonly emit: (type: string, data: unknown) => void
  /** Records the agent's process (group) id, so a restarted runtime can stop what it left behind. */
  readonly onSpawn: (pid: number) => void
  /** The attempt's own OS user, when the runtime runs agents as users of their own (it is root). */
  readonly runAs: RunAs | undefined
}

export interface AgentOutcome {
  readonly exitCode: number | null
  readonly signal: string | null
  readonly stderrTail: ReadonlyArray<string>
  readonly usage: Omit<RunUsage, "duration_ms">
  /** A failure the agent reported in its own events even though it exited 0. */
  readonly error?: { readonly code: string; readonly message: string }
}

export type AgentAdapter = (context: AgentContext) => Effect.Effect<AgentOutcome>

/** An attempt refused before its CLI ran (e.g. credentials it cannot use): no exit, no usage. */
export const refusedOutcome = (code: string, message: string): Effect.Effect<AgentOutcome> =>
  Effect.succeed({
    exitCode: null,
    signal: null,
    stderrTail: [],
    usage: { input_tokens: 0, output_tokens: 0, cost_usd: null },
    error: { code, message }
  })

/**
 * The runtime's egress settings an agent must share: in a platform container every connection
 * leaves through Bosun's injection proxy (the URL carries the pod's proxy credential, which is
 * the agent's to use) and every TLS certificate it sees is issued by the deployment CA.
 */
const EGRESS_VARIABLES = [
  "HTTPS_PROXY",
  "HTTP_PROXY",
  "NO_PROXY",
  "https_proxy",
  "http_proxy",
  "no_proxy",
  "NODE_EXTRA_CA_CERTS",
  "SSL_CERT_FILE",
  "GIT_SSL_CAINFO"
]

const egressEnvironment = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const name of EGRESS_VARIABLES) {
    const value = process.env[name]
    if (value !== undefined && value !== "") env[name] = value
  }
  // Node's own fetch follows the proxy variables only when asked to (Node 24).
  if (env.HTTPS_PROXY !== undefined || env.https_proxy !== undefined) env.NODE_USE_ENV_PROXY = "1"
  return env
}

/** The variables every agent process starts from, besides its own. */
export const baseEnvironment = (context: AgentContext): Record<string, string> => ({
  ...egressEnvironment(),
  PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
  LANG: "C.UTF-8",
  HOME: context.homeDir,
  XDG_CONFIG_HOME: `${context.homeDir}/.config`,
  XDG_DATA_HOME: `${context.homeDir}/.local/share`,
  XDG_CACHE_HOME: `${context.homeDir}/.cache`,
  XDG_STATE_HOME: `${context.homeDir}/.local/state`,
  TMPDIR: `${context.homeDir}/tmp`,
  BOSUN_RUN_ID: context.request.run_id,
  BOSUN_ATTEMPT_ID: context.request.attempt_id,
  BOSUN_MODEL: context.request.model,
  BOSUN_TASK: context.request.task ?? "AGENT",
  BOSUN_WORKSPACE: context.workspace,
  BOSUN_OUTPUT_DIR: context.outputDir,
  BOSUN_ARTIFACTS_DIR: context.artifactsDir
})

const isExecutableFile = (file: string) => {
  const stat = fs.statSync(file, { throwIfNoEntry: false })
  return stat?.isFile() === true && (stat.mode & 0o111) !== 0
}

/**
 * An agent CLI's launcher: the `node_modules/.bin/<name>` nearest the runtime package (its own
 * dependency, wherever npm hoisted it), else the first one on PATH; undefined when neither exists.
 */
export const findAgentBinary = (name: string, searchPath = process.env.PATH ?? ""): string | undefined => {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = path.join(dir, "node_modules", ".bin", name)
    if (isExecutableFile(candidate)) return candidate
    const parent = path.dirname(dir)
    if (parent === dir) break
    dir = parent
  }
  return searchPath
    .split(path.delimiter)
    .filter((entry) => entry !== "")
    .map((entry) => path.join(entry, name))
    .find(isExecutableFile)
}

/**
 * A skill's `SKILL.md` as both CLIs read it: the request's content, with `name`/`description`
 * front matter (the first non-empty line) added when it has none.
 */
export const skillMarkdown = (name: string, content: string) => {
  if (content.startsWith("---\n")) return content
  const firstLine = content.split("\n").find((line) => line.trim() !== "") ?? name
  const description = firstLine
    .replace(/^#+\s*/, "")
    .trim()
    .slice(0, 200)
  return `---\nname: ${JSON.stringify(name)}\ndescription: ${JSON.stringify(description)}\n---\n\n${content}`
}

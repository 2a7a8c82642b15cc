/**
 * The runs of this runtime (docs/interface.md: Agent runtime protocol): idempotent start by
 * `(run_id, attempt_id)`, the run itself (checkout, agent, collecting its changes), its event log
 * and live tail, cancel, and what a restart finds.
 *
 * On disk, under `BOSUN_RUNTIME_DATA_DIR` (0700; 0711 — search only — when agents run as users
 * of their own and the workspaces are inside it):
 * - `runs/<attempt_id>/` (in `runs/`, 0700: the runtime's alone): `request.json` (the ids, the
 *   agent and a fingerprint of the whole request; never its prompt or credentials), `state.json`
 *   (the `RunState`, replaced atomically at each step), `events.ndjson` (the log), `files/` (the
 *   diff, outputs, artifacts);
 * - `fingerprint.key` (0600): the HMAC key of those fingerprints, random and made once. It is the
 *   data directory's, not the token: the server's embedded runtime gets a new token at each start,
 *   and a resumed request must still match its run. The fingerprint is keyed at all so that the
 *   credentials inside a request cannot be guessed from it;
 * - `<BOSUN_RUNTIME_WORKSPACES_DIR>/<attempt_id>/` (default `workspaces/`): `repos/` (the
 *   checkouts, the agent's working directory), `home/`, `outputs/`, `artifacts/`; removed
 *   `BOSUN_RUNTIME_WORKSPACE_RETENTION` after the run ends.
 *
 * Agents under users of their own (the runtime is root; `AgentUsers`, docs/agent-isolation.md):
 * each attempt gets a fresh OS user. Its workspace directory is the runtime's with group
 * search only for that user's group (0710), so the agent can neither list nor replace what is in
 * it; `repos/`, `home/`, `outputs/` and `artifacts/` (0700) are handed to the user before the
 * agent runs. The workspaces directory itself is 0711: nobody lists the attempts. When the agent
 * is done its processes are ended, its changes are collected by git running as its user, its
 * outputs are copied without following links, and the workspace goes back to the runtime (0700)
 * before the user is deleted.
 *
 * A run's state machine: RUNNING (phase PREPARING → AGENT → COLLECTING) → SUCCEEDED | FAILED |
 * CANCELLED (phase DONE). A run found RUNNING when the runtime starts was cut off by a restart:
 * it becomes FAILED with `retryable: true` and error `runtime_restarted`, and its log is served
 * as it was.
 */
import { createHash, createHmac, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import type { RunEvent, RunFile, RunPhase, RunRequest, RunState } from "@bosun/domain"
import { canonicalJson } from "@bosun/domain"
import { Context, Data, Duration, Effect, Fiber, Layer, Option, Queue, Redacted, Scope, Stream } from "effect"
import { type AgentUser, AgentUsers, type AgentUsersShape, handOver } from "./AgentUsers.ts"
import type { AgentAdapter, AgentOutcome } from "./agents/Agent.ts"
import { codexAgent, codexCatalog, findCodex } from "./agents/CodexAgent.ts"
import { customAgent } from "./agents/CustomAgent.ts"
import { findOpenCode, openCodeAgent, openCodeCatalog } from "./agents/OpenCodeAgent.ts"
import { RunLog, readEvents } from "./RunLog.ts"
import { RuntimeConfig, type RuntimeSettings } from "./RuntimeConfig.ts"
import { Toolchain } from "./Toolchain.ts"
import { type CheckedOut, changes, checkout } from "./Workspace.ts"

export class RunConflict extends Data.TaggedError("RunConflict")<{ readonly message: string }> {}
export class TooManyRuns extends Data.TaggedError("TooManyRuns")<{ readonly maxRuns: number }> {}
export class UnknownAgent extends Data.TaggedError("UnknownAgent")<{ readonly message: string }> {}
export class WorkspacesUnreachable extends Data.TaggedError("WorkspacesUnreachable")<{ readonly message: string }> {}

interface StoredRequest {
  readonly run_id: string
  readonly attempt_id: string
  readonly fingerprint: string
}

interface Run {
  readonly attemptId: string
  readonly dir: string
  readonly fingerprint: string
  state: RunState
  log: RunLog | undefined
  fiber: Fiber.Fiber<void> | undefined
  cancelRequested: boolean
}

const writeJsonAtomic = (file: string, value: unknown) => {
  const temporary = `${file}.${process.pid}.tmp`
  fs.writeFileSync(temporary, `${JSON.stringify(value, null, 2)}\n`)
  fs.renameSync(temporary, file)
}

/**
 * The key of the request fingerprints, `<dataDir>/fingerprint.key`: made once and linked into
 * place whole, so that a crash never leaves half a key and two processes starting on the same
 * directory end up with the same one.
 */
const fingerprintKey = (dataDir: string): Buffer => {
  const file = path.join(dataDir, "fingerprint.key")
  if (!fs.existsSync(file)) {
    const temporary = `${file}.${process.pid}.tmp`
    fs.writeFileSync(temporary, randomBytes(32), { mode: 0o600 })
    fs.chmodSync(temporary, 0o600)
    try {
      fs.linkSync(temporary, file)
    } catch (error) {
      // Another process linked its key first: that one is the key.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
    } finally {
      fs.rmSync(temporary, { force: true })
    }
  }
  return fs.readFileSync(file)
}

const contentTypeOf = (name: string) => {
  const extension = path.extname(name).toLowerCase()
  return (
    {
      ".diff": "text/x-diff",
      ".patch": "text/x-diff",
      ".html": "text/html; charset=utf-8",
      ".htm": "text/html; charset=utf-8",
      ".json": "application/json",
      ".md": "text/markdown; charset=utf-8",
      ".txt": "text/plain; charset=utf-8",
      ".csv": "text/csv; charset=utf-8",
      ".svg": "image/svg+xml",
      ".png": "image/png"
    }[extension] ?? "application/octet-stream"
  )
}

const describeFile = (root: string, relative: string, kind: RunFile["kind"]): RunFile => {
  const bytes = fs.readFileSync(path.join(root, relative))
  return {
    path: relative,
    kind,
    size: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    content_type: contentTypeOf(relative)
  }
}

/**
 * Copies the regular files directly under `from` to `to`; sub-directories and links are skipped.
 * `from` was the agent's: neither it nor a file in it is read through a link.
 */
const copyFlat = (from: string, to: string): Array<string> => {
  if (fs.lstatSync(from, { throwIfNoEntry: false })?.isDirectory() !== true) return []
  fs.mkdirSync(to, { recursive: true })
  const names: Array<string> = []
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (!entry.isFile()) continue
    const fd = fs.openSync(path.join(from, entry.name), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
    try {
      if (!fs.fstatSync(fd).isFile()) continue
      fs.writeFileSync(path.join(to, entry.name), fs.readFileSync(fd))
    } finally {
      fs.closeSync(fd)
    }
    names.push(entry.name)
  }
  return names.sort()
}

/** Every directory above `dir` must let others search it, or an agent under its own user cannot reach `dir`. */
const unreachableAncestor = (dir: string): string | undefined => {
  let at = path.dirname(dir)
  for (;;) {
    const stat = fs.statSync(at)
    if ((stat.mode & 0o001) === 0) return `${at} (mode ${(stat.mode & 0o777).toString(8)})`
    const parent = path.dirname(at)
    if (parent === at) return undefined
    at = parent
  }
}

/** Creates `dir` and whatever is missing above it with `mode`, whatever the umask. */
const makeDirectory = (dir: string, mode: number) => {
  const parent = path.dirname(dir)
  if (parent !== dir && !fs.existsSync(parent)) makeDirectory(parent, mode)
  if (!fs.existsSync(dir)) {
    fs.mkdirSync(dir)
    fs.chmodSync(dir, mode)
  }
}

/** The workspace directory back to the runtime alone: the attempt's user can no longer enter it. */
const lockWorkspace = (workspace: string) => {
  if (!fs.existsSync(workspace)) return
  fs.chownSync(workspace, process.getuid?.() ?? 0, process.getgid?.() ?? 0)
  fs.chmodSync(workspace, 0o700)
}

const ended = (state: RunState) => state.status !== "RUNNING"

/**
 * The credential values a request carries (provider credentials, repository tokens, MCP header
 * values), longest first. An agent can print them — a CLI that echoes its rejected config to
 * stderr, a tool that prints its environment — and whatever it prints is stored and streamed, so
 * they are replaced before an event is written. Values under 8 characters are not credentials
 * worth the false matches.
 */
const secretsOf = (request: RunRequest): ReadonlyArray<string> => {
  const found = new Set<string>()
  const walk = (value: unknown): void => {
    if (typeof value === "string") {
      if (value.length >= 8) found.add(value)
    } else if (Array.isArray(value)) value.forEach(walk)
    else if (typeof value === "object" && value !== null) Object.values(value).forEach(walk)
  }
  walk(request.provider_credentials)
  for (const repository of request.repositories) walk(repository.credential)
  for (const server of request.mcp_servers) walk(server.headers)
  return [...found].sort((a, b) => b.length - a.length)
}

/** `data` with every secret value replaced by `[redacted]`; the same object when none occurs. */
const redact = (data: unknown, secrets: ReadonlyArray<string>): unknown => {
  if (secrets.length === 0) return data
  const text = JSON.stringify(data) ?? ""
  // Secrets are matched as they appear inside a JSON string (escaped).
  const hits = secrets.filter((secret) => text.includes(JSON.stringify(secret).slice(1, -1)))
  if (hits.length === 0) return data
  let out = text
  for (const secret of hits) out = out.split(JSON.stringify(secret).slice(1, -1)).join("[redacted]")
  return JSON.parse(out)
}

/**
 * Kills the process group of an agent a previous runtime process started, if it still runs.
 * A pid can be reused after a reboot, so only a process whose environment names this attempt
 * is touched.
 */
const stopOrphan = (run: { readonly dir: string; readonly attemptId: string }) =>
  Effect.gen(function* () {
    const pidFile = path.join(run.dir, "agent.pid")
    if (!fs.existsSync(pidFile)) return
    const pid = Number(fs.readFileSync(pidFile, "utf8").trim())
    if (!Number.isInteger(pid) || pid <= 1) return
    const environ = yield* Effect.try(() => fs.readFileSync(`/proc/${pid}/environ`, "latin1")).pipe(
      Effect.orElseSucceed(() => "")
    )
    if (!environ.split("\0").includes(`BOSUN_ATTEMPT_ID=${run.attemptId}`)) return
    yield* Effect.try(() => process.kill(-pid, "SIGKILL")).pipe(Effect.ignore)
  })

/** What the runs' steps share: the runtime's settings and directories, the runs it knows, the scope they run in. */
interface RunsEnv {
  readonly config: RuntimeSettings
  readonly toolchain: Toolchain["Service"]
  readonly users: AgentUsersShape
  readonly scope: Scope.Scope
  readonly runsDir: string
  readonly workspacesDir: string
  /** The HMAC key of the request fingerprints. */
  readonly key: Buffer
  readonly runs: Map<string, Run>
}

/**
 * Creates the data, runs and workspaces directories with their modes and reads (or makes) the
 * fingerprint key; with agents under users of their own, checks they can reach their workspaces.
 */
const prepareDirectories = (config: RuntimeSettings, users: AgentUsersShape) =>
  Effect.gen(function* () {
    const dataDir = path.resolve(config.dataDir)
    const runsDir = path.join(dataDir, "runs")
    const workspacesDir = config.workspacesDir
    // The state is the runtime's alone. With agents under users of their own, they must reach
    // their workspaces: the directories on the way let others search them, and list nothing.
    const workspacesInside = workspacesDir.startsWith(dataDir + path.sep)
    // Directories created on the way are searchable by the agents' users when they need to pass.
    makeDirectory(dataDir, users.isolated ? 0o711 : 0o700)
    fs.chmodSync(dataDir, users.isolated && workspacesInside ? 0o711 : 0o700)
    makeDirectory(runsDir, 0o700)
    fs.chmodSync(runsDir, 0o700)
    const key = fingerprintKey(dataDir)
    makeDirectory(workspacesDir, users.isolated ? 0o711 : 0o700)
    fs.chmodSync(workspacesDir, users.isolated ? 0o711 : 0o700)
    if (users.isolated) {
      const blocked = unreachableAncestor(workspacesDir)
      if (blocked !== undefined) {
        return yield* new WorkspacesUnreachable({
          message: `agents run as users of their own and cannot reach ${workspacesDir}: ${blocked} is not searchable by others; chmod o+x it or set BOSUN_RUNTIME_WORKSPACES_DIR elsewhere (docs/agent-isolation.md)`
        })
      }
      // Workspaces an earlier process left (its runs ended or were cut off): the runtime's
      // alone from now on, so a later user given the same uid cannot enter them.
      for (const entry of fs.readdirSync(workspacesDir)) lockWorkspace(path.join(workspacesDir, entry))
    }
    return { runsDir, workspacesDir, key }
  })

const adapterFor = (env: RunsEnv, request: RunRequest): AgentAdapter | UnknownAgent => {
  const catalog = request.task === "CATALOG"
  if (request.agent.kind === "CUSTOM") {
    const profile = env.config.profiles.get(request.agent.profile ?? "")
    return profile === undefined
      ? new UnknownAgent({
          message: `No custom agent profile "${request.agent.profile ?? ""}" is configured in BOSUN_RUNTIME_AGENTS`
        })
      : customAgent(profile)
  }
  if (request.agent.kind === "OPENCODE") {
    const binary = findOpenCode()
    if (binary !== undefined) {
      return catalog ? openCodeCatalog(binary, env.toolchain.profile.opencode) : openCodeAgent(binary)
    }
  }
  if (request.agent.kind === "AGENT_ONE") {
    const binary = findCodex()
    if (binary !== undefined) return catalog ? codexCatalog(binary, env.toolchain.profile.codex) : codexAgent(binary)
  }
  return new UnknownAgent({ message: `The agent ${request.agent.kind} is not installed in this runtime` })
}

/** A run of an earlier process, from its files; one cut off by a restart is failed first. */
const load = (env: RunsEnv, attemptId: string): Run | undefined => {
  const known = env.runs.get(attemptId)
  if (known !== undefined) return known
  const dir = path.join(env.runsDir, attemptId)
  const stateFile = path.join(dir, "state.json")
  if (!fs.existsSync(stateFile)) return undefined
  const stored = JSON.parse(fs.readFileSync(path.join(dir, "request.json"), "utf8")) as StoredRequest
  const run: Run = {
    attemptId,
    dir,
    fingerprint: stored.fingerprint,
    state: JSON.parse(fs.readFileSync(stateFile, "utf8")) as RunState,
    log: undefined,
    fiber: undefined,
    cancelRequested: false
  }
  env.runs.set(attemptId, run)
  return run
}

const emit = (run: Run, type: string, data: unknown): RunEvent | undefined => {
  const event = run.log?.append(type, data)
  if (event !== undefined) run.state = { ...run.state, last_seq: event.seq }
  return event
}

const update = (run: Run, patch: Partial<RunState>) => {
  run.state = { ...run.state, ...patch }
  writeJsonAtomic(path.join(run.dir, "state.json"), run.state)
}

const setPhase = (run: Run, phase: RunPhase) => {
  emit(run, "run.phase", { phase })
  update(run, { phase })
}

const finish = (run: Run, patch: Partial<RunState>) => {
  const finishedAt = new Date()
  update(run, {
    ...patch,
    phase: "DONE",
    // The state carried by `run.finished` counts that event itself.
    last_seq: (run.log?.lastSeq ?? run.state.last_seq) + 1,
    finished_at: finishedAt.toISOString(),
    usage: {
      ...run.state.usage,
      ...patch.usage,
      duration_ms: finishedAt.getTime() - Date.parse(run.state.started_at)
    }
  })
  emit(run, "run.finished", run.state)
  run.log?.close()
  run.log = undefined
}

/**
 * Runs a previous process left RUNNING were cut off: stop the agents they left behind, fail
 * the runs, keep their logs.
 */
const failCutOffRuns = (env: RunsEnv) =>
  Effect.gen(function* () {
    for (const entry of fs.readdirSync(env.runsDir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue
      const run = load(env, entry.name)
      if (run === undefined || ended(run.state)) continue
      yield* stopOrphan(run)
      run.log = RunLog.open(path.join(run.dir, "events.ndjson"))
      run.state = { ...run.state, last_seq: run.log.lastSeq }
      finish(run, {
        status: "FAILED",
        retryable: true,
        error: { code: "runtime_restarted", message: "The runtime restarted while the run was in progress" }
      })
    }
  })

const collect = (
  run: Run,
  checkedOut: ReadonlyArray<CheckedOut>,
  workspace: string,
  as: { readonly user: AgentUser | undefined; readonly home: string }
) =>
  Effect.gen(function* () {
    const filesDir = path.join(run.dir, "files")
    fs.mkdirSync(filesDir, { recursive: true })
    const diff = yield* changes(checkedOut, as)
    fs.writeFileSync(path.join(filesDir, "changes.diff"), diff)
    const files: Array<RunFile> = [describeFile(filesDir, "changes.diff", "DIFF")]
    for (const name of copyFlat(path.join(workspace, "artifacts"), path.join(filesDir, "artifacts"))) {
      files.push(describeFile(filesDir, `artifacts/${name}`, "ARTIFACT"))
    }
    for (const name of copyFlat(path.join(workspace, "outputs"), path.join(filesDir, "outputs"))) {
      files.push(describeFile(filesDir, `outputs/${name}`, "OUTPUT"))
    }
    return files
  })

const outcomePatch = (outcome: AgentOutcome): Partial<RunState> => {
  const usage = { ...outcome.usage, duration_ms: 0 }
  if (outcome.error !== undefined) {
    return { status: "FAILED", retryable: false, exit_code: outcome.exitCode, error: outcome.error, usage }
  }
  if (outcome.exitCode === 0) return { status: "SUCCEEDED", exit_code: 0, usage }
  return {
    status: "FAILED",
    retryable: false,
    exit_code: outcome.exitCode,
    error: {
      code: "agent_failed",
      message:
        outcome.exitCode === null
          ? `The agent was ended by ${outcome.signal ?? "a signal"}`
          : `The agent exited with code ${outcome.exitCode}`
    },
    usage
  }
}

/**
 * One attempt in its workspace, as `user` when agents run under users of their own: lays out
 * the workspace, checks the repositories out, runs the agent within the time limit and
 * collects what it changed and left; answers how the run ends.
 */
const runAgent = (
  config: RuntimeSettings,
  run: Run,
  request: RunRequest,
  adapter: AgentAdapter,
  workspace: string,
  user: AgentUser | undefined
) =>
  Effect.gen(function* () {
    const secrets = secretsOf(request)
    const repos = path.join(workspace, "repos")
    const homeDir = path.join(workspace, "home")
    const outputDir = path.join(workspace, "outputs")
    const artifactsDir = path.join(workspace, "artifacts")
    fs.mkdirSync(workspace, { recursive: true, mode: 0o700 })
    if (user !== undefined) {
      // The agent's group may enter the directory, not list or change it.
      fs.chownSync(workspace, process.getuid?.() ?? 0, user.gid)
      fs.chmodSync(workspace, 0o710)
    }
    for (const dir of [repos, homeDir, path.join(homeDir, "tmp"), outputDir, artifactsDir]) {
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 })
    }
    const checkedOut = yield* checkout(repos, request.repositories)
    // The checkout is the agent's from here on (git runs as its user when collecting);
    // what the adapter writes into home/ is handed over again right before it spawns.
    if (user !== undefined) for (const dir of [repos, homeDir, outputDir, artifactsDir]) handOver(dir, user)
    setPhase(run, "AGENT")
    const outcome = yield* adapter({
      request,
      workspace: repos,
      outputDir,
      artifactsDir,
      homeDir,
      grace: config.cancelGrace,
      emit: (type, data) => {
        emit(run, type, redact(data, secrets))
      },
      onSpawn: (pid) => fs.writeFileSync(path.join(run.dir, "agent.pid"), `${pid}\n`),
      runAs: user === undefined ? undefined : { user, handOver: [homeDir, outputDir, artifactsDir] }
    }).pipe(Effect.timeoutOption(Duration.seconds(request.time_limit_seconds)))
    if (Option.isNone(outcome)) {
      return {
        status: "FAILED",
        retryable: false,
        error: {
          code: "time_limit_exceeded",
          message: `The agent did not finish within ${request.time_limit_seconds} s`
        }
      } satisfies Partial<RunState>
    }
    if (outcome.value.exitCode !== 0 && outcome.value.stderrTail.length > 0) {
      emit(run, "agent.stderr", redact({ lines: outcome.value.stderrTail }, secrets))
    }
    setPhase(run, "COLLECTING")
    const files = yield* collect(run, checkedOut, workspace, { user, home: homeDir })
    return { ...outcomePatch(outcome.value), files }
  })

const execute = (env: RunsEnv, run: Run, request: RunRequest, adapter: AgentAdapter) => {
  const workspace = path.join(env.workspacesDir, run.attemptId)
  // A user of its own for the attempt (as root); the workspace is locked and the user
  // deleted however the attempt ends, before the run is reported finished.
  const attempt = Effect.acquireUseRelease(
    env.users.acquire,
    (user) => runAgent(env.config, run, request, adapter, workspace, user),
    (user) =>
      user === undefined
        ? Effect.void
        : Effect.try(() => lockWorkspace(workspace)).pipe(Effect.ignore, Effect.andThen(env.users.release(user)))
  )
  const removeWorkspace = Effect.sleep(env.config.workspaceRetention).pipe(
    Effect.andThen(Effect.sync(() => fs.rmSync(workspace, { recursive: true, force: true })))
  )
  return attempt.pipe(
    Effect.catchTag("WorkspaceError", (error) =>
      Effect.succeed({
        status: "FAILED",
        retryable: true,
        error: { code: "checkout_failed", message: error.message }
      } satisfies Partial<RunState>)
    ),
    Effect.catchTag("AgentUserError", (error) =>
      Effect.succeed({
        status: "FAILED",
        retryable: true,
        error: { code: "agent_user_unavailable", message: error.message }
      } satisfies Partial<RunState>)
    ),
    Effect.onExit((exit) =>
      Effect.sync(() => {
        if (exit._tag === "Success") finish(run, exit.value)
        else if (run.cancelRequested) finish(run, { status: "CANCELLED", retryable: false })
        else
          finish(run, {
            status: "FAILED",
            retryable: true,
            error: { code: "runtime_error", message: "The runtime failed while running the agent" }
          })
      })
    ),
    Effect.andThen(Effect.forkIn(removeWorkspace, env.scope)),
    Effect.asVoid
  )
}

const activeCount = (env: RunsEnv) => {
  let active = 0
  for (const run of env.runs.values()) if (!ended(run.state)) active++
  return active
}

/** A new run's directory, request record, first state and open log. */
const createRun = (env: RunsEnv, request: RunRequest, fingerprint: string): Run => {
  const dir = path.join(env.runsDir, request.attempt_id)
  fs.mkdirSync(dir, { recursive: true })
  const stored: StoredRequest = { run_id: request.run_id, attempt_id: request.attempt_id, fingerprint }
  writeJsonAtomic(path.join(dir, "request.json"), { ...stored, agent: request.agent })
  return {
    attemptId: request.attempt_id,
    dir,
    fingerprint,
    state: {
      run_id: request.run_id,
      attempt_id: request.attempt_id,
      agent: request.agent.kind,
      status: "RUNNING",
      phase: "PREPARING",
      retryable: false,
      exit_code: null,
      error: null,
      usage: { input_tokens: 0, output_tokens: 0, cost_usd: null, duration_ms: 0 },
      files: [],
      last_seq: 0,
      started_at: new Date().toISOString(),
      finished_at: null
    },
    log: RunLog.open(path.join(dir, "events.ndjson")),
    fiber: undefined,
    cancelRequested: false
  }
}

const start = Effect.fn("Runs.start")(function* (env: RunsEnv, request: RunRequest) {
  const canonical = canonicalJson(request)
  const fingerprint = createHmac("sha256", env.key).update(canonical).digest("hex")
  const existing = load(env, request.attempt_id)
  if (existing !== undefined) {
    if (existing.state.run_id !== request.run_id) {
      return yield* new RunConflict({ message: `Attempt ${request.attempt_id} belongs to another run` })
    }
    // A run started before fingerprints had a key of their own was fingerprinted with the token.
    const legacy = () => createHmac("sha256", Redacted.value(env.config.token)).update(canonical).digest("hex")
    if (existing.fingerprint !== fingerprint && existing.fingerprint !== legacy()) {
      return yield* new RunConflict({
        message: `Run ${request.run_id} attempt ${request.attempt_id} was started with a different request`
      })
    }
    return { state: existing.state, created: false }
  }
  const adapter = adapterFor(env, request)
  if (adapter instanceof UnknownAgent) return yield* adapter
  if (activeCount(env) >= env.config.maxRuns) return yield* new TooManyRuns({ maxRuns: env.config.maxRuns })
  const run = createRun(env, request, fingerprint)
  env.runs.set(request.attempt_id, run)
  setPhase(run, "PREPARING")
  run.fiber = yield* Effect.forkIn(execute(env, run, request, adapter), env.scope)
  return { state: run.state, created: true }
})

/** The run's events after `after` as NDJSON lines, then new ones as they come, with heartbeats between. */
const followLog = (run: Run, after: number, heartbeatEvery: Duration.Duration) =>
  Stream.callback<string>((queue) =>
    Effect.gen(function* () {
      let last = after
      let replaying = true
      let done = false
      const pending: Array<RunEvent> = []
      const deliver = (event: RunEvent) => {
        if (done || event.seq <= last) return
        last = event.seq
        Queue.offerUnsafe(queue, `${JSON.stringify(event)}\n`)
        if (event.type === "run.finished") {
          done = true
          Queue.endUnsafe(queue)
        }
      }
      // Subscribe before reading the file: an event appended in between is in one or the other.
      const unsubscribe = run.log?.subscribe((event) => (replaying ? pending.push(event) : deliver(event)))
      for (const event of readEvents(path.join(run.dir, "events.ndjson"), after)) deliver(event)
      replaying = false
      for (const event of pending) deliver(event)
      if (!done && ended(run.state)) {
        done = true
        Queue.endUnsafe(queue)
      }
      const heartbeat = setInterval(() => {
        if (done) return
        Queue.offerUnsafe(
          queue,
          `${JSON.stringify({ type: "heartbeat", at: new Date().toISOString(), phase: run.state.phase, last_seq: last })}\n`
        )
      }, Duration.toMillis(heartbeatEvery))
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          clearInterval(heartbeat)
          unsubscribe?.()
        })
      )
    })
  )

const cancel = Effect.fn("Runs.cancel")(function* (env: RunsEnv, attemptId: string) {
  const run = load(env, attemptId)
  if (run === undefined) return Option.none()
  if (!ended(run.state) && run.fiber !== undefined) {
    run.cancelRequested = true
    yield* Fiber.interrupt(run.fiber)
  }
  return Option.some(run.state)
})

export class Runs extends Context.Service<
  Runs,
  {
    readonly maxRuns: number
    readonly activeCount: () => number
    /** Starts the run, or returns the one already started with this key and the same request. */
    readonly start: (
      request: RunRequest
    ) => Effect.Effect<
      { readonly state: RunState; readonly created: boolean },
      RunConflict | TooManyRuns | UnknownAgent
    >
    readonly state: (attemptId: string) => Effect.Effect<Option.Option<RunState>>
    /** The NDJSON tail after `after`, ending after `run.finished`; none for an unknown run. */
    readonly tail: (attemptId: string, after: number) => Effect.Effect<Option.Option<Stream.Stream<string>>>
    readonly cancel: (attemptId: string) => Effect.Effect<Option.Option<RunState>>
    /** A file of a finished run, by the path its `files` entry gives. */
    readonly file: (
      attemptId: string,
      filePath: string
    ) => Effect.Effect<Option.Option<{ readonly meta: RunFile; readonly absolute: string }>>
  }
>()("bosun/runtime/Runs") {
  static readonly layer = Layer.effect(
    Runs,
    Effect.gen(function* () {
      const config = yield* RuntimeConfig
      const toolchain = yield* Toolchain
      const users = yield* AgentUsers
      const scope = yield* Effect.scope
      const directories = yield* prepareDirectories(config, users)
      const env: RunsEnv = { config, toolchain, users, scope, ...directories, runs: new Map<string, Run>() }
      yield* failCutOffRuns(env)

      // Stopping the runtime ends its runs' processes; their state stays RUNNING on disk, so the
      // next start reports them cut off by a restart.
      yield* Scope.addFinalizer(
        scope,
        Effect.forEach(
          [...env.runs.values()],
          (run) => (run.fiber === undefined ? Effect.void : Fiber.interrupt(run.fiber)),
          {
            discard: true
          }
        )
      )

      return Runs.of({
        maxRuns: config.maxRuns,
        activeCount: () => activeCount(env),
        start: (request) => start(env, request),
        state: (attemptId) => Effect.sync(() => Option.fromNullishOr(load(env, attemptId)?.state)),
        tail: (attemptId, after) =>
          Effect.sync(() => {
            const run = load(env, attemptId)
            return run === undefined ? Option.none() : Option.some(followLog(run, after, config.heartbeat))
          }),
        cancel: (attemptId) => cancel(env, attemptId),
        file: (attemptId, filePath) =>
          Effect.sync(() => {
            const run = load(env, attemptId)
            const meta = run?.state.files.find((entry) => entry.path === filePath)
            if (run === undefined || meta === undefined) return Option.none()
            return Option.some({ meta, absolute: path.join(run.dir, "files", meta.path) })
          })
      })
    })
  )
}

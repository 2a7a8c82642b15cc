/**
 * `npm run bench:scheduler`: the cluster's run pipeline end to end — the Scheduler claiming queued
 * jobs, one `RunAttemptWorkflow` per attempt on the real runtime process (CUSTOM profiles,
 * EXTERNAL_RUNTIME), events flushed to `workflow_events` and fanned out by the run's `RunEvents`
 * entity to SSE subscribers — each figure beside a baseline taken in the same run on the same
 * runtime process:
 *
 * 1. **Throughput**: BENCH_RUNS runs (default 200) of a profile whose command finishes at once,
 *    committed in one transaction, until all have ended (the last `finished_at`) → runs/s, with
 *    the CPU each run cost the server, the runtime (with its git and agent children) and Postgres
 *    (every `postgres` process on the machine), and the database transactions per run.
 *    Baseline: the same runs posted straight to the runtime (`POST /v1/runs`, then its tail to
 *    `run.finished`) with the same concurrency (BENCH_CONCURRENCY, default 16, which is also the
 *    server's `BOSUN_LANE_AGENT_CONCURRENCY`).
 * 2. **Commit → first runtime event**: BENCH_LATENCY_RUNS sequential runs (default 30, after 3
 *    warm-ups), from the moment the run row's transaction committed (its COMMIT answered here) to
 *    the run's first runtime event (seq 1) arriving at an SSE subscriber of
 *    `.../workflow-runs/{run}/events/stream` opened right after the commit — what someone
 *    watching the run sees; a run counts as undelivered when the event has not arrived 1 s after
 *    the run ended. Also shown: commit → the flush that committed the event, and the stages in
 *    between from the database (the claim, the steps' start and end, the runtime's time for the
 *    event). Baseline: `POST /v1/runs` → first event on the runtime's own tail.
 * 3. **Fan-out**: BENCH_SUBSCRIBERS SSE subscribers (default 1,000) on one run whose agent prints
 *    BENCH_FANOUT_EVENTS events (default 2,000) evenly over BENCH_FANOUT_SECONDS (default 10),
 *    starting once every subscriber has the run's earlier events (or after 30 s). The delivery
 *    delay runs from the flush that committed the event — a statement trigger this benchmark adds
 *    to its own database stamps `clock_timestamp()` at the end of the flush's INSERT, the last
 *    statement before its COMMIT, after which the server publishes to RunEvents — to its arrival
 *    at each subscriber. Also shown: the whole path from the agent printing the event, which adds
 *    the runtime and the flush's batching (`BOSUN_EVENT_FLUSH_INTERVAL` 1 s / 100 events).
 *    Throughput is subscribers × events/s: every delivery over the span from the first event's
 *    commit to the last arrival. RSS is the server's VmRSS from /proc sampled every 50 ms, peak
 *    during the fan-out, beside the V8 heap the server logs. The subscribers read on
 *    BENCH_CLIENT_THREADS worker threads (default 2). Baseline: a bare `node:http` SSE server in
 *    its own process writing the same events to as many connections, in the batches Bosun's
 *    flushes committed them, at the same offsets; its delay runs from the start of each batch's
 *    write — on a small machine it is also this client's floor.
 *
 * The server (`bench/scheduler/server.ts`, or BENCH_SERVER_SCRIPT, an entry point built the same
 * way, to try a change) runs with production defaults but for the lane concurrency; this
 * benchmark's transactions end with a NOTIFY on which the server wakes the Scheduler, as
 * production code wakes it after its commit. Everything — the server, the runtime, the bare
 * server, temporary directories, the database — is removed at the end, on failure and Ctrl-C too.
 * Targets (printed, never an exit code): commit → first event at a subscriber p50 < 150 ms,
 * fan-out p99 < 50 ms, server RSS < 400 MB. BENCH_CPU_PROFILE=<dir> runs the server under
 * `--cpu-prof` into that directory. Database: a fresh one on DATABASE_URL, else on an embedded
 * Postgres (`BenchDatabase.ts`). Figures go to `.bench/scheduler.json`.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import { RunQueue } from "@bosun/actors/jobs/RunQueue"
import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { makeFixtures, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { benchDatabase } from "./BenchDatabase.ts"
import { benchRoot, runContext, writeReport } from "./Report.ts"
import { SERVER_NODE_FLAGS } from "./ServerFlags.ts"
import { now, type Subscriber, subscribe, subscribeMany } from "./scheduler/SseSubscribers.ts"

const settings = {
  runs: Number(process.env.BENCH_RUNS ?? 200),
  latencyRuns: Number(process.env.BENCH_LATENCY_RUNS ?? 30),
  warmups: 3,
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 16),
  subscribers: Number(process.env.BENCH_SUBSCRIBERS ?? 1000),
  fanoutEvents: Number(process.env.BENCH_FANOUT_EVENTS ?? 2000),
  fanoutSeconds: Number(process.env.BENCH_FANOUT_SECONDS ?? 10),
  clientThreads: Number(process.env.BENCH_CLIENT_THREADS ?? 2),
  serverScript: path.resolve(process.env.BENCH_SERVER_SCRIPT ?? path.join(benchRoot, "bench/scheduler/server.ts")),
  cpuProfileDir: process.env.BENCH_CPU_PROFILE
}
const targets = { firstEventP50Ms: 150, fanoutP99Ms: 50, rssMb: 400 }
const WAKE_CHANNEL = "bosun_bench_wake"
const ORG = "bench"
/** How long after a run ended its first event may still arrive at the subscriber. */
const DELIVERY_GRACE_MS = 1000

// ---------------------------------------------------------------------------------------------
// Helpers

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits

/** The q-quantile (nearest rank); sorts `values` in place. NaN when there are none. */
const quantile = (values: Float64Array | Array<number>, q: number) => {
  if (values.length === 0) return Number.NaN
  const sorted = values instanceof Float64Array ? values.sort() : values.sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
}
const spread = (values: Float64Array | Array<number>) => ({
  p50: round(quantile(values, 0.5)),
  p99: round(quantile(values, 0.99)),
  max: round(quantile(values, 1))
})
const median = (values: Array<number>) => round(quantile(values, 0.5))
const ms = (s: { readonly p50: number; readonly p99: number }) =>
  Number.isNaN(s.p50) ? "n/a (nothing arrived)" : `p50 ${s.p50} ms, p99 ${s.p99} ms`
const mark = (ok: boolean) => (ok ? "PASS" : "MISS")

/** Polls `check` every `everyMs` until it answers something other than undefined; throws after `timeoutMs`. */
const until = async <A>(
  what: string,
  check: () => Promise<A | undefined> | A | undefined,
  timeoutMs: number,
  everyMs = 20
) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
}
/** Like `until`, but answers false instead of throwing. */
const within = (check: () => boolean, timeoutMs: number) =>
  until("", () => (check() ? true : undefined), timeoutMs, 50).catch(() => false)

/** VmRSS of a process in MB. */
const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024
/** CPU seconds (user + system) a process has used, with its reaped children's when `children`. */
const cpuSeconds = (pid: number, children = false) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  const fields = stat
    .slice(stat.lastIndexOf(")") + 2)
    .split(" ")
    .map(Number)
  const own = (fields[11] ?? 0) + (fields[12] ?? 0)
  return (children ? own + (fields[13] ?? 0) + (fields[14] ?? 0) : own) / 100
}
/** CPU seconds every `postgres` process on this machine has used (other users of the server count too). */
const postgresCpuSeconds = () =>
  fs
    .readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .reduce((sum, pid) => {
      const comm = fs.existsSync(`/proc/${pid}/comm`) ? fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() : ""
      if (comm !== "postgres") return sum
      return sum + (fs.existsSync(`/proc/${pid}/stat`) ? cpuSeconds(Number(pid), true) : 0)
    }, 0)
/** Samples a process's RSS every 50 ms and its CPU time; `stop` answers the peak RSS and the CPU seconds used. */
const watch = (pid: number) => {
  const idle = rssMb(pid)
  const cpuBefore = cpuSeconds(pid)
  let peak = idle
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMb(pid))
  }, 50)
  return {
    idle,
    stop: () => {
      clearInterval(timer)
      return { peak: Math.max(peak, rssMb(pid)), cpu: cpuSeconds(pid) - cpuBefore }
    }
  }
}

/** A Node child process whose output is kept (the last 64 KB) for error messages; `onLine` sees each stdout line. */
const spawnKept = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, onLine?: (line: string) => void) => {
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  let partial = ""
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-65_536)
  }
  child.stdout?.on("data", (chunk: Buffer) => {
    keep(chunk)
    if (onLine === undefined) return
    const lines = (partial + chunk.toString()).split("\n")
    partial = lines.pop() ?? ""
    for (const line of lines) onLine(line)
  })
  child.stderr?.on("data", keep)
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  return { child, pid: child.pid ?? 0, output: () => output, exited }
}

/** SIGTERM (a CPU profile is written on the way out), SIGKILL after `graceMs`. */
const stopChild = async (child: ChildProcess, exited: Promise<void>, graceMs = 10_000) => {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill("SIGTERM")
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs)
  await exited
  clearTimeout(timer)
}

/** The server's last output, shown when the benchmark fails. */
let serverOutput = () => ""

/** What to undo, in reverse order: after a failure and on Ctrl-C too. */
const cleanup: Array<() => Promise<void> | void> = []
let cleaning: Promise<void> | undefined
const cleanUp = () => {
  cleaning ??= (async () => {
    for (const step of cleanup.reverse()) {
      await Promise.resolve()
        .then(step)
        .catch((error: unknown) => console.error("cleanup:", error))
    }
  })()
  return cleaning
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void cleanUp().then(() => process.exit(130))
  })
}

// ---------------------------------------------------------------------------------------------
// The runtime straight (the baselines of throughput and latency)

const runtimeHeaders = {
  authorization: `Bearer ${TOKEN}`,
  "x-bosun-protocol": "1.0",
  "content-type": "application/json"
}
let directCounter = 0

/** Posts a run to the runtime and follows its tail to `run.finished`: when its first event came, and the end. */
const directRun = async (base: string, repoUrl: string, profile: string) => {
  directCounter++
  const attemptId = `direct-${directCounter}:1`
  const started = now()
  const posted = await fetch(`${base}/v1/runs`, {
    method: "POST",
    headers: runtimeHeaders,
    body: JSON.stringify({
      run_id: `direct-${directCounter}`,
      attempt_id: attemptId,
      agent: { kind: "CUSTOM", profile },
      model: "bench/none",
      prompt: "go",
      repositories: [{ id: "repo", url: repoUrl, ref: "main", path: "repo", credential: null }],
      mcp_servers: [],
      skills: [],
      egress_tier: "STRICT",
      time_limit_seconds: 300,
      credential_mode: "INLINE",
      provider_credentials: {}
    })
  })
  if (posted.status !== 201) throw new Error(`POST /v1/runs answered ${posted.status}: ${await posted.text()}`)
  const tail = await fetch(`${base}/v1/runs/${attemptId}/events?after=0`, { headers: runtimeHeaders })
  if (tail.body === null) throw new Error("the runtime's tail has no body")
  let firstEventAt = 0
  let buffered = ""
  const decoder = new TextDecoder()
  for await (const chunk of tail.body) {
    buffered += decoder.decode(chunk, { stream: true })
    if (firstEventAt === 0 && buffered.includes('"seq"')) firstEventAt = now()
  }
  if (!buffered.includes('"type":"run.finished"')) throw new Error(`the direct run ${attemptId} did not finish`)
  return { firstEventMs: firstEventAt - started, totalMs: now() - started }
}

// ---------------------------------------------------------------------------------------------
// The setting: runtime, database, server, a member's session

const setUp = async () => {
  const fixtures = makeFixtures()
  cleanup.push(() => fs.rmSync(fixtures.root, { recursive: true, force: true }))
  const goFile = path.join(fixtures.root, "go")
  const runtimeMaxRuns = settings.concurrency + 4
  const runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "runtime"),
    BOSUN_RUNTIME_MAX_RUNS: String(runtimeMaxRuns),
    BOSUN_RUNTIME_AGENTS: JSON.stringify({
      quick: { command: [fixtures.script("quick.sh", `echo '{"type":"done"}'`)] },
      steady: {
        command: [
          process.execPath,
          path.join(benchRoot, "bench/scheduler/steady-agent.ts"),
          goFile,
          String(settings.fanoutEvents),
          String(settings.fanoutSeconds)
        ]
      }
    })
  })
  cleanup.push(async () => {
    const timer = setTimeout(() => runtime.child.kill("SIGKILL"), 10_000)
    await runtime.stop()
    clearTimeout(timer)
  })

  const scope = await Effect.runPromise(Scope.make())
  cleanup.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  const db = await Effect.runPromise(benchDatabase(scope, { maxConnections: 4 }))
  cleanup.push(() => Effect.runPromise(db.drop))
  const pgConfig = Context.get(db.context, PgClient.PgClient).config
  const databaseUrl = pgConfig.url === undefined ? "" : Redacted.value(pgConfig.url)
  const query = <A>(statement: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown, SqlClient.SqlClient>) =>
    Effect.runPromise(Effect.provide(Effect.flatMap(SqlClient.SqlClient, statement), db.context))
  // The flush-commit stamp: one time per flush statement, taken just before its COMMIT.
  await query((sql) =>
    Effect.all([
      sql`CREATE TABLE bench_event_flushes (
            run_id text NOT NULL, seq bigint NOT NULL, flushed_at timestamptz NOT NULL, PRIMARY KEY (run_id, seq))`,
      sql.unsafe(`
        CREATE FUNCTION bench_stamp_flush() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE stamp timestamptz := clock_timestamp();
        BEGIN
          INSERT INTO bench_event_flushes (run_id, seq, flushed_at) SELECT run_id, seq, stamp FROM inserted;
          RETURN NULL;
        END $$`),
      sql.unsafe(`
        CREATE TRIGGER bench_stamp_flush AFTER INSERT ON workflow_events
        REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION bench_stamp_flush()`)
    ])
  )

  const port = await Effect.runPromise(freePort)
  const dataDir = fs.mkdtempSync(path.join(fixtures.root, "server-"))
  const masterKey = randomBytes(32).toString("base64")
  const inherited: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("BOSUN_") && key !== "DATABASE_URL" && key !== "REDIS_URL") inherited[key] = value
  }
  const instanceEnv = { DATABASE_URL: databaseUrl, BOSUN_MASTER_KEY: masterKey, BOSUN_DATA_DIR: dataDir }
  const profileFlags =
    settings.cpuProfileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${path.resolve(settings.cpuProfileDir)}`]
  // The server's own view of its memory (`bench_memory`, once a second).
  const memory: Array<{ at: number; rss: number; heapUsed: number }> = []
  const onLine = (line: string) => {
    if (!line.includes('"bench_memory"')) return
    const logged = JSON.parse(line) as { rss_mb: number; heap_used_mb: number }
    memory.push({ at: now(), rss: logged.rss_mb, heapUsed: logged.heap_used_mb })
  }
  const server = spawnKept(
    [...SERVER_NODE_FLAGS, ...profileFlags, settings.serverScript],
    {
      ...inherited,
      ...instanceEnv,
      BOSUN_PORT: String(port),
      BOSUN_RUNNER_PORT: String(await Effect.runPromise(freePort)),
      BOSUN_RUNTIME_URL: runtime.base,
      BOSUN_RUNTIME_TOKEN: TOKEN,
      BOSUN_LANE_AGENT_CONCURRENCY: String(settings.concurrency),
      BENCH_REPO_URL: fixtures.repoUrl,
      BENCH_WAKE_CHANNEL: WAKE_CHANNEL
    },
    onLine
  )
  cleanup.push(() => stopChild(server.child, server.exited))
  serverOutput = server.output
  const base = `http://127.0.0.1:${port}`
  await until(
    "the server to be ready",
    async () => {
      if (server.child.exitCode !== null) throw new Error(`the server exited: ${server.output()}`)
      const ready = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
        (response) => response.status === 200,
        () => false
      )
      return ready && server.output().includes("bench_wake_listening") ? true : undefined
    },
    90_000,
    100
  )

  // A member's session cookie, through the operator CLI (which creates the organization too).
  const cli = await promisify(execFile)(
    process.execPath,
    [
      path.join(benchRoot, "packages/server/src/cli/main.ts"),
      "sessions",
      "create",
      "--org",
      ORG,
      "--login",
      "bench-user"
    ],
    { env: { ...inherited, ...instanceEnv } }
  )
  const cookie = cli.stdout.trim().split("\n").pop() ?? ""
  if (!cookie.startsWith("bosun_session=")) throw new Error(`the CLI printed no session cookie: ${cli.stdout}`)

  /** Commits runs of `profiles` in one transaction ending with the wake-up NOTIFY; answers their ids and when the COMMIT answered. */
  const enqueue = async (profiles: ReadonlyArray<string>) => {
    const ids = await query((sql) =>
      sql.withTransaction(
        Effect.gen(function* () {
          const runQueue = yield* RunQueue
          const queued = yield* Effect.forEach(profiles, (profile) =>
            runQueue.enqueue({
              organizationId: ORG,
              repositoryId: null,
              workflowType: "bench_run",
              lane: "AGENT",
              inputSnapshot: { profile }
            })
          )
          yield* sql`SELECT pg_notify(${WAKE_CHANNEL}, '')`
          return queued.map((row) => row.runId)
        }).pipe(Effect.provide(RunQueue.layer))
      )
    )
    return { ids, committedAt: now() }
  }
  const untilEnded = (runId: string, timeoutMs = 60_000) =>
    until(
      `run ${runId} to end`,
      async () => {
        const [row] = await query(
          (sql) =>
            sql<{ status: string }>`SELECT status FROM workflow_runs WHERE organization_id = ${ORG} AND id = ${runId}`
        )
        if (row?.status === "FAILED" || row?.status === "CANCELLED") {
          throw new Error(`run ${runId} ended ${row.status}; the server said: ${server.output().slice(-4000)}`)
        }
        return row?.status === "SUCCEEDED" ? row.status : undefined
      },
      timeoutMs,
      10
    )
  /** The server's RSS now and the heap V8 last reported (NaN from an entry point that does not log it). */
  const memoryNow = () => ({
    rss_mb: round(rssMb(server.pid)),
    heap_used_mb: memory[memory.length - 1]?.heapUsed ?? Number.NaN
  })
  /** The largest heap V8 reported since `since`. */
  const peakHeapSince = (since: number) =>
    memory
      .filter((sample) => sample.at >= since)
      .reduce((peak, sample) => (Number.isNaN(peak) ? sample.heapUsed : Math.max(peak, sample.heapUsed)), Number.NaN)
  return {
    runtime,
    memoryNow,
    peakHeapSince,
    repoUrl: fixtures.repoUrl,
    goFile,
    runtimeMaxRuns,
    database: db.database,
    query,
    enqueue,
    untilEnded,
    server,
    inherited,
    subscribe: (runId: string) =>
      subscribe(`${base}/api/v1/organizations/${ORG}/workflow-runs/${runId}/events/stream?after=0`, { cookie }),
    subscribeMany: (runId: string, count: number, width: number) =>
      subscribeMany(
        count,
        `${base}/api/v1/organizations/${ORG}/workflow-runs/${runId}/events/stream?after=0`,
        { cookie },
        { threads: settings.clientThreads, width }
      )
  }
}
type Bench = Awaited<ReturnType<typeof setUp>>

// ---------------------------------------------------------------------------------------------
// 2. Commit → first runtime event, sequential runs, beside POST /v1/runs → first event on the tail

interface StageRow {
  readonly id: string
  readonly claimed: string
  readonly prepare_start: string
  readonly prepare_end: string
  readonly acquire_start: string
  readonly acquire_end: string
  readonly execute_start: string
  readonly event_at: string
  readonly flushed: string
}

const measureLatency = async (bench: Bench) => {
  const runs: Array<{ runId: string; committedAt: number; firstAt: number }> = []
  const direct: Array<number> = []
  for (let i = 0; i < settings.warmups + settings.latencyRuns; i++) {
    const { ids, committedAt } = await bench.enqueue(["quick"])
    const runId = ids[0] ?? ""
    const subscriber = bench.subscribe(runId)
    await bench.untilEnded(runId)
    await within(() => subscriber.receipts[1] !== 0, DELIVERY_GRACE_MS)
    subscriber.close()
    const straight = await directRun(bench.runtime.base, bench.repoUrl, "quick")
    if (i < settings.warmups) continue
    runs.push({ runId, committedAt, firstAt: subscriber.receipts[1] ?? 0 })
    direct.push(straight.firstEventMs)
  }
  const rows = await bench.query(
    (sql) => sql<StageRow>`
      SELECT r.id,
        extract(epoch FROM a.started_at) * 1000 AS claimed,
        extract(epoch FROM p.started_at) * 1000 AS prepare_start, extract(epoch FROM p.finished_at) * 1000 AS prepare_end,
        extract(epoch FROM q.started_at) * 1000 AS acquire_start, extract(epoch FROM q.finished_at) * 1000 AS acquire_end,
        extract(epoch FROM x.started_at) * 1000 AS execute_start,
        extract(epoch FROM e.created_at) * 1000 AS event_at, extract(epoch FROM f.flushed_at) * 1000 AS flushed
      FROM workflow_runs r
      JOIN workflow_attempts a ON a.run_id = r.id AND a.attempt = 1
      JOIN workflow_attempt_steps p ON p.attempt_id = a.id AND p.step = 'prepare'
      JOIN workflow_attempt_steps q ON q.attempt_id = a.id AND q.step = 'acquire-sandbox'
      JOIN workflow_attempt_steps x ON x.attempt_id = a.id AND x.step = 'execute'
      JOIN workflow_events e ON e.run_id = r.id AND e.seq = 1
      JOIN bench_event_flushes f ON f.run_id = r.id AND f.seq = 1
      WHERE r.organization_id = ${ORG} AND r.id IN ${sql.in(runs.map((run) => run.runId))}`
  )
  const byRun = new Map(rows.map((row) => [row.id, row]))
  const measured = runs.flatMap((run) => {
    const row = byRun.get(run.runId)
    if (row === undefined) return []
    const at = (name: Exclude<keyof StageRow, "id">) => Number(row[name])
    return [{ ...run, at, delivered: run.firstAt !== 0 }]
  })
  type Measured = (typeof measured)[number]
  const stage = (from: (run: Measured) => number, to: (run: Measured) => number, runs = measured) =>
    median(runs.map((run) => to(run) - from(run)))
  const delivered = measured.filter((run) => run.delivered)
  return {
    runs: measured.length,
    delivered_to_subscriber: delivered.length,
    bosun_commit_to_first_event_at_subscriber_ms: spread(delivered.map((run) => run.firstAt - run.committedAt)),
    bosun_commit_to_first_event_committed_ms: spread(measured.map((run) => run.at("flushed") - run.committedAt)),
    direct_post_to_first_event_ms: spread(direct),
    stages_p50_ms: {
      commit_to_claim: stage(
        (run) => run.committedAt,
        (run) => run.at("claimed")
      ),
      claim_to_prepare: stage(
        (run) => run.at("claimed"),
        (run) => run.at("prepare_start")
      ),
      prepare: stage(
        (run) => run.at("prepare_start"),
        (run) => run.at("prepare_end")
      ),
      prepare_to_acquire: stage(
        (run) => run.at("prepare_end"),
        (run) => run.at("acquire_start")
      ),
      acquire_sandbox: stage(
        (run) => run.at("acquire_start"),
        (run) => run.at("acquire_end")
      ),
      acquire_to_execute: stage(
        (run) => run.at("acquire_end"),
        (run) => run.at("execute_start")
      ),
      execute_start_to_runtime_event: stage(
        (run) => run.at("execute_start"),
        (run) => run.at("event_at")
      ),
      runtime_event_to_flush_commit: stage(
        (run) => run.at("event_at"),
        (run) => run.at("flushed")
      ),
      flush_commit_to_subscriber: stage(
        (run) => run.at("flushed"),
        (run) => run.firstAt,
        delivered
      )
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 1. Throughput: N runs at once, beside the same N straight to the runtime

const measureThroughput = async (bench: Bench) => {
  const transactions = () =>
    bench
      .query(
        (sql) => sql<{ n: string }>`
          SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`
      )
      .then((rows) => Number(rows[0]?.n ?? 0))
  const transactionsBefore = await transactions()
  const runtimePid = bench.runtime.child.pid ?? 0
  const runtimeCpuBefore = cpuSeconds(runtimePid, true)
  const postgresCpuBefore = postgresCpuSeconds()
  const batch = await bench.enqueue(Array.from({ length: settings.runs }, () => "quick"))
  const cpuBefore = cpuSeconds(bench.server.pid)
  const outcome = await until(
    `${settings.runs} runs to end`,
    async () => {
      const [row] = await bench.query(
        (sql) => sql<{ succeeded: string; failed: string; last: string | null }>`
          SELECT count(*) FILTER (WHERE status = 'SUCCEEDED') AS succeeded,
                 count(*) FILTER (WHERE status IN ('FAILED', 'CANCELLED')) AS failed,
                 extract(epoch FROM max(finished_at)) * 1000 AS last
          FROM workflow_runs WHERE organization_id = ${ORG} AND id IN ${sql.in(batch.ids)}`
      )
      const succeeded = Number(row?.succeeded ?? 0)
      const failed = Number(row?.failed ?? 0)
      return succeeded + failed === settings.runs ? { failed, last: Number(row?.last) } : undefined
    },
    300_000,
    100
  )
  const bosunSeconds = (outcome.last - batch.committedAt) / 1000
  const serverCpu = cpuSeconds(bench.server.pid) - cpuBefore
  const runtimeCpu = cpuSeconds(runtimePid, true) - runtimeCpuBefore
  const postgresCpu = postgresCpuSeconds() - postgresCpuBefore
  // Postgres publishes a backend's counts within a second of its transactions.
  await sleep(1500)
  const transactionsPerRun = ((await transactions()) - transactionsBefore) / settings.runs

  const directRuntimeCpuBefore = cpuSeconds(runtimePid, true)
  const started = now()
  let next = 0
  await Promise.all(
    Array.from({ length: settings.concurrency }, async () => {
      while (next < settings.runs) {
        next++
        await directRun(bench.runtime.base, bench.repoUrl, "quick")
      }
    })
  )
  const directSeconds = (now() - started) / 1000
  const directRuntimeCpu = cpuSeconds(runtimePid, true) - directRuntimeCpuBefore
  return {
    runs: settings.runs,
    concurrency: settings.concurrency,
    bosun_runs_per_s: round(settings.runs / bosunSeconds, 2),
    bosun_seconds: round(bosunSeconds, 2),
    bosun_failed: outcome.failed,
    bosun_server_cpu_ms_per_run: round((serverCpu * 1000) / settings.runs),
    bosun_database_transactions_per_run: round(transactionsPerRun),
    bosun_runtime_cpu_ms_per_run: round((runtimeCpu * 1000) / settings.runs),
    bosun_postgres_cpu_ms_per_run: round((postgresCpu * 1000) / settings.runs),
    direct_runs_per_s: round(settings.runs / directSeconds, 2),
    direct_seconds: round(directSeconds, 2),
    direct_runtime_cpu_ms_per_run: round((directRuntimeCpu * 1000) / settings.runs)
  }
}

// ---------------------------------------------------------------------------------------------
// 3. Fan-out: subscribers on one steady run, beside a bare node:http SSE server

/** Each subscriber's arrival of each event against when it was sent: delays, what is missing, deliveries/s. */
const deliveries = (subscribers: ReadonlyArray<Subscriber>, sent: ReadonlyArray<{ seq: number; at: number }>) => {
  const delays = new Float64Array(subscribers.length * sent.length)
  let n = 0
  let lastArrival = 0
  for (const subscriber of subscribers) {
    for (const { seq, at } of sent) {
      const arrival = subscriber.receipts[seq] ?? 0
      if (arrival === 0) continue
      delays[n++] = arrival - at
      lastArrival = Math.max(lastArrival, arrival)
    }
  }
  const firstSent = sent.reduce((first, event) => Math.min(first, event.at), Number.POSITIVE_INFINITY)
  return {
    delays: delays.subarray(0, n),
    delivered: n,
    missing: subscribers.length * sent.length - n,
    perSecond: n === 0 ? 0 : n / ((lastArrival - firstSent) / 1000),
    subscribersWithAll: subscribers.filter((s) => sent.every(({ seq }) => (s.receipts[seq] ?? 0) !== 0)).length,
    failed: subscribers.filter((s) => s.failed || (s.status !== 0 && s.status !== 200)).length,
    duplicates: subscribers.reduce((sum, s) => sum + s.duplicates, 0),
    reconnects: subscribers.reduce((sum, s) => sum + s.reconnects, 0)
  }
}

const measureFanout = async (bench: Bench) => {
  const { ids } = await bench.enqueue(["steady"])
  const runId = ids[0] ?? ""
  const readySeq = await until(
    "the fan-out agent's ready event",
    () =>
      bench
        .query(
          (sql) => sql<{ seq: string }>`
            SELECT seq FROM workflow_events
            WHERE organization_id = ${ORG} AND run_id = ${runId} AND type = 'agent.event' AND data->>'type' = 'ready'`
        )
        .then((rows) => (rows[0] === undefined ? undefined : Number(rows[0].seq))),
    60_000,
    50
  )
  const connectStarted = now()
  // Room for the run's own events (phases, ready, finished) beside the agent's.
  const { subscribers, close } = await bench.subscribeMany(runId, settings.subscribers, settings.fanoutEvents + 64)
  cleanup.push(close)
  const connectSeconds = (now() - connectStarted) / 1000
  // Live: it has the run's events so far, so what comes next arrives as it is published.
  await within(() => subscribers.every((s) => s.maxSeq >= readySeq), 30_000)
  const live = subscribers.filter((s) => s.maxSeq >= readySeq).length
  const watched = watch(bench.server.pid)
  const heapBefore = bench.memoryNow().heap_used_mb
  const goAt = now()
  fs.writeFileSync(bench.goFile, "")
  // A server that cannot keep up flushes late too: the run may still be going when this gives up.
  const ended = await bench.untilEnded(runId, (settings.fanoutSeconds + 60) * 1000).then(
    () => true,
    () => false
  )
  const events = await bench.query(
    (sql) => sql<{ seq: string; kind: string | null; agent_at: number | null; runtime_at: string; flushed: string }>`
      SELECT e.seq, e.data->>'type' AS kind, (e.data->>'t')::float8 AS agent_at,
             extract(epoch FROM e.created_at) * 1000 AS runtime_at, extract(epoch FROM f.flushed_at) * 1000 AS flushed
      FROM workflow_events e JOIN bench_event_flushes f ON f.run_id = e.run_id AND f.seq = e.seq
      WHERE e.organization_id = ${ORG} AND e.run_id = ${runId} ORDER BY e.seq`
  )
  const lastSeq = Number(events[events.length - 1]?.seq ?? 0)
  await within(() => subscribers.every((s) => s.maxSeq >= lastSeq), 30_000)
  const server = watched.stop()
  await close()

  const ticks = events
    .filter((event) => event.kind === "tick")
    .map((event) => ({
      seq: Number(event.seq),
      agentAt: Number(event.agent_at),
      runtimeAt: Number(event.runtime_at),
      flushed: Number(event.flushed)
    }))
  const fromCommit = deliveries(
    subscribers,
    ticks.map((tick) => ({ seq: tick.seq, at: tick.flushed }))
  )
  const fromAgent = deliveries(
    subscribers,
    ticks.map((tick) => ({ seq: tick.seq, at: tick.agentAt }))
  )
  // An event printed while nothing else comes waits for the flush window (1 s), not for the next event.
  const ready = events.find((event) => event.kind === "ready")
  const readyWait = ready === undefined ? Number.NaN : round(Number(ready.flushed) - Number(ready.runtime_at))
  const flushes = new Map<number, number>()
  for (const tick of ticks) flushes.set(tick.flushed, (flushes.get(tick.flushed) ?? 0) + 1)
  const firstFlush = Math.min(...flushes.keys())
  const batches = [...flushes.entries()]
    .sort(([a], [b]) => a - b)
    .map(([at, count]) => ({ atMs: at - firstFlush, count }))
  return {
    batches,
    figures: {
      subscribers: settings.subscribers,
      events: ticks.length,
      agent_seconds: round(((ticks[ticks.length - 1]?.agentAt ?? 0) - (ticks[0]?.agentAt ?? 0)) / 1000, 2),
      flushes: batches.length,
      run_ended: ended,
      connect_seconds: round(connectSeconds, 2),
      live_before_events: live,
      subscribers_with_every_event: fromCommit.subscribersWithAll,
      failed_subscriptions: fromCommit.failed,
      deliveries_per_s: Math.round(fromCommit.perSecond),
      events_per_s_per_subscriber: round(fromCommit.perSecond / settings.subscribers),
      missing: fromCommit.missing,
      duplicates: fromCommit.duplicates,
      reconnects: fromCommit.reconnects,
      flush_commit_to_subscriber_ms: spread(fromCommit.delays),
      agent_to_subscriber_ms: spread(fromAgent.delays),
      agent_to_runtime_ms_p50: median(ticks.map((tick) => tick.runtimeAt - tick.agentAt)),
      runtime_to_flush_commit_ms: spread(ticks.map((tick) => tick.flushed - tick.runtimeAt)),
      ready_event_runtime_to_flush_commit_ms: readyWait,
      rss_mb: { with_subscribers_before: round(watched.idle), peak: round(server.peak) },
      heap_used_mb: { with_subscribers_before: heapBefore, peak: bench.peakHeapSince(goAt) },
      cpu_seconds: round(server.cpu, 2),
      cpu_us_per_delivery: fromCommit.delivered === 0 ? null : round((server.cpu * 1e6) / fromCommit.delivered, 2)
    }
  }
}

const measureBareFanout = async (
  bench: Bench,
  batches: ReadonlyArray<{ readonly atMs: number; readonly count: number }>
) => {
  const port = await Effect.runPromise(freePort)
  const bare = spawnKept([path.join(benchRoot, "bench/scheduler/bare-sse.ts"), String(port)], bench.inherited)
  cleanup.push(() => stopChild(bare.child, bare.exited))
  const base = `http://127.0.0.1:${port}`
  const connections = () =>
    fetch(`${base}/connections`).then(
      async (response) => Number(await response.text()),
      () => -1
    )
  await until("the bare SSE server", async () => ((await connections()) >= 0 ? true : undefined), 30_000, 50)
  const total = batches.reduce((sum, batch) => sum + batch.count, 0)
  const { subscribers, close } = await subscribeMany(
    settings.subscribers,
    `${base}/stream`,
    {},
    { threads: settings.clientThreads, width: total + 1 }
  )
  cleanup.push(close)
  await until(
    "the bare server's connections",
    async () => ((await connections()) === settings.subscribers ? true : undefined),
    30_000,
    50
  )
  const watched = watch(bare.pid)
  await fetch(`${base}/go`, { method: "POST", body: JSON.stringify({ batches }) })
  await within(() => subscribers.every((s) => s.received >= total), (batches[batches.length - 1]?.atMs ?? 0) + 30_000)
  const server = watched.stop()
  const sent = (await fetch(`${base}/sent`).then((response) => response.json())) as Array<number>
  await close()
  await stopChild(bare.child, bare.exited)
  const fanout = deliveries(
    subscribers,
    Array.from({ length: total }, (_, index) => ({ seq: index + 1, at: sent[index + 1] ?? 0 }))
  )
  return {
    deliveries_per_s: Math.round(fanout.perSecond),
    events_per_s_per_subscriber: round(fanout.perSecond / settings.subscribers),
    missing: fanout.missing,
    write_to_subscriber_ms: spread(fanout.delays),
    rss_mb: { with_subscribers_before: round(watched.idle), peak: round(server.peak) },
    cpu_seconds: round(server.cpu, 2),
    cpu_us_per_delivery: fanout.delivered === 0 ? null : round((server.cpu * 1e6) / fanout.delivered, 2)
  }
}

/** Batches of the flush size at the rate the agent prints, for when the Bosun run committed no ticks. */
const evenBatches = () => {
  const batchSize = 100
  const count = Math.ceil(settings.fanoutEvents / batchSize)
  return Array.from({ length: count }, (_, i) => ({
    atMs: (i * settings.fanoutSeconds * 1000) / count,
    count: Math.min(batchSize, settings.fanoutEvents - i * batchSize)
  }))
}

// ---------------------------------------------------------------------------------------------

const main = async () => {
  const context = runContext("scheduler")
  try {
    const bench = await setUp()
    const serverScript = path.relative(benchRoot, settings.serverScript)
    console.log(
      `bench:scheduler — ${context.machine.cpus}× ${context.machine.cpu}, Node ${context.node}, database ${bench.database}, server ${serverScript}`
    )
    console.log(
      `settings: lane concurrency ${settings.concurrency}, runtime max runs ${bench.runtimeMaxRuns}; production defaults otherwise: ` +
        "event flush 1 s / 100 events, Scheduler idle tick 5 s, database pool 10, SSE stream 55 s"
    )
    const memory = { started: bench.memoryNow(), after_latency: bench.memoryNow(), after_throughput: bench.memoryNow() }
    const latency = await measureLatency(bench)
    memory.after_latency = bench.memoryNow()
    const throughput = await measureThroughput(bench)
    memory.after_throughput = bench.memoryNow()
    const fanout = await measureFanout(bench)
    const bare = await measureBareFanout(bench, fanout.batches.length > 0 ? fanout.batches : evenBatches())

    const l = latency
    const t = throughput
    const f = fanout.figures
    const verdict = {
      commit_to_first_event_p50: l.bosun_commit_to_first_event_at_subscriber_ms.p50 < targets.firstEventP50Ms,
      fanout_p99:
        f.missing === 0 && f.failed_subscriptions === 0 && f.flush_commit_to_subscriber_ms.p99 < targets.fanoutP99Ms,
      rss: f.rss_mb.peak < targets.rssMb
    }
    console.log("")
    console.log(`throughput: ${t.runs} runs of a command that finishes at once, ${t.concurrency} at a time`)
    console.log(
      `  bosun (Scheduler → RunAttemptWorkflow → runtime)  ${t.bosun_runs_per_s} runs/s (${t.bosun_seconds} s, ${t.bosun_failed} failed; per run: CPU ms server ${t.bosun_server_cpu_ms_per_run}, runtime + agents ${t.bosun_runtime_cpu_ms_per_run}, Postgres ${t.bosun_postgres_cpu_ms_per_run}; ${t.bosun_database_transactions_per_run} database transactions)`
    )
    console.log(
      `  direct (POST /v1/runs + tail)                     ${t.direct_runs_per_s} runs/s (${t.direct_seconds} s; per run: CPU ms runtime + agents ${t.direct_runtime_cpu_ms_per_run})`
    )
    console.log(`commit → first runtime event: ${l.runs} sequential runs`)
    console.log(
      `  bosun, at an SSE subscriber                      ${ms(l.bosun_commit_to_first_event_at_subscriber_ms)} (${l.delivered_to_subscriber}/${l.runs} arrived while the stream was open)   target p50 < ${targets.firstEventP50Ms} ms: ${mark(verdict.commit_to_first_event_p50)}`
    )
    console.log(`  bosun, committed in workflow_events              ${ms(l.bosun_commit_to_first_event_committed_ms)}`)
    console.log(`  direct, POST /v1/runs → first event on the tail  ${ms(l.direct_post_to_first_event_ms)}`)
    console.log(
      `  bosun stages, p50 ms: ${Object.entries(l.stages_p50_ms)
        .map(([name, value]) => `${name.replaceAll("_", " ")} ${Number.isNaN(value) ? "n/a" : value}`)
        .join(" | ")}`
    )
    console.log(
      `fan-out: ${f.subscribers} subscribers × ${f.events} events printed over ${f.agent_seconds} s, committed in ${f.flushes} flushes${f.run_ended ? "" : " (the run had not ended 60 s after its agent's last event)"}`
    )
    console.log(
      `  bosun: ${f.deliveries_per_s} deliveries/s = ${f.subscribers} × ${f.events_per_s_per_subscriber} events/s; flush commit → subscriber ${ms(f.flush_commit_to_subscriber_ms)}, max ${f.flush_commit_to_subscriber_ms.max} ms   target p99 < ${targets.fanoutP99Ms} ms, none missing: ${mark(verdict.fanout_p99)}`
    )
    console.log(
      `         subscribers: connected in ${f.connect_seconds} s, ${f.live_before_events} live before the events, ${f.subscribers_with_every_event} got every event, ${f.failed_subscriptions} failed; ${f.missing} deliveries missing, ${f.duplicates} duplicated, ${f.reconnects} streams ended by the server`
    )
    console.log(
      `         agent → subscriber ${ms(f.agent_to_subscriber_ms)} (agent → runtime p50 ${f.agent_to_runtime_ms_p50} ms, runtime → flush commit ${ms(f.runtime_to_flush_commit_ms)}); the agent's lone ready event waited ${f.ready_event_runtime_to_flush_commit_ms} ms for its flush`
    )
    console.log(
      `         server RSS ${f.rss_mb.with_subscribers_before} MB with the subscribers connected, peak ${f.rss_mb.peak} MB   target < ${targets.rssMb} MB: ${mark(verdict.rss)}; server CPU ${f.cpu_seconds} s (${f.cpu_us_per_delivery ?? "n/a"} µs/delivery)`
    )
    console.log(
      `         server memory, RSS / V8 heap used (MB): started ${memory.started.rss_mb} / ${memory.started.heap_used_mb}, after the latency runs ${memory.after_latency.rss_mb} / ${memory.after_latency.heap_used_mb}, after the throughput runs ${memory.after_throughput.rss_mb} / ${memory.after_throughput.heap_used_mb}, fan-out ${f.rss_mb.with_subscribers_before} / ${f.heap_used_mb.with_subscribers_before} → peak ${f.rss_mb.peak} / ${f.heap_used_mb.peak}`
    )
    console.log(
      `  bare node:http: ${bare.deliveries_per_s} deliveries/s = ${f.subscribers} × ${bare.events_per_s_per_subscriber} events/s; write → subscriber ${ms(bare.write_to_subscriber_ms)}, max ${bare.write_to_subscriber_ms.max} ms; ${bare.missing} missing; RSS ${bare.rss_mb.with_subscribers_before} MB, peak ${bare.rss_mb.peak} MB; CPU ${bare.cpu_seconds} s (${bare.cpu_us_per_delivery ?? "n/a"} µs/delivery)`
    )
    await writeReport("scheduler", {
      ...context,
      database: bench.database,
      server: serverScript,
      settings: {
        ...settings,
        runtimeMaxRuns: bench.runtimeMaxRuns,
        eventFlush: "1 s / 100 events",
        schedulerIdleTick: "5 s",
        databasePool: 10,
        sseStreamDuration: "55 s",
        wake: "NOTIFY at the benchmark's commit → LISTEN in the server → wakeScheduler"
      },
      targets,
      verdict,
      figures: { throughput, latency, fanout: { bosun: f, bare }, server_memory: memory }
    })
    console.log("figures written to .bench/scheduler.json")
  } catch (error) {
    console.error(`bench:scheduler failed; the server's last output:\n${serverOutput().slice(-8000)}`)
    throw error
  } finally {
    await cleanUp()
  }
}

await main()

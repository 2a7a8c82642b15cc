/**
 * `npm run bench:review`: the control plane's own cost of a pull-request review and of
 * acknowledging a webhook, each figure beside a baseline taken in the same run.
 *
 * 1. **Overhead per review**: BENCH_PRS pull requests (default 200, after 3 sequential warm-ups),
 *    their signed `pull_request` opened deliveries sent at BENCH_REVIEW_RATE per second (default 2,
 *    open loop) to the real server process, which verifies and records each, queues a `review` run
 *    from its inbox, and runs it (prepare against the fake GitHub, the runtime, publish, then the
 *    review's delivery on `bosun-effects`, which POSTs it) on the
 *    real runtime process with a CUSTOM profile, `fixed`, a shell script that writes the same
 *    `review.json` at once (a summary and two findings on lines of every pull request's diff, so
 *    the review carries two inline comments). t0 is just before the delivery is sent; t1 is when
 *    the review's `POST .../pulls/N/reviews` reached the fake GitHub (its request log, polled
 *    every 5 ms in this process); the agent's time is the runtime's own for the attempt
 *    (`finished_at - started_at` of `GET /v1/runs/{attempt}/result`: its checkout of the pull
 *    request's head over git smart HTTP, the script, collecting the outputs). Overhead is
 *    (t1 - t0) - agent time. The stages in between come from the database (delivery, inbox,
 *    claim, the attempt's steps). Baseline: the same runtime doing the same runs with no control
 *    plane — `POST /v1/runs` with the same profile and checkout (an installation token minted from
 *    the fake GitHub), then its tail to `run.finished` — at the same rate. The rate is low on
 *    purpose: a review costs the server, the runtime (with git) and Postgres about 360 ms of CPU
 *    together on the development machine, so 2/s keeps its two cores about 40% busy, and the
 *    figures are the path's, not a queue's (20/s would need seven cores).
 * 2. **Webhook ack latency**: signed `pull_request` labeled deliveries (each with a fresh
 *    `X-GitHub-Delivery`; verified, recorded and processed by the inbox, but starting no review)
 *    at BENCH_ACK_RATE per second (default 200) for BENCH_ACK_SECONDS (default 10) after a 1 s
 *    warm-up, open loop, request → answer; then how long the inbox took to process them all.
 *    Baseline: a bare `node:http` server in its own process (`bench/review/bare-webhook.ts`) that
 *    reads the body, verifies the signature with the same library and answers 202, at the same
 *    rate from the same client.
 *
 * The fake GitHub (`@bosun/testing` FakeGithub, with one git repository holding a commit per pull
 * request on its own branch and `refs/pull/N/head`) runs in this process: it is the outside world.
 * The server runs as `npm start` runs it (`SERVER_NODE_FLAGS`) on a fresh database (BenchDatabase:
 * DATABASE_URL, else an embedded Postgres), with production defaults (Postgres queues, no
 * REDIS_URL) but for the REVIEW lane (BENCH_REVIEW_CONCURRENCY, default 16; the runtime's
 * BOSUN_RUNTIME_MAX_RUNS is 4 more). The organization is set up as an operator would: the App by
 * `PUT .../github-app` (bootstrap token), an admin session from the operator CLI, the installation
 * by its webhook, an agent connection by `PUT .../opencode-connection/import` (a fake key: reviews
 * need one even for a custom profile). Everything — processes, temporary directories, the
 * database — is removed at the end, on failure and Ctrl-C too. Targets (printed, never an exit
 * code): overhead p50 < 300 ms, ack p99 < 25 ms. Figures go to `.bench/review.json`. Each phase
 * also shows the CPU it cost per review or delivery (server; runtime with its children; the
 * Postgres cluster, whoever else uses it) and the database's transactions. BENCH_CPU_PROFILE=<dir>
 * runs the server under `--cpu-prof` into that directory.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { generateKeyPairSync, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"
import { type ReviewOutput, RunState } from "@bosun/domain"
import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { appJwt } from "@bosun/testing/AppJwt"
import { FakeGithub } from "@bosun/testing/FakeGithub"
import { makeGitRepository } from "@bosun/testing/GitRepository"
import { protocolHeaders, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Exit, Layer, Redacted, References, Schema, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { benchDatabase } from "./BenchDatabase.ts"
import { benchRoot, runContext, writeReport } from "./Report.ts"
import {
  type Delivery,
  installationCreated,
  now,
  openLoop,
  pullRequestEvent,
  sign,
  type World,
  webhookClient
} from "./review/Webhooks.ts"
import { SERVER_NODE_FLAGS } from "./ServerFlags.ts"

const settings = {
  prs: Number(process.env.BENCH_PRS ?? 200),
  reviewRate: Number(process.env.BENCH_REVIEW_RATE ?? 2),
  concurrency: Number(process.env.BENCH_REVIEW_CONCURRENCY ?? 16),
  ackRate: Number(process.env.BENCH_ACK_RATE ?? 200),
  ackSeconds: Number(process.env.BENCH_ACK_SECONDS ?? 10),
  warmups: 3,
  ackWarmupSeconds: 1,
  cpuProfileDir: process.env.BENCH_CPU_PROFILE
}
const targets = { overheadP50Ms: 300, ackP99Ms: 25 }
const ORG = "bench"
const SLUG = "bosun-bench"
const PROFILE = "fixed"
const FILE = "src/handler.ts"
const WEBHOOK_PATH = "/api/v1/github/webhooks"
const world: World = { installationId: 81_001, appId: 4242, repositoryId: 91_001, repository: "acme/shop" }

// ---------------------------------------------------------------------------------------------
// Helpers

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const round = (value: number, digits = 1) => Math.round(value * 10 ** digits) / 10 ** digits

/** The q-quantile (nearest rank) of `values`. NaN when there are none. */
const quantile = (values: ReadonlyArray<number>, q: number) => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
}
const spread = (values: ReadonlyArray<number>) => ({
  p50: round(quantile(values, 0.5)),
  p95: round(quantile(values, 0.95)),
  p99: round(quantile(values, 0.99)),
  max: round(quantile(values, 1))
})
const median = (values: ReadonlyArray<number>) => round(quantile(values, 0.5))
const ms = (s: ReturnType<typeof spread>) =>
  Number.isNaN(s.p50) ? "n/a" : `p50 ${s.p50} ms, p95 ${s.p95} ms, p99 ${s.p99} ms, max ${s.max} ms`
const mark = (ok: boolean) => (ok ? "PASS" : "MISS")

/** Polls `check` every `everyMs` until it answers something other than undefined; throws after `timeoutMs`. */
const until = async <A>(
  what: string,
  check: () => Promise<A | undefined> | A | undefined,
  timeoutMs: number,
  everyMs = 50
) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(everyMs)
  }
}

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
/** The parent process id of `pid`. */
const parentOf = (pid: number) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
}
/**
 * CPU seconds the Postgres cluster whose postmaster is `postmaster` has used: it and its live
 * backends, with the ones that exited (reaped into its children's time). Other users of the
 * cluster count too; other clusters on the machine (tests' own) do not.
 */
const postgresCpuSeconds = (postmaster: number) =>
  fs
    .readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .reduce(
      (sum, entry) => {
        const pid = Number(entry)
        try {
          return parentOf(pid) === postmaster ? sum + cpuSeconds(pid, true) : sum
        } catch {
          return sum // exited while being read
        }
      },
      cpuSeconds(postmaster, true)
    )
/** CPU the server, the runtime (with its git and agent children) and Postgres use from now to the call, ms per `count`. */
const cpuMeter = (serverPid: number, runtimePid: number, postmaster: number) => {
  const before = {
    server: cpuSeconds(serverPid),
    runtime: cpuSeconds(runtimePid, true),
    postgres: postgresCpuSeconds(postmaster)
  }
  return (count: number) => ({
    server: round(((cpuSeconds(serverPid) - before.server) * 1000) / count),
    runtime: round(((cpuSeconds(runtimePid, true) - before.runtime) * 1000) / count),
    postgres: round(((postgresCpuSeconds(postmaster) - before.postgres) * 1000) / count)
  })
}

/**
 * A Node child process writing its output (stdout and stderr) to `logFile`, as a server's log goes
 * to a file or a collector: a pipe into this busy process could stall the child's writes.
 */
const spawnLogged = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, logFile: string) => {
  const fd = fs.openSync(logFile, "a")
  const child = spawn(process.execPath, args, { env, stdio: ["ignore", fd, fd] })
  fs.closeSync(fd)
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  /** The log's last 64 KB. */
  const output = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, "utf8").slice(-65_536) : "")
  return { child, pid: child.pid ?? 0, output, exited }
}

/** SIGTERM, SIGKILL after `graceMs`. */
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

/** An RS256 JWT the App signs, as GitHub's App authentication takes it. */

// ---------------------------------------------------------------------------------------------
// The review every run writes, and the pull requests it is written for

const finding = (line: number, severity: "HIGH" | "MEDIUM", title: string) => ({
  path: FILE,
  start_line: line,
  end_line: line,
  side: "RIGHT" as const,
  severity,
  category: "security",
  title,
  body: `${title}: the request's input reaches it unchecked.`
})
const FIXED_OUTPUT: ReviewOutput = {
  summary: "Adds the request handler.",
  findings: [
    finding(3, "HIGH", "Unsanitized input reaches the query"),
    finding(7, "MEDIUM", "Input index is not bounds-checked")
  ]
}
/** Each pull request adds the handler with twenty lines of its own: lines 3 and 7 are in every diff. */
const handlerOf = (n: number) =>
  `${Array.from({ length: 20 }, (_, i) => `const v${i + 1} = input[${i + 1}] // change ${n}`).join("\n")}\n`

const decodeRunState = Schema.decodeUnknownSync(RunState)

// ---------------------------------------------------------------------------------------------
// The setting: fake GitHub and its repository, runtime, database, server, the organization

const setUp = async () => {
  const setUpStarted = now()
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-bench-review-"))
  // As root the runtime runs agents as users of their own: they pass through here (docs/agent-isolation.md).
  fs.chmodSync(root, 0o711)
  fs.chmodSync(root, 0o711)
  cleanup.push(() => fs.rmSync(root, { recursive: true, force: true }))
  const scope = await Effect.runPromise(Scope.make())
  cleanup.push(() => Effect.runPromise(Scope.close(scope, Exit.void)))
  const fake = Context.get(await Effect.runPromise(Layer.buildWithScope(FakeGithub.layer, scope)), FakeGithub)

  // The App (a real key: Bosun signs its JWTs with it), installed on the one repository.
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
  fake.addApp({
    clientId: "Iv1.bench",
    clientSecret: "bench-client-secret",
    appId: world.appId,
    publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
    slug: SLUG
  })
  fake.addInstallation({
    id: world.installationId,
    appId: world.appId,
    account: { id: 71_001, login: "acme", type: "Organization" },
    repositories: [world.repository]
  })

  // One commit per pull request on its own branch from main, as `refs/pull/N/head`.
  const repository = await makeGitRepository(path.join(root, "git"), world.repository)
  fake.addGitRepository(world.repository, repository.dir)
  const base = await repository.commit("main", { "README.md": "shop\n" }, "init")
  fake.setBranch(world.repository, "main", base)
  const total = settings.warmups + settings.prs
  const heads: Array<string> = []
  for (let n = 1; n <= total; n++) {
    const head = await repository.commit(`feature-${n}`, { [FILE]: handlerOf(n) }, `change ${n}`, { from: "main" })
    await repository.setRef(`refs/pull/${n}/head`, head)
    fake.setPull(world.repository, {
      number: n,
      title: `Change ${n}`,
      head: { sha: head, ref: `feature-${n}` },
      base: { sha: base, ref: "main" },
      files: await repository.pullFiles(base, head)
    })
    heads[n] = head
  }

  // The runtime with the one profile reviews run.
  const script = path.join(root, "fixed-review.sh")
  fs.writeFileSync(
    script,
    `#!/bin/sh\ncat > "$BOSUN_OUTPUT_DIR/review.json" <<'JSON'\n${JSON.stringify(FIXED_OUTPUT)}\nJSON\n`,
    { mode: 0o755 }
  )
  const runtimeMaxRuns = settings.concurrency + 4
  const runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(root, "runtime"),
    BOSUN_RUNTIME_MAX_RUNS: String(runtimeMaxRuns),
    BOSUN_RUNTIME_AGENTS: JSON.stringify({ [PROFILE]: { command: [script] } })
  })
  cleanup.push(async () => {
    const timer = setTimeout(() => runtime.child.kill("SIGKILL"), 10_000)
    await runtime.stop()
    clearTimeout(timer)
  })

  const db = await Effect.runPromise(
    benchDatabase(scope, { maxConnections: 4 }).pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))
  )
  cleanup.push(() => Effect.runPromise(db.drop))
  const pgConfig = Context.get(db.context, PgClient.PgClient).config
  const databaseUrl = pgConfig.url === undefined ? "" : Redacted.value(pgConfig.url)
  const query = <A>(statement: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown, SqlClient.SqlClient>) =>
    Effect.runPromise(Effect.provide(Effect.flatMap(SqlClient.SqlClient, statement), db.context))
  const [backend] = await query((sql) => sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`)
  /** Transactions committed or rolled back in the benchmark's database so far (Postgres publishes a backend's within a second). */
  const transactions = () =>
    query(
      (sql) => sql<{ n: string }>`
        SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`
    ).then((rows) => Number(rows[0]?.n ?? 0))
  const postmaster = parentOf(backend?.pid ?? 0)

  // The server, as `npm start` starts it, on production defaults but for the REVIEW lane.
  const port = await Effect.runPromise(freePort)
  const base_ = `http://127.0.0.1:${port}`
  const inherited: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith("BOSUN_") && key !== "DATABASE_URL" && key !== "REDIS_URL") inherited[key] = value
  }
  const instanceEnv = {
    DATABASE_URL: databaseUrl,
    BOSUN_MASTER_KEY: randomBytes(32).toString("base64"),
    BOSUN_DATA_DIR: fs.mkdtempSync(path.join(root, "server-"))
  }
  const bootstrapToken = randomBytes(24).toString("hex")
  const profileFlags =
    settings.cpuProfileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${path.resolve(settings.cpuProfileDir)}`]
  const server = spawnLogged(
    [...SERVER_NODE_FLAGS, ...profileFlags, path.join(benchRoot, "packages/server/src/main.ts")],
    {
      ...inherited,
      ...instanceEnv,
      BOSUN_PORT: String(port),
      BOSUN_RUNNER_PORT: String(await Effect.runPromise(freePort)),
      BOSUN_BOOTSTRAP_TOKEN: bootstrapToken,
      BOSUN_GITHUB_API_URL: fake.apiUrl,
      // The fake GitHub sets no secondary rate limit: writes are not paced a second apart, so the
      // figures are the control plane's, not GitHub's guidance.
      BOSUN_GITHUB_WRITE_INTERVAL: "0 millis",
      BOSUN_RUNTIME_URL: runtime.base,
      BOSUN_RUNTIME_TOKEN: TOKEN,
      BOSUN_REVIEW_AGENT_PROFILE: PROFILE,
      BOSUN_LANE_REVIEW_CONCURRENCY: String(settings.concurrency)
    },
    path.join(root, "server.log")
  )
  cleanup.push(() => stopChild(server.child, server.exited))
  serverOutput = server.output
  await until(
    "the server to be ready",
    async () => {
      if (server.child.exitCode !== null) throw new Error(`the server exited: ${server.output()}`)
      const ready = await fetch(`${base_}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
        (response) => response.status === 200,
        () => false
      )
      return ready ? true : undefined
    },
    90_000,
    100
  )

  /** A JSON call to the server's API that must answer 200. */
  const api = async (method: string, pathname: string, headers: Record<string, string>, body: unknown) => {
    const response = await fetch(`${base_}${pathname}`, {
      method,
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })
    const text = await response.text()
    if (response.status !== 200) throw new Error(`${method} ${pathname} answered ${response.status}: ${text}`)
  }

  // The organization's App, by the operator's bootstrap token.
  const webhookSecret = randomBytes(20).toString("hex")
  await api(
    "PUT",
    `/api/v1/organizations/${ORG}/github-app`,
    { authorization: `Bearer ${bootstrapToken}` },
    {
      client_id: "Iv1.bench",
      client_secret: "bench-client-secret",
      github_app_id: world.appId,
      github_app_slug: SLUG,
      private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      webhook_secret: webhookSecret
    }
  )
  // An admin's session cookie, through the operator CLI.
  const cli = await promisify(execFile)(
    process.execPath,
    [
      path.join(benchRoot, "packages/server/src/cli/main.ts"),
      "sessions",
      "create",
      "--org",
      ORG,
      "--login",
      "bench-admin",
      "--role",
      "ADMIN"
    ],
    { env: { ...inherited, ...instanceEnv } }
  )
  const cookie = cli.stdout.trim().split("\n").pop() ?? ""
  if (!cookie.startsWith("bosun_session=")) throw new Error(`the CLI printed no session cookie: ${cli.stdout}`)
  // The operator names the GitHub account the organization mirrors; only its installation links it.
  await promisify(execFile)(
    process.execPath,
    [
      path.join(benchRoot, "packages/server/src/cli/main.ts"),
      "organizations",
      "link",
      "--org",
      ORG,
      "--github-login",
      "acme"
    ],
    { env: { ...inherited, ...instanceEnv, BOSUN_GITHUB_API_URL: fake.apiUrl } }
  )

  const client = webhookClient(`${base_}${WEBHOOK_PATH}`, world.appId)
  cleanup.push(client.close)
  const deliver = async (delivery: Delivery) => {
    const answer = await client.post(delivery)
    if (answer.status !== 202) throw new Error(`delivery ${delivery.id} answered ${answer.status}: ${answer.body}`)
    return answer
  }
  /** Waits for the inbox to have processed the deliveries whose id starts with `prefix`; answers how many it did. */
  const processed = (prefix: string, count: number, timeoutMs: number) =>
    until(
      `the inbox to process ${count} deliveries ${prefix}*`,
      async () => {
        const [row] = await query(
          (sql) => sql<{ n: string; last: number | null }>`
            SELECT count(*) AS n, extract(epoch FROM max(processed_at)) * 1000 AS last FROM github_deliveries
            WHERE organization_id = ${ORG} AND delivery_id LIKE ${`${prefix}%`} AND processed_at IS NOT NULL`
        )
        const n = Number(row?.n ?? 0)
        return n >= count ? { n, last: Number(row?.last) } : undefined
      },
      timeoutMs,
      100
    )

  // The installation, as GitHub announces it: it links the organization and brings the repository.
  await deliver(sign(webhookSecret, "bench-installation", "installation", installationCreated(world)))
  await processed("bench-installation", 1, 30_000)
  const [ignored] = await query(
    (sql) =>
      sql<{
        ignored_reason: string | null
      }>`SELECT ignored_reason FROM github_deliveries WHERE delivery_id = 'bench-installation'`
  )
  if (ignored?.ignored_reason) throw new Error(`the installation was ignored: ${ignored.ignored_reason}`)

  // An agent connection with a (fake) provider key: a review needs credentials whatever runs it.
  await api(
    "PUT",
    `/api/v1/organizations/${ORG}/opencode-connection/import`,
    { cookie },
    { auth: { fake: { type: "api", key: `sk-bench-${randomBytes(12).toString("hex")}` } } }
  )
  // The import queued a catalog discovery run: let it end before anything is measured.
  await until(
    "the set-up's runs to end",
    async () => {
      const [row] = await query(
        (sql) => sql<{ n: string }>`
          SELECT count(*) AS n FROM workflow_runs
          WHERE organization_id = ${ORG} AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`
      )
      return Number(row?.n ?? 1) === 0 ? true : undefined
    },
    120_000,
    200
  )

  // When each review reached the fake GitHub: its request log, read every 5 ms.
  const reviewPath = new RegExp(`^/api/v3/repos/${world.repository}/pulls/(\\d+)/reviews$`)
  const arrivals = new Map<number, number>()
  let seen = 0
  const poller = setInterval(() => {
    const requests = fake.requests
    for (; seen < requests.length; seen++) {
      const request = requests[seen]
      if (request?.method !== "POST") continue
      const number = Number(reviewPath.exec(request.path)?.[1] ?? Number.NaN)
      if (!Number.isNaN(number) && !arrivals.has(number)) arrivals.set(number, now())
    }
  }, 5)
  cleanup.push(() => clearInterval(poller))

  return {
    root,
    fake,
    privateKey,
    base,
    heads,
    runtime,
    runtimeMaxRuns,
    server,
    serverBase: base_,
    database: db.database,
    postmaster,
    transactions,
    inherited,
    query,
    webhookSecret,
    deliver,
    processed,
    arrivals,
    setUpSeconds: round((now() - setUpStarted) / 1000)
  }
}
type Bench = Awaited<ReturnType<typeof setUp>>

// ---------------------------------------------------------------------------------------------
// 1. Overhead per review, beside the same runs straight on the runtime

interface ReviewRow {
  readonly number: number
  readonly status: string
  readonly error: string | null
  readonly attempt_id: string
  readonly attempts: number
  readonly received: number
  readonly processed: number
  readonly claimed: number
  readonly prepare_start: number
  readonly prepare_end: number
  readonly execute_start: number
  readonly execute_end: number
  readonly publish_start: number
  readonly publish_end: number
}

/** The runtime's own time for an attempt, ms (its result's finished_at - started_at). */
const runtimeTime = async (bench: Bench, attemptId: string) => {
  const response = await fetch(`${bench.runtime.base}/v1/runs/${attemptId}/result`, { headers: protocolHeaders })
  const state = decodeRunState(await response.json())
  if (state.finished_at === null) throw new Error(`the runtime's run ${attemptId} has not finished`)
  return {
    started: Date.parse(state.started_at),
    finished: Date.parse(state.finished_at),
    ms: Date.parse(state.finished_at) - Date.parse(state.started_at)
  }
}

/** Sends `pull_request` opened for each of `numbers` at `rate`/s; waits for every review to be posted and its run to end. */
const reviewPullRequests = async (bench: Bench, numbers: ReadonlyArray<number>, rate: number) => {
  const sentAt = new Map<number, number>()
  await openLoop(numbers.length, rate, async (index) => {
    const number = numbers[index] ?? 0
    const delivery = sign(
      bench.webhookSecret,
      `bench-open-${number}`,
      "pull_request",
      pullRequestEvent(world, { action: "opened", number, head: bench.heads[number] ?? "", base: bench.base })
    )
    sentAt.set(number, now())
    return bench.deliver(delivery)
  })
  const ended = async () => {
    const rows = await bench.query(
      (sql) => sql<{ number: number; status: string; error: string | null }>`
        SELECT pull_request_number AS number, status, error_code || ': ' || error_message AS error FROM workflow_runs
        WHERE organization_id = ${ORG} AND workflow_type = 'review' AND pull_request_number IN ${sql.in(numbers)}`
    )
    const failed = rows.find((row) => row.status === "FAILED" || row.status === "CANCELLED")
    if (failed !== undefined) throw new Error(`the review of #${failed.number} ended ${failed.status}: ${failed.error}`)
    return rows.length === numbers.length && rows.every((row) => row.status === "SUCCEEDED") ? true : undefined
  }
  await until(
    `${numbers.length} reviews to be posted`,
    async () => {
      if (numbers.every((number) => bench.arrivals.has(number))) return true
      await ended() // fails fast when a review run failed
      return undefined
    },
    (numbers.length / rate) * 1000 + 300_000,
    100
  )
  await until(`${numbers.length} review runs to end`, ended, 60_000, 100)
  return sentAt
}

const measureReviews = async (bench: Bench) => {
  for (let number = 1; number <= settings.warmups; number++) await reviewPullRequests(bench, [number], 1)
  const numbers = Array.from({ length: settings.prs }, (_, i) => settings.warmups + 1 + i)
  const meter = cpuMeter(bench.server.pid, bench.runtime.child.pid ?? 0, bench.postmaster)
  const transactionsBefore = await bench.transactions()
  const started = now()
  const sentAt = await reviewPullRequests(bench, numbers, settings.reviewRate)
  const cpu = meter(numbers.length)
  await sleep(1500)
  const transactionsPerReview = ((await bench.transactions()) - transactionsBefore) / numbers.length
  const seconds = (Math.max(...numbers.map((number) => bench.arrivals.get(number) ?? 0)) - started) / 1000

  const rows = await bench.query(
    (sql) => sql<ReviewRow>`
      SELECT r.pull_request_number AS number, r.status, r.error_code AS error, a.id AS attempt_id, a.attempt AS attempts,
        extract(epoch FROM d.received_at) * 1000 AS received, extract(epoch FROM d.processed_at) * 1000 AS processed,
        extract(epoch FROM a.started_at) * 1000 AS claimed,
        extract(epoch FROM p.started_at) * 1000 AS prepare_start, extract(epoch FROM p.finished_at) * 1000 AS prepare_end,
        extract(epoch FROM x.started_at) * 1000 AS execute_start, extract(epoch FROM x.finished_at) * 1000 AS execute_end,
        extract(epoch FROM u.started_at) * 1000 AS publish_start, extract(epoch FROM u.finished_at) * 1000 AS publish_end
      FROM workflow_runs r
      JOIN LATERAL (SELECT * FROM workflow_attempts WHERE run_id = r.id ORDER BY attempt DESC LIMIT 1) a ON true
      JOIN github_deliveries d ON d.delivery_id = r.input_snapshot->>'delivery_id'
      JOIN workflow_attempt_steps p ON p.attempt_id = a.id AND p.step = 'prepare'
      JOIN workflow_attempt_steps x ON x.attempt_id = a.id AND x.step = 'execute'
      JOIN workflow_attempt_steps u ON u.attempt_id = a.id AND u.step = 'publish'
      WHERE r.organization_id = ${ORG} AND r.workflow_type = 'review' AND r.pull_request_number IN ${sql.in(numbers)}`
  )
  const measured = await Promise.all(
    rows.map(async (row) => {
      const at = (name: Exclude<keyof ReviewRow, "number" | "status" | "error" | "attempt_id" | "attempts">) =>
        Number(row[name])
      const runtime = await runtimeTime(bench, row.attempt_id)
      const t0 = sentAt.get(row.number) ?? Number.NaN
      const t1 = bench.arrivals.get(row.number) ?? Number.NaN
      return { row, at, runtime, t0, t1, endToEnd: t1 - t0, overhead: t1 - t0 - runtime.ms }
    })
  )
  type Measured = (typeof measured)[number]
  const stage = (from: (m: Measured) => number, to: (m: Measured) => number) =>
    median(measured.map((m) => to(m) - from(m)))
  const posted = numbers.filter((number) => bench.fake.reviews(world.repository, number).length === 1)
  const inline = numbers.filter(
    (number) => bench.fake.reviews(world.repository, number)[0]?.comments.length === FIXED_OUTPUT.findings.length
  )
  return {
    reviews: measured.length,
    rate_per_s: settings.reviewRate,
    seconds: round(seconds, 2),
    reviews_posted: posted.length,
    reviews_with_both_inline_comments: inline.length,
    retried_attempts: rows.filter((row) => row.attempts > 1).length,
    cpu_ms_per_review: cpu,
    database_transactions_per_review: round(transactionsPerReview),
    overhead_ms: spread(measured.map((m) => m.overhead)),
    end_to_end_ms: spread(measured.map((m) => m.endToEnd)),
    agent_ms: spread(measured.map((m) => m.runtime.ms)),
    stages_p50_ms: {
      webhook_sent_to_delivery_recorded: stage(
        (m) => m.t0,
        (m) => m.at("received")
      ),
      delivery_recorded_to_processed_by_inbox: stage(
        (m) => m.at("received"),
        (m) => m.at("processed")
      ),
      processed_to_attempt_claimed: stage(
        (m) => m.at("processed"),
        (m) => m.at("claimed")
      ),
      claimed_to_prepare: stage(
        (m) => m.at("claimed"),
        (m) => m.at("prepare_start")
      ),
      prepare: stage(
        (m) => m.at("prepare_start"),
        (m) => m.at("prepare_end")
      ),
      prepare_to_execute: stage(
        (m) => m.at("prepare_end"),
        (m) => m.at("execute_start")
      ),
      execute_to_runtime_start: stage(
        (m) => m.at("execute_start"),
        (m) => m.runtime.started
      ),
      runtime: stage(
        (m) => m.runtime.started,
        (m) => m.runtime.finished
      ),
      runtime_end_to_execute_end: stage(
        (m) => m.runtime.finished,
        (m) => m.at("execute_end")
      ),
      execute_to_publish: stage(
        (m) => m.at("execute_end"),
        (m) => m.at("publish_start")
      ),
      publish_to_review_posted: stage(
        (m) => m.at("publish_start"),
        (m) => m.t1
      ),
      review_posted_to_publish_end: stage(
        (m) => m.t1,
        (m) => m.at("publish_end")
      )
    }
  }
}

/** The same runs with no control plane: `POST /v1/runs` with the same profile and checkout, then its tail to the end. */
const measureDirect = async (bench: Bench) => {
  const minted = await fetch(`${bench.fake.apiUrl}/app/installations/${world.installationId}/access_tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${appJwt(bench.privateKey, world.appId)}`, accept: "application/json" }
  })
  if (minted.status !== 201) throw new Error(`the fake GitHub minted no installation token: ${await minted.text()}`)
  const { token } = (await minted.json()) as { token: string }
  const numbers = Array.from({ length: settings.prs }, (_, i) => settings.warmups + 1 + i)
  let refused = 0
  const run = async (number: number) => {
    const attemptId = `direct-${number}:1`
    const started = now()
    const body = JSON.stringify({
      run_id: `direct-${number}`,
      attempt_id: attemptId,
      agent: { kind: "CUSTOM", profile: PROFILE },
      model: "default",
      prompt: `Review pull request #${number} of ${world.repository}; the head is checked out at repo.`,
      repositories: [
        {
          id: "repo",
          url: `${bench.fake.url}/${world.repository}.git`,
          ref: `refs/pull/${number}/head`,
          sha: bench.heads[number],
          path: "repo",
          credential: token
        }
      ],
      mcp_servers: [],
      skills: [],
      egress_tier: "STRICT",
      time_limit_seconds: 1800,
      credential_mode: "INLINE",
      provider_credentials: { fake: { type: "api", key: "sk-bench-direct" } }
    })
    for (;;) {
      const posted = await fetch(`${bench.runtime.base}/v1/runs`, { method: "POST", headers: protocolHeaders, body })
      if (posted.status === 201) break
      // Over the runtime's max runs: the control plane would have queued it; here it waits its turn.
      if (posted.status !== 429) throw new Error(`POST /v1/runs answered ${posted.status}: ${await posted.text()}`)
      refused++
      await sleep(20)
    }
    const tail = await fetch(`${bench.runtime.base}/v1/runs/${attemptId}/events?after=0`, { headers: protocolHeaders })
    const text = await tail.text()
    const total = now() - started
    if (!text.includes('"type":"run.finished"')) throw new Error(`the direct run ${attemptId} did not finish`)
    const runtime = await runtimeTime(bench, attemptId)
    if (!text.includes('"status":"SUCCEEDED"'))
      throw new Error(`the direct run ${attemptId} failed: ${text.slice(-2000)}`)
    return { total, runtime: runtime.ms }
  }
  await run(1)
  const meter = cpuMeter(bench.server.pid, bench.runtime.child.pid ?? 0, bench.postmaster)
  const results = await openLoop(numbers.length, settings.reviewRate, (index) => run(numbers[index] ?? 0))
  const cpu = meter(results.length)
  return {
    runs: results.length,
    refused_over_max_runs: refused,
    cpu_ms_per_run: { runtime: cpu.runtime, postgres: cpu.postgres },
    total_ms: spread(results.map((r) => r.value.total)),
    runtime_ms: spread(results.map((r) => r.value.runtime)),
    floor_ms: spread(results.map((r) => r.value.total - r.value.runtime))
  }
}

// ---------------------------------------------------------------------------------------------
// 2. Webhook ack latency at a fixed rate, beside a bare node:http server

const ackDeliveries = (bench: Bench, label: string, count: number) =>
  Array.from({ length: count }, (_, i) => {
    const number = settings.warmups + 1 + (i % settings.prs)
    return sign(
      bench.webhookSecret,
      `ack-${label}-${i}`,
      "pull_request",
      pullRequestEvent(world, { action: "labeled", number, head: bench.heads[number] ?? "", base: bench.base })
    )
  })

/** Warm-up, then the measured deliveries, open loop; the server's CPU over the measured ones. */
const fireAcks = async (bench: Bench, url: string, label: string, pid: number) => {
  const client = webhookClient(url, world.appId)
  try {
    const warmup = ackDeliveries(bench, `${label}-warmup`, Math.round(settings.ackRate * settings.ackWarmupSeconds))
    const deliveries = ackDeliveries(bench, label, Math.round(settings.ackRate * settings.ackSeconds))
    await openLoop(warmup.length, settings.ackRate, (index) => client.post(warmup[index] as Delivery))
    const cpuBefore = cpuSeconds(pid)
    const started = now()
    const fired = await openLoop(deliveries.length, settings.ackRate, (index) =>
      client.post(deliveries[index] as Delivery)
    )
    const answeredAt = now()
    const cpuWhileSending = cpuSeconds(pid) - cpuBefore
    const ok = fired.filter((f) => f.value.status === 202 && f.value.body.includes('"accepted":true'))
    return {
      fired,
      answeredAt,
      cpuBefore,
      figures: {
        deliveries: deliveries.length,
        rate_per_s: settings.ackRate,
        achieved_per_s: round(deliveries.length / ((answeredAt - started) / 1000)),
        errors: fired.length - ok.length,
        error_sample: fired.find((f) => !ok.includes(f))?.value.body.slice(0, 300) ?? null,
        ack_ms: spread(ok.map((f) => f.value.ms)),
        sender_late_ms: spread(fired.map((f) => f.lateMs)),
        cpu_us_per_delivery_while_sending: round((cpuWhileSending * 1e6) / deliveries.length)
      }
    }
  } finally {
    client.close()
  }
}

const measureAcks = async (bench: Bench) => {
  const transactionsBefore = await bench.transactions()
  const bosun = await fireAcks(bench, `${bench.serverBase}${WEBHOOK_PATH}`, "bosun", bench.server.pid)
  const sent = bosun.fired.length + Math.round(settings.ackRate * settings.ackWarmupSeconds)
  // Every delivery is processed later by the inbox: how long until the last one was.
  const drained = await bench.processed("ack-bosun-", sent, 300_000).then(
    (done) => ({ all: true, last: done.last }),
    () => ({ all: false, last: Number.NaN })
  )
  // When the inbox did not get through them all: where the rest are (the inbox's dead letters and
  // their last error, rows still waiting in the queue, outbox rows not done).
  const stuck = drained.all
    ? null
    : await bench.query(
        (sql) => sql<{ processed: string; dead: string; queued: string; undone: string; error: string | null }>`
          SELECT
            (SELECT count(*) FROM github_deliveries WHERE delivery_id LIKE 'ack-bosun-%' AND processed_at IS NOT NULL) AS processed,
            (SELECT count(*) FROM queue_messages WHERE queue = 'bosun-inbox-dlq') AS dead,
            (SELECT count(*) FROM queue_messages WHERE queue = 'bosun-inbox') AS queued,
            (SELECT count(*) FROM outbox WHERE queue = 'bosun-inbox' AND done_at IS NULL) AS undone,
            (SELECT left(last_error, 600) FROM queue_messages WHERE queue IN ('bosun-inbox-dlq', 'bosun-inbox')
             AND last_error IS NOT NULL ORDER BY id DESC LIMIT 1) AS error`
      )
  const bosunCpu = cpuSeconds(bench.server.pid) - bosun.cpuBefore
  await sleep(1500)
  const transactionsPerDelivery = ((await bench.transactions()) - transactionsBefore) / sent

  const port = await Effect.runPromise(freePort)
  const bare = spawnLogged(
    [path.join(benchRoot, "bench/review/bare-webhook.ts"), String(port)],
    { ...bench.inherited, BENCH_WEBHOOK_SECRET: bench.webhookSecret },
    path.join(bench.root, "bare-webhook.log")
  )
  cleanup.push(() => stopChild(bare.child, bare.exited))
  await until(
    "the bare webhook server",
    () =>
      fetch(`http://127.0.0.1:${port}/`).then(
        (response) => (response.status === 200 ? true : undefined),
        () => undefined
      ),
    30_000
  )
  const baseline = await fireAcks(bench, `http://127.0.0.1:${port}${WEBHOOK_PATH}`, "bare", bare.pid)
  await stopChild(bare.child, bare.exited)
  return {
    bosun: {
      ...bosun.figures,
      processed_by_inbox: drained.all,
      inbox_left: stuck?.[0] ?? null,
      inbox_drained_s_after_last_answer: round((drained.last - bosun.answeredAt) / 1000, 2),
      cpu_us_per_delivery_incl_processing: round((bosunCpu * 1e6) / bosun.fired.length),
      database_transactions_per_delivery_incl_processing: round(transactionsPerDelivery)
    },
    bare: baseline.figures
  }
}

// ---------------------------------------------------------------------------------------------

const main = async () => {
  const context = runContext("review")
  try {
    const bench = await setUp()
    console.log(
      `bench:review — ${context.machine.cpus}× ${context.machine.cpu}, Node ${context.node}, database ${bench.database}; set-up ${bench.setUpSeconds} s (${settings.warmups + settings.prs} pull requests)`
    )
    console.log(
      `settings: review lane ${settings.concurrency}, runtime max runs ${bench.runtimeMaxRuns}, reviews sent at ${settings.reviewRate}/s; acks at ${settings.ackRate}/s for ${settings.ackSeconds} s; ` +
        "production defaults otherwise (Postgres queues, no REDIS_URL)"
    )
    const reviews = await measureReviews(bench)
    const direct = await measureDirect(bench)
    const acks = await measureAcks(bench)

    const verdict = {
      overhead_p50: reviews.overhead_ms.p50 < targets.overheadP50Ms,
      ack_p99: acks.bosun.errors === 0 && acks.bosun.ack_ms.p99 < targets.ackP99Ms
    }
    const r = reviews
    console.log("")
    console.log(
      `review overhead: ${r.reviews} pull requests opened at ${r.rate_per_s}/s (${r.reviews_posted} reviews posted, ${r.reviews_with_both_inline_comments} with both inline comments, ${r.retried_attempts} retried; last posted ${r.seconds} s after the first delivery)`
    )
    console.log(
      `  bosun overhead (webhook sent → review POSTed, minus the runtime's time)  ${ms(r.overhead_ms)}   target p50 < ${targets.overheadP50Ms} ms: ${mark(verdict.overhead_p50)}`
    )
    console.log(`  bosun end to end (webhook sent → review POSTed)                         ${ms(r.end_to_end_ms)}`)
    console.log(`  runtime's time per attempt (checkout + fixed agent + outputs)           ${ms(r.agent_ms)}`)
    console.log(
      `  direct, no control plane (POST /v1/runs → run.finished on the tail)     ${ms(direct.total_ms)} (${direct.refused_over_max_runs} POSTs refused over max runs)`
    )
    console.log(`  direct: its runtime's time                                              ${ms(direct.runtime_ms)}`)
    console.log(`  direct: total minus the runtime's time (the floor)                      ${ms(direct.floor_ms)}`)
    console.log(
      `  CPU ms per review: bosun server ${r.cpu_ms_per_review.server}, runtime + git + agent ${r.cpu_ms_per_review.runtime}, Postgres ${r.cpu_ms_per_review.postgres} (${r.database_transactions_per_review} transactions); direct: runtime + git + agent ${direct.cpu_ms_per_run.runtime}, Postgres ${direct.cpu_ms_per_run.postgres}`
    )
    console.log(
      `  bosun stages, p50 ms: ${Object.entries(r.stages_p50_ms)
        .map(([name, value]) => `${name.replaceAll("_", " ")} ${Number.isNaN(value) ? "n/a" : value}`)
        .join(" | ")}`
    )
    const a = acks
    console.log(
      `webhook ack: ${a.bosun.deliveries} signed pull_request labeled deliveries at ${settings.ackRate}/s, open loop, after ${settings.ackWarmupSeconds} s of warm-up`
    )
    console.log(
      `  bosun           ${ms(a.bosun.ack_ms)}; ${a.bosun.errors} errors; ${a.bosun.achieved_per_s}/s answered   target p99 < ${targets.ackP99Ms} ms: ${mark(verdict.ack_p99)}`
    )
    console.log(
      `                  server CPU ${a.bosun.cpu_us_per_delivery_while_sending} µs/delivery while sending, ${a.bosun.cpu_us_per_delivery_incl_processing} µs until the inbox had processed them all, ${a.bosun.database_transactions_per_delivery_incl_processing} database transactions each (${a.bosun.processed_by_inbox ? `the last ${a.bosun.inbox_drained_s_after_last_answer} s after the last answer` : `not within 300 s: ${JSON.stringify(a.bosun.inbox_left)}`}); sender late ${ms(a.bosun.sender_late_ms)}`
    )
    console.log(
      `  bare node:http  ${ms(a.bare.ack_ms)}; ${a.bare.errors} errors; ${a.bare.achieved_per_s}/s answered; CPU ${a.bare.cpu_us_per_delivery_while_sending} µs/delivery; sender late ${ms(a.bare.sender_late_ms)}`
    )
    if (a.bosun.error_sample !== null) console.log(`  first bosun error: ${a.bosun.error_sample}`)
    await writeReport("review", {
      ...context,
      database: bench.database,
      settings: { ...settings, runtimeMaxRuns: bench.runtimeMaxRuns, profile: PROFILE, queues: "Postgres" },
      targets,
      verdict,
      figures: { reviews, direct, acks }
    })
    console.log("figures written to .bench/review.json")
  } catch (error) {
    console.error(`bench:review failed; the server's last output:\n${serverOutput().slice(-8000)}`)
    throw error
  } finally {
    await cleanUp()
  }
}

await main()

/**
 * Several Bosun servers reviewing pull requests on one Postgres and one Redis, for the chaos test
 * (`ClusterChaos.e2e.test.ts`, bounded) and `npm run bench:cluster` (in full, and runs/s across 1,
 * 2 and 3 runners).
 *
 * Each server is the production entry point (`packages/server/src/main.ts`, as the image runs it)
 * in a process of its own: role `all`, the socket transport between runners, Postgres runner
 * storage, queues and cache in Redis, blobs in one shared directory. The outside world runs here:
 * the fake GitHub (an App installed on one repository, one commit per pull request served over git
 * smart HTTP) and the real runtime process, whose review agent is a CUSTOM profile writing a fixed
 * review at once (`BOSUN_REVIEW_AGENT_PROFILE`), so the figures are the control plane's.
 *
 * The organization is set up as an operator would (the App by the bootstrap token, a session from
 * the CLI, the installation by its webhook, an agent connection). Then one signed `pull_request`
 * `opened` delivery per pull request is sent at `rate` per second, open loop, round robin over the
 * servers still alive, as a load balancer would; a delivery a dying server did not answer goes to
 * the next one, as GitHub redelivers. With `chaos`, the server running the Scheduler is SIGKILLed
 * once a third of the reviews are posted, and the next server to run it is SIGTERMed at two thirds.
 *
 * The report says what a test asserts and a benchmark prints: every run's status and attempts,
 * the reviews GitHub got per pull request, every run's events against the runtime's own log, the
 * intervals each server ran the Scheduler (from its `scheduler_started`/`scheduler_stopped` log
 * lines) and any overlap, and the failover times.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { createHmac, generateKeyPairSync, type KeyObject, randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"
import { Redis } from "@bosun/platform/Redis"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { appJwt } from "./AppJwt.ts"
import { FakeGithub } from "./FakeGithub.ts"
import { makeGitRepository } from "./GitRepository.ts"
import { freePort, protocolHeaders, readTail, startRuntime, TOKEN } from "./RuntimeProcess.ts"

const repositoryRoot = path.resolve(import.meta.dirname, "../../..")
const serverMain = path.join(repositoryRoot, "packages/server/src/main.ts")
const cliMain = path.join(repositoryRoot, "packages/server/src/cli/main.ts")

const ORG = "cluster"
const REPO = "acme/fleet"
const FILE = "src/fleet.ts"
const APP_ID = 7373
const INSTALLATION_ID = 83_001
const REPOSITORY_ID = 93_001
const ACCOUNT = { id: 73_001, login: "acme", type: "Organization" } as const
const PROFILE = "fixed-review"
const REVIEW = {
  summary: "Adds a fleet function.",
  findings: [
    {
      path: FILE,
      start_line: 2,
      end_line: 2,
      side: "RIGHT",
      severity: "MEDIUM",
      category: "correctness",
      title: "The count ignores idle ships",
      body: "Count the idle ones too."
    }
  ]
}

export interface ReviewClusterSettings {
  /** A directory this run may fill (git repository, runtime and server data). */
  readonly root: string
  /** An empty database of its own. */
  readonly databaseUrl: string
  /** A Redis logical database of its own (`redis://host:port/N`): flushed before and after. */
  readonly redisUrl: string
  readonly runners: number
  readonly prs: number
  /** Deliveries per second, open loop. */
  readonly rate: number
  /** Each server's REVIEW lane (`BOSUN_LANE_REVIEW_CONCURRENCY`). */
  readonly reviewConcurrency: number
  readonly shardLockExpiration: string
  /** SIGKILL the Scheduler's runner at a third of the reviews, SIGTERM its successor at two thirds. */
  readonly chaos: boolean
  readonly nodeFlags?: ReadonlyArray<string>
  /** How long the reviews may take in all before the run gives up. */
  readonly timeoutMs: number
  readonly progress?: (line: string) => void
  /**
   * The baseline: after the reviews, this many of the same runs straight to the runtime, with no
   * control plane (`POST /v1/runs` with the same profile and checkout of the same pull requests,
   * then each run's tail to its end), `concurrency` at a time.
   */
  readonly direct?: { readonly runs: number; readonly concurrency: number }
}

export interface SchedulerInterval {
  readonly server: number
  readonly start: number
  /** When it logged `scheduler_stopped`, or was killed; undefined while still running it. */
  readonly end: number | undefined
}

export interface ReviewClusterReport {
  readonly runs: ReadonlyArray<{
    readonly number: number
    readonly status: string
    readonly attempts: number
    /** Reviews the fake GitHub holds for the pull request. */
    readonly reviews: number
    /** Why a run did not succeed: its error, and each failed step's error. */
    readonly error: string | null
  }>
  /** Pull requests whose delivery no server acknowledged. */
  readonly undelivered: ReadonlyArray<number>
  /** Runs whose events differ from the runtime's own log of their attempts, with why. */
  readonly eventMismatches: ReadonlyArray<{ readonly number: number; readonly problem: string }>
  readonly events: number
  readonly schedulerIntervals: ReadonlyArray<SchedulerInterval>
  /** Pairs of intervals that overlap: two servers ran the Scheduler at once. */
  readonly schedulerOverlaps: ReadonlyArray<readonly [SchedulerInterval, SchedulerInterval]>
  /** Seconds from the first delivery to the last review run's end. */
  readonly wallSeconds: number
  readonly runsPerSecond: number
  readonly kill:
    | {
        /** SIGKILL → the Scheduler started on another server. */
        readonly schedulerSeconds: number
        /** SIGKILL → the last run that was RUNNING at the kill finished. */
        readonly inFlightSeconds: number
        readonly inFlight: number
      }
    | undefined
  readonly term:
    | {
        /** SIGTERM → the Scheduler started on another server. */
        readonly schedulerSeconds: number
        /** SIGTERM → the process exited. */
        readonly exitSeconds: number
        readonly inFlightSeconds: number
        readonly inFlight: number
      }
    | undefined
  /** How the SIGTERMed server exited: 0 after a graceful stop. */
  readonly termExitCode: number | null | undefined
  readonly direct: { readonly runs: number; readonly seconds: number; readonly runsPerSecond: number } | undefined
}

interface Server {
  readonly index: number
  readonly port: number
  readonly child: ChildProcess
  readonly exited: Promise<number | null>
  readonly lines: Array<{ readonly at: number; readonly record: Record<string, unknown> }>
  readonly output: () => string
  alive: boolean
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const until = async <A>(what: string, check: () => Promise<A | undefined>, timeoutMs: number, everyMs = 100) => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const found = await check()
    if (found !== undefined) return found
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${timeoutMs} ms`)
    await sleep(everyMs)
  }
}

/** The environment of this process without its Bosun settings, so a server gets only what it is given. */
const inherited = () => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.startsWith("BOSUN_") && key !== "DATABASE_URL" && key !== "REDIS_URL") {
      env[key] = value
    }
  }
  return env
}

const pullRequestOpened = (number: number, head: string, base: string) =>
  JSON.stringify({
    action: "opened",
    number,
    pull_request: {
      id: 7_000_000 + number,
      number,
      title: `Change ${number}`,
      state: "open",
      draft: false,
      merged: false,
      changed_files: 1,
      user: { id: 4_001, login: "dev-anna", type: "User" },
      head: { sha: head, ref: `feature-${number}`, repo: { id: REPOSITORY_ID } },
      base: { sha: base, ref: "main", repo: { id: REPOSITORY_ID } }
    },
    repository: {
      id: REPOSITORY_ID,
      name: "fleet",
      full_name: REPO,
      private: true,
      owner: ACCOUNT,
      default_branch: "main"
    },
    installation: { id: INSTALLATION_ID },
    sender: { id: 4_001, login: "dev-anna" }
  })

const installationCreated = JSON.stringify({
  action: "created",
  installation: { id: INSTALLATION_ID, account: ACCOUNT, app_id: APP_ID, target_type: "Organization" },
  repositories: [{ id: REPOSITORY_ID, name: "fleet", full_name: REPO, private: true }],
  sender: { id: 1, login: "octocat" }
})

/** Posts a signed delivery; the HTTP status, or 0 when the server did not answer. */
const postDelivery = (port: number, secret: string, id: string, event: string, body: string) =>
  fetch(`http://127.0.0.1:${port}/api/v1/github/webhooks`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-delivery": id,
      "x-github-event": event,
      "x-github-hook-installation-target-type": "integration",
      "x-github-hook-installation-target-id": String(APP_ID),
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`
    },
    body,
    signal: AbortSignal.timeout(10_000)
  }).then(
    (response) => response.status,
    () => 0
  )

const spawnServer = (index: number, env: Record<string, string>, nodeFlags: ReadonlyArray<string>, logFile: string) => {
  const child = spawn(process.execPath, [...nodeFlags, serverMain], { env, stdio: ["ignore", "pipe", "pipe"] })
  const lines: Server["lines"] = []
  const log = fs.createWriteStream(logFile)
  let tail = ""
  let buffered = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    const at = Date.now()
    log.write(chunk)
    buffered += chunk.toString()
    let newline = buffered.indexOf("\n")
    while (newline !== -1) {
      const line = buffered.slice(0, newline)
      buffered = buffered.slice(newline + 1)
      newline = buffered.indexOf("\n")
      if (line.includes('"scheduler_')) {
        lines.push({ at, record: JSON.parse(line) as Record<string, unknown> })
      }
      tail = `${tail}${line}\n`.slice(-8000)
    }
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    log.write(chunk)
    tail = (tail + chunk.toString()).slice(-8000)
  })
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  exited.then(() => log.end())
  return { index, child, exited, lines, output: () => tail }
}

/** The baseline runs: the runtime alone doing what each review's attempt asks of it. */
const directRuns = async (
  options: { readonly runs: number; readonly concurrency: number },
  world: {
    readonly runtime: string
    readonly fake: FakeGithub["Service"]
    readonly privateKey: KeyObject
    readonly heads: ReadonlyArray<string>
    readonly prs: number
  }
) => {
  const minted = await fetch(`${world.fake.apiUrl}/app/installations/${INSTALLATION_ID}/access_tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${appJwt(world.privateKey, APP_ID)}`, accept: "application/json" }
  })
  if (minted.status !== 201) throw new Error(`the fake GitHub minted no installation token: ${await minted.text()}`)
  const { token } = (await minted.json()) as { token: string }
  const run = async (index: number) => {
    const number = (index % world.prs) + 1
    const attemptId = `direct-${index}:1`
    const body = JSON.stringify({
      run_id: `direct-${index}`,
      attempt_id: attemptId,
      agent: { kind: "CUSTOM", profile: PROFILE },
      model: "default",
      prompt: `Review pull request #${number} of ${REPO}; the head is checked out at repo.`,
      repositories: [
        {
          id: "repo",
          url: `${world.fake.url}/${REPO}.git`,
          ref: `refs/pull/${number}/head`,
          sha: world.heads[number],
          path: "repo",
          credential: token
        }
      ],
      mcp_servers: [],
      skills: [],
      egress_tier: "STRICT",
      time_limit_seconds: 600,
      credential_mode: "INLINE",
      provider_credentials: { fake: { type: "api", key: "sk-cluster-direct" } }
    })
    const posted = await fetch(`${world.runtime}/v1/runs`, { method: "POST", headers: protocolHeaders, body })
    if (posted.status !== 201) throw new Error(`POST /v1/runs answered ${posted.status}: ${await posted.text()}`)
    const tail = await readTail(`${world.runtime}/v1/runs/${encodeURIComponent(attemptId)}/events?after=0`)
    const finished = tail.lines.find((line) => line.type === "run.finished")
    if (finished === undefined) throw new Error(`the direct run ${attemptId} did not finish`)
  }
  const started = Date.now()
  let next = 0
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (next < options.runs) await run(next++)
    })
  )
  const seconds = (Date.now() - started) / 1000
  return { runs: options.runs, seconds, runsPerSecond: options.runs / seconds }
}

/** Sets everything up, drives the reviews, and reports; every process and file it made is removed with the scope. */
export const runReviewCluster = (settings: ReviewClusterSettings) =>
  Effect.gen(function* () {
    const say = settings.progress ?? (() => undefined)
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
    const scope = yield* Effect.scope
    const fake = yield* Effect.provide(FakeGithub, yield* Layer.buildWithScope(FakeGithub.layer, scope))

    // Redis: a logical database of this run's own, empty before and after.
    const redis = Context.get(yield* Layer.build(Redis.layer(Redacted.make(settings.redisUrl))), Redis).client
    yield* Effect.acquireRelease(
      Effect.promise(() => redis.flushdb()),
      () => Effect.promise(() => redis.flushdb())
    )

    // The outside world: the App on acme/fleet, one commit per pull request.
    fake.addApp({
      clientId: "Iv1.cluster",
      clientSecret: "cluster-client-secret",
      appId: APP_ID,
      publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
      slug: "bosun-cluster"
    })
    fake.addInstallation({ id: INSTALLATION_ID, appId: APP_ID, account: ACCOUNT, repositories: [REPO] })
    const git = yield* Effect.promise(() => makeGitRepository(path.join(settings.root, "git"), REPO))
    fake.addGitRepository(REPO, git.dir)
    const base = yield* Effect.promise(() => git.commit("main", { "README.md": "fleet\n" }, "init"))
    fake.setBranch(REPO, "main", base)
    const heads: Array<string> = []
    yield* Effect.promise(async () => {
      for (let n = 1; n <= settings.prs; n++) {
        const head = await git.commit(
          `feature-${n}`,
          { [FILE]: `export const count = (ships) =>\n  ships.filter((s) => s.active).length + ${n}\n` },
          `change ${n}`,
          { from: "main" }
        )
        await git.setRef(`refs/pull/${n}/head`, head)
        fake.setPull(REPO, {
          number: n,
          title: `Change ${n}`,
          head: { sha: head, ref: `feature-${n}` },
          base: { sha: base, ref: "main" },
          files: await git.pullFiles(base, head)
        })
        heads[n] = head
      }
    })
    say(`${settings.prs} pull requests in git`)

    // The runtime, with the review agent every review runs. As root the runtime runs it as a user
    // of its own, which must reach the script and its workspace under the root.
    fs.chmodSync(settings.root, (fs.statSync(settings.root).mode & 0o777) | 0o011)
    const script = path.join(settings.root, "fixed-review.sh")
    fs.writeFileSync(
      script,
      `#!/bin/sh\ncat > "$BOSUN_OUTPUT_DIR/review.json" <<'JSON'\n${JSON.stringify(REVIEW)}\nJSON\n`,
      { mode: 0o755 }
    )
    const runtime = yield* Effect.acquireRelease(
      Effect.promise(() =>
        startRuntime({
          BOSUN_RUNTIME_DATA_DIR: path.join(settings.root, "runtime"),
          BOSUN_RUNTIME_MAX_RUNS: String(settings.reviewConcurrency * settings.runners + 4),
          BOSUN_RUNTIME_WORKSPACE_RETENTION: "1 second",
          BOSUN_RUNTIME_AGENTS: JSON.stringify({ [PROFILE]: { command: [script] } })
        })
      ),
      (process) => Effect.promise(() => process.stop())
    )

    // The servers.
    const masterKey = randomBytes(32).toString("base64")
    const bootstrapToken = randomBytes(24).toString("hex")
    const dataDir = path.join(settings.root, "server")
    fs.mkdirSync(dataDir, { recursive: true })
    const instance = {
      ...inherited(),
      DATABASE_URL: settings.databaseUrl,
      REDIS_URL: settings.redisUrl,
      BOSUN_MASTER_KEY: masterKey,
      BOSUN_DATA_DIR: dataDir
    }
    const servers: Array<Server> = []
    for (let index = 0; index < settings.runners; index++) {
      const port = yield* Effect.promise(freePort)
      const runnerPort = yield* Effect.promise(freePort)
      const started = yield* Effect.acquireRelease(
        Effect.sync(() =>
          spawnServer(
            index,
            {
              ...instance,
              BOSUN_PORT: String(port),
              BOSUN_RUNNER_PORT: String(runnerPort),
              BOSUN_BOOTSTRAP_TOKEN: bootstrapToken,
              BOSUN_GITHUB_API_URL: fake.apiUrl,
              // The fake GitHub sets no secondary rate limit: writes are not paced, so the figures
              // are the control plane's, not GitHub's guidance of a second between writes.
              BOSUN_GITHUB_WRITE_INTERVAL: "0 millis",
              BOSUN_RUNTIME_URL: runtime.base,
              BOSUN_RUNTIME_TOKEN: TOKEN,
              BOSUN_REVIEW_AGENT_PROFILE: PROFILE,
              BOSUN_LANE_REVIEW_CONCURRENCY: String(settings.reviewConcurrency),
              BOSUN_SHARD_LOCK_EXPIRATION: settings.shardLockExpiration,
              BOSUN_SCHEDULER_IDLE_TICK: "1 second",
              // Runs that lose their runner resume on another (workflow durability), well before
              // lease recovery would start a second attempt: this is about hand-over, not leases.
              BOSUN_ATTEMPT_LEASE: "5 minutes"
            },
            settings.nodeFlags ?? [],
            path.join(settings.root, `server-${index}.log`)
          )
        ),
        (server) =>
          Effect.promise(async () => {
            if (server.child.exitCode !== null || server.child.signalCode !== null) return
            server.child.kill("SIGTERM")
            const timer = setTimeout(() => server.child.kill("SIGKILL"), 20_000)
            await server.exited
            clearTimeout(timer)
          })
      )
      servers.push({ ...started, port, alive: true })
    }
    yield* Effect.promise(() =>
      Promise.all(
        servers.map((server) =>
          until(
            `server ${server.index} to be ready`,
            async () => {
              if (server.child.exitCode !== null) throw new Error(`server ${server.index} exited: ${server.output()}`)
              const status = await fetch(`http://127.0.0.1:${server.port}/readyz`, {
                signal: AbortSignal.timeout(2000)
              }).then(
                (response) => response.status,
                () => 0
              )
              return status === 200 ? true : undefined
            },
            120_000
          )
        )
      )
    )
    say(`${settings.runners} servers ready`)

    const pg = yield* Layer.build(PgClient.layer({ url: Redacted.make(settings.databaseUrl), maxConnections: 3 }))
    const sql = Context.get(pg, SqlClient.SqlClient)
    const query = <A>(effect: Effect.Effect<A, unknown>) => Effect.runPromise(Effect.orDie(effect))

    // The organization, as an operator sets it up.
    const first = servers[0]
    if (first === undefined) return yield* Effect.die(new Error("no server"))
    const api = (method: string, pathname: string, headers: Record<string, string>, body: unknown) =>
      Effect.promise(async () => {
        const response = await fetch(`http://127.0.0.1:${first.port}${pathname}`, {
          method,
          headers: { "content-type": "application/json", ...headers },
          body: JSON.stringify(body)
        })
        const text = await response.text()
        if (response.status !== 200) throw new Error(`${method} ${pathname} answered ${response.status}: ${text}`)
      })
    const webhookSecret = randomBytes(20).toString("hex")
    yield* api(
      "PUT",
      `/api/v1/organizations/${ORG}/github-app`,
      { authorization: `Bearer ${bootstrapToken}` },
      {
        client_id: "Iv1.cluster",
        client_secret: "cluster-client-secret",
        github_app_id: APP_ID,
        github_app_slug: "bosun-cluster",
        private_key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
        webhook_secret: webhookSecret
      }
    )
    const cli = yield* Effect.promise(() =>
      promisify(execFile)(
        process.execPath,
        [cliMain, "sessions", "create", "--org", ORG, "--login", "cluster-admin", "--role", "ADMIN"],
        { env: instance }
      )
    )
    const cookie = cli.stdout.trim().split("\n").pop() ?? ""
    if (!cookie.startsWith("bosun_session=")) {
      return yield* Effect.die(new Error(`the CLI printed no session cookie: ${cli.stdout}${cli.stderr}`))
    }
    // The operator names the GitHub account the organization mirrors; only its installation links it.
    yield* Effect.promise(() =>
      promisify(execFile)(
        process.execPath,
        [cliMain, "organizations", "link", "--org", ORG, "--github-login", ACCOUNT.login],
        { env: { ...instance, BOSUN_GITHUB_API_URL: fake.apiUrl } }
      )
    )
    const installed = yield* Effect.promise(() =>
      postDelivery(first.port, webhookSecret, "cluster-installation", "installation", installationCreated)
    )
    if (installed !== 202) return yield* Effect.die(new Error(`the installation delivery answered ${installed}`))
    yield* Effect.promise(() =>
      until(
        "the installation to be processed",
        () =>
          query(sql<{ n: number }>`SELECT count(*)::int AS n FROM repositories WHERE organization_id = ${ORG}`).then(
            (rows) => ((rows[0]?.n ?? 0) > 0 ? true : undefined)
          ),
        60_000
      )
    )
    yield* api(
      "PUT",
      `/api/v1/organizations/${ORG}/opencode-connection/import`,
      { cookie },
      {
        auth: {
          fake: {
            type: "api",
            key: `sk-cluster-${randomBytes(12).toString("hex")}`,
            npm: "@ai-sdk/openai-compatible",
            // A model in the catalog: every review runs with one, even when a custom profile reviews.
            models: { "fake-coder": { name: "Fake Coder" } }
          }
        }
      }
    )
    yield* Effect.promise(() =>
      until(
        "the set-up's runs to end",
        () =>
          query(
            sql<{ n: number }>`
              SELECT count(*)::int AS n FROM workflow_runs
              WHERE status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`
          ).then((rows) => (rows[0]?.n === 0 ? true : undefined)),
        120_000,
        200
      )
    )
    say("organization set up")

    // Chaos: who runs the Scheduler now, from the servers' log lines.
    const schedulerHolder = () => {
      let holder: { server: Server; at: number } | undefined
      for (const server of servers) {
        for (const { at, record } of server.lines) {
          if (record.msg === "scheduler_started" && (holder === undefined || at > holder.at)) holder = { server, at }
        }
      }
      return holder?.server
    }
    const reviewsPosted = () => {
      let n = 0
      for (let number = 1; number <= settings.prs; number++) if (fake.reviews(REPO, number).length > 0) n++
      return n
    }
    const runningRuns = () =>
      query(
        sql<{ id: string }>`SELECT id FROM workflow_runs WHERE workflow_type = 'review' AND status = 'RUNNING'`
      ).then((rows) => rows.map((row) => row.id))
    let kill: { at: number; server: Server; inFlight: ReadonlyArray<string> } | undefined
    let term: { at: number; server: Server; exitedAt: number | undefined; inFlight: ReadonlyArray<string> } | undefined
    const chaos = async () => {
      const victim = await until(
        "a third of the reviews",
        async () => (reviewsPosted() >= settings.prs / 3 ? schedulerHolder() : undefined),
        settings.timeoutMs,
        50
      )
      const inFlight = await runningRuns()
      victim.alive = false
      kill = { at: Date.now(), server: victim, inFlight }
      victim.child.kill("SIGKILL")
      say(`SIGKILL server ${victim.index} (it ran the Scheduler; ${inFlight.length} runs RUNNING)`)
      const next = await until(
        "two thirds of the reviews and the Scheduler's next runner",
        async () => {
          const holder = schedulerHolder()
          return reviewsPosted() >= (settings.prs * 2) / 3 && holder !== undefined && holder !== victim
            ? holder
            : undefined
        },
        settings.timeoutMs,
        50
      )
      const running = await runningRuns()
      next.alive = false
      const terminated = { at: Date.now(), server: next, exitedAt: undefined as number | undefined, inFlight: running }
      term = terminated
      next.child.kill("SIGTERM")
      say(`SIGTERM server ${next.index} (it ran the Scheduler; ${running.length} runs RUNNING)`)
      await next.exited
      terminated.exitedAt = Date.now()
    }

    // The deliveries: open loop, round robin over the servers still up.
    const undelivered: Array<number> = []
    const startedAt = Date.now()
    const chaosDone = settings.chaos ? chaos() : Promise.resolve()
    let turn = 0
    const deliver = async (number: number) => {
      const body = pullRequestOpened(number, heads[number] ?? "", base)
      for (let tries = 0; tries < 10; tries++) {
        const live = servers.filter((server) => server.alive)
        const server = live[turn++ % live.length]
        if (server === undefined) break
        const status = await postDelivery(server.port, webhookSecret, `cluster-pr-${number}`, "pull_request", body)
        if (status === 202) return
        await sleep(200)
      }
      undelivered.push(number)
    }
    yield* Effect.promise(async () => {
      const pending: Array<Promise<void>> = []
      for (let number = 1; number <= settings.prs; number++) {
        const due = startedAt + ((number - 1) * 1000) / settings.rate
        const wait = due - Date.now()
        if (wait > 0) await sleep(wait)
        pending.push(deliver(number))
      }
      await Promise.all(pending)
    })
    say(`${settings.prs - undelivered.length} deliveries acknowledged`)

    const terminal = sql<{ n: number; last: Date | null }>`
      SELECT count(*)::int AS n, max(finished_at) AS last FROM workflow_runs
      WHERE workflow_type = 'review' AND status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`
    const done = yield* Effect.promise(() =>
      until(
        "every review run to end",
        () =>
          query(terminal).then((rows) =>
            (rows[0]?.n ?? 0) >= settings.prs - undelivered.length ? rows[0] : undefined
          ),
        settings.timeoutMs,
        200
      )
    )
    yield* Effect.promise(() => chaosDone)
    // A run ends when its review is recorded; the review's delivery on bosun-effects posts it.
    const undeliveredReviews = sql<{ n: number }>`
      SELECT count(*)::int AS n FROM outbox WHERE kind = 'github.review_delivery' AND done_at IS NULL`
    yield* Effect.promise(() =>
      until(
        "every review to be delivered",
        () => query(undeliveredReviews).then((rows) => (rows[0]?.n === 0 ? true : undefined)),
        settings.timeoutMs,
        200
      )
    )
    const wallSeconds = ((done.last?.getTime() ?? Date.now()) - startedAt) / 1000
    say(`every review run ended, ${wallSeconds.toFixed(1)} s after the first delivery`)

    // What happened, read back.
    const rows = yield* Effect.orDie(sql<{
      id: string
      number: number
      status: string
      attempts: number
      finished_at: Date | null
      error: string | null
    }>`
      SELECT r.id, r.pull_request_number AS number, r.status, r.finished_at,
             (SELECT count(*)::int FROM workflow_attempts a WHERE a.run_id = r.id) AS attempts,
             CASE WHEN r.status = 'SUCCEEDED' THEN NULL ELSE concat_ws('; ', r.error_code, r.error_message,
               (SELECT string_agg(s.step || ': ' || coalesce(s.error, '?'), ', ')
                FROM workflow_attempt_steps s JOIN workflow_attempts a ON a.id = s.attempt_id
                WHERE a.run_id = r.id AND s.status = 'FAILED')) END AS error
      FROM workflow_runs r WHERE r.workflow_type = 'review' ORDER BY r.pull_request_number, r.created_at`)
    const runs = rows.map((row) => ({
      number: row.number,
      status: row.status,
      attempts: row.attempts,
      reviews: fake.reviews(REPO, row.number).length,
      error: row.error
    }))

    // Each run's events against the runtime's own log of each attempt.
    const stored = yield* Effect.orDie(sql<{ run_id: string; attempt: number; seq: number; type: string }>`
      SELECT run_id, attempt, seq, type FROM workflow_events ORDER BY run_id, seq`)
    const byRun = new Map<string, Array<{ attempt: number; seq: number; type: string }>>()
    for (const event of stored) {
      const list = byRun.get(event.run_id) ?? []
      list.push(event)
      byRun.set(event.run_id, list)
    }
    const eventMismatches: Array<{ number: number; problem: string }> = []
    for (const row of rows) {
      const events = byRun.get(row.id) ?? []
      const gap = events.findIndex((event, index) => Number(event.seq) !== index + 1)
      if (gap !== -1) {
        eventMismatches.push({ number: row.number, problem: `seq ${events[gap]?.seq} at position ${gap + 1}` })
        continue
      }
      // The run's last event is the Scheduler's run.ended, once, after everything the runtime logged.
      const ended = events.filter((event) => event.type === "run.ended")
      if (ended.length !== 1 || events[events.length - 1]?.type !== "run.ended") {
        eventMismatches.push({
          number: row.number,
          problem: `run.ended ${ended.length} time(s), last event ${events[events.length - 1]?.type}`
        })
        continue
      }
      for (let attempt = 1; attempt <= row.attempts; attempt++) {
        const tail = yield* Effect.promise(() =>
          readTail(`${runtime.base}/v1/runs/${encodeURIComponent(`${row.id}:${attempt}`)}/events?after=0`)
        )
        const expected = tail.lines.filter((line) => typeof line.seq === "number").map((line) => String(line.type))
        const got = events
          .filter((event) => event.attempt === attempt && event.type !== "run.ended")
          .map((event) => event.type)
        if (tail.status !== 200) {
          eventMismatches.push({
            number: row.number,
            problem: `the runtime answered ${tail.status} for attempt ${attempt}`
          })
        } else if (JSON.stringify(expected) !== JSON.stringify(got)) {
          eventMismatches.push({
            number: row.number,
            problem: `attempt ${attempt}: the runtime logged ${expected.join(",")}; Bosun stored ${got.join(",")}`
          })
        }
      }
    }

    // The Scheduler's intervals on each server.
    const schedulerIntervals: Array<SchedulerInterval> = []
    for (const server of servers) {
      let open: number | undefined
      for (const { at, record } of server.lines) {
        if (record.msg === "scheduler_started") open = at
        if (record.msg === "scheduler_stopped" && open !== undefined) {
          schedulerIntervals.push({ server: server.index, start: open, end: at })
          open = undefined
        }
      }
      if (open !== undefined) {
        const killedAt = kill?.server === server ? kill.at : undefined
        schedulerIntervals.push({ server: server.index, start: open, end: killedAt })
      }
    }
    schedulerIntervals.sort((a, b) => a.start - b.start)
    const schedulerOverlaps: Array<readonly [SchedulerInterval, SchedulerInterval]> = []
    for (let i = 0; i < schedulerIntervals.length; i++) {
      for (let j = i + 1; j < schedulerIntervals.length; j++) {
        const a = schedulerIntervals[i]
        const b = schedulerIntervals[j]
        if (a !== undefined && b !== undefined && (a.end === undefined || b.start < a.end)) {
          schedulerOverlaps.push([a, b])
        }
      }
    }
    const startedAfter = (at: number, other: Server) =>
      schedulerIntervals.find((interval) => interval.start >= at && interval.server !== other.index)
    const finishedAfter = (ids: ReadonlyArray<string>, at: number) => {
      const ends = rows.filter((row) => ids.includes(row.id)).map((row) => row.finished_at?.getTime() ?? at)
      return ends.length === 0 ? 0 : (Math.max(...ends) - at) / 1000
    }

    const direct =
      settings.direct === undefined
        ? undefined
        : yield* Effect.promise(() =>
            directRuns(settings.direct ?? { runs: 0, concurrency: 1 }, {
              runtime: runtime.base,
              fake,
              privateKey,
              heads,
              prs: settings.prs
            })
          )
    if (direct !== undefined) say(`${direct.runs} direct runs: ${direct.runsPerSecond.toFixed(2)} runs/s`)

    const killed = kill
    const terminated = term
    return {
      runs,
      undelivered,
      eventMismatches,
      events: stored.length,
      schedulerIntervals,
      schedulerOverlaps,
      wallSeconds,
      runsPerSecond: rows.length / wallSeconds,
      kill:
        killed === undefined
          ? undefined
          : {
              schedulerSeconds: ((startedAfter(killed.at, killed.server)?.start ?? Number.NaN) - killed.at) / 1000,
              inFlightSeconds: finishedAfter(killed.inFlight, killed.at),
              inFlight: killed.inFlight.length
            },
      term:
        terminated === undefined
          ? undefined
          : {
              schedulerSeconds:
                ((startedAfter(terminated.at, terminated.server)?.start ?? Number.NaN) - terminated.at) / 1000,
              exitSeconds: ((terminated.exitedAt ?? Number.NaN) - terminated.at) / 1000,
              inFlightSeconds: finishedAfter(terminated.inFlight, terminated.at),
              inFlight: terminated.inFlight.length
            },
      termExitCode: terminated?.server.child.exitCode,
      direct
    } satisfies ReviewClusterReport
  }) satisfies Effect.Effect<ReviewClusterReport, unknown, Scope.Scope>

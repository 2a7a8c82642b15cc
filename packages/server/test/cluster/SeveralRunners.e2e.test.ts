/**
 * Several runners on one Postgres: three production server processes
 * (`support/ServerWithTestWorkflow.ts`, socket transport between runners) share one database and
 * one real runtime; 200 runs are queued; one process is SIGKILLed mid-way. Every run still finishes
 * exactly once — SUCCEEDED, one attempt, one publication — and the test reports how long the
 * failover took: from the kill to the last run that was RUNNING at the kill finishing (the killed
 * runner's attempts resume on the survivors). It reports apart how long the whole backlog (the runs
 * still queued too) took to drain: that is the survivors' throughput, not failover.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { eventually, freshDatabase } from "@bosun/testing"
import { freePort, makeFixtures, type RuntimeProcess, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { PgClient } from "@effect/sql-pg"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { killServer, type ServerProcess, spawnServer, untilReady } from "../support/Process.ts"
import { enqueueRun } from "../support/RunQueueCalls.ts"

const script = fileURLToPath(new URL("../support/ServerWithTestWorkflow.ts", import.meta.url))
const fixtures = makeFixtures()
const RUNS = 200
let runtime: RuntimeProcess

beforeAll(async () => {
  runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data"),
    BOSUN_RUNTIME_MAX_RUNS: "64",
    BOSUN_RUNTIME_WORKSPACE_RETENTION: "1 second",
    BOSUN_RUNTIME_AGENTS: JSON.stringify({
      brief: { command: [fixtures.script("brief.sh", `echo '{"type":"step"}'\nsleep 0.2\necho '{"type":"done"}'`)] }
    })
  })
})
afterAll(async () => {
  await runtime?.stop()
})

describe("three runners on one Postgres", () => {
  it.live(
    "200 runs finish exactly once each while one runner is SIGKILLed mid-way",
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabase
        const dataDir = yield* Effect.acquireRelease(
          Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bosun-runners-"))),
          (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        )
        const shared = {
          DATABASE_URL: database.url,
          BOSUN_MASTER_KEY: randomBytes(32).toString("base64"),
          // One blob store for all: a sealed request written by one runner is read by another.
          BOSUN_DATA_DIR: dataDir,
          BOSUN_RUNTIME_URL: runtime.base,
          BOSUN_RUNTIME_TOKEN: TOKEN,
          BOSUN_SCHEDULER_IDLE_TICK: "300 millis",
          BOSUN_SHARD_LOCK_EXPIRATION: "3 seconds",
          // This test is about workflows resuming on the survivors, so the lease is long enough that
          // lease recovery never starts a second attempt first; lease recovery has tests of its own.
          // (The 84-86 s failovers once seen here were a resumed execute step tailing a finished
          // run: see Durability.e2e.test.ts, "after the run's end was committed".)
          BOSUN_ATTEMPT_LEASE: "5 minutes",
          BOSUN_LANE_AGENT_CONCURRENCY: "24",
          BOSUN_EVENT_FLUSH_INTERVAL: "200 millis",
          TEST_REPO_URL: fixtures.repoUrl
        }
        const servers: Array<ServerProcess> = []
        for (let i = 0; i < 3; i++) {
          const port = yield* Effect.promise(freePort)
          const server = yield* spawnServer({ ...shared, BOSUN_PORT: String(port) }, script)
          servers.push(server)
          yield* untilReady(server, port, Duration.seconds(60))
        }

        const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(database.url), maxConnections: 2 }))
        const sql = yield* Effect.provide(SqlClient.SqlClient, context)
        yield* sql`CREATE TABLE test_published (run_id text, attempt_id text PRIMARY KEY, status text, pid integer)`
        const [org] = yield* sql<{ id: string }>`INSERT INTO organizations (name) VALUES ('runners') RETURNING id`
        const runIds = yield* Effect.forEach(
          Array.from({ length: RUNS }, (_, i) => i),
          () =>
            Effect.map(
              Effect.provideService(
                enqueueRun({
                  organizationId: org?.id ?? "",
                  repositoryId: null,
                  workflowType: "test_echo",
                  lane: "AGENT",
                  inputSnapshot: { profile: "brief" }
                }),
                SqlClient.SqlClient,
                sql
              ),
              (queued) => queued.runId
            ),
          { concurrency: 4 }
        )

        const finished = sql<{
          n: string
        }>`SELECT count(*) AS n FROM workflow_runs WHERE status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`
        yield* eventually(finished, (rows) => Number(rows[0]?.n) >= RUNS / 4, Duration.seconds(120))
        const victim = servers[0]
        assert.isDefined(victim)
        const inFlight = yield* sql<{ id: string; status: string }>`
          SELECT id, status FROM workflow_runs WHERE status IN ('QUEUED', 'RUNNING')`
        const running = inFlight.filter((row) => row.status === "RUNNING")
        const killedAt = Date.now()
        if (victim !== undefined) yield* killServer(victim)

        yield* eventually(finished, (rows) => Number(rows[0]?.n) >= RUNS, Duration.seconds(180)).pipe(
          Effect.catch(() =>
            Effect.die(new Error(`not every run finished; a survivor said: ${servers[1]?.stdout().slice(-4000)}`))
          )
        )
        const lastOf = (ids: ReadonlyArray<string>) =>
          Effect.map(
            sql<{ finished_at: Date | null }>`
              SELECT max(finished_at) AS finished_at FROM workflow_runs WHERE id IN ${sql.in(ids)}`,
            ([row]) => ((row?.finished_at?.getTime() ?? killedAt) - killedAt) / 1000
          )
        const failoverSeconds = running.length === 0 ? 0 : yield* lastOf(running.map((row) => row.id))
        const drainSeconds = yield* lastOf(inFlight.map((row) => row.id))
        console.log(
          `several runners: ${RUNS} runs, ${running.length} running and ${inFlight.length - running.length} queued at the SIGKILL; the last running one finished ${failoverSeconds.toFixed(1)} s after it, the last queued one ${drainSeconds.toFixed(1)} s after it`
        )

        const runs = yield* sql<{ id: string; status: string; attempts: number; published: number }>`
          SELECT r.id, r.status,
                 (SELECT count(*)::int FROM workflow_attempts a WHERE a.run_id = r.id) AS attempts,
                 (SELECT count(*)::int FROM test_published p WHERE p.run_id = r.id) AS published
          FROM workflow_runs r`
        assert.strictEqual(runs.length, RUNS)
        const wrong = runs.filter((run) => run.status !== "SUCCEEDED" || run.attempts !== 1 || run.published !== 1)
        const late =
          running.length === 0
            ? []
            : yield* sql<{ id: string }>`
                SELECT id FROM workflow_runs
                WHERE id IN ${sql.in(running.map((row) => row.id))} AND finished_at > ${new Date(killedAt + 30_000)}`
        if (wrong.length > 0 || late.length > 0) {
          // What each wrong run's attempts and steps did, so a failure here says why.
          const story = yield* sql`
            SELECT a.run_id, a.attempt, a.worker_id, a.exit_reason, a.started_at, a.finished_at,
                   (SELECT json_agg(json_build_object('step', s.step, 'status', s.status, 'executions', s.executions,
                                                      'error', s.error, 'started_at', s.started_at, 'finished_at', s.finished_at)
                                    ORDER BY s.started_at)
                    FROM workflow_attempt_steps s WHERE s.attempt_id = a.id) AS steps
            FROM workflow_attempts a WHERE a.run_id IN ${sql.in([...wrong, ...late].slice(0, 5).map((run) => run.id))}
            ORDER BY a.run_id, a.attempt`
          console.log(
            `killed at ${new Date(killedAt).toISOString()}; wrong or late runs:`,
            JSON.stringify(story, null, 1)
          )
        }
        assert.deepStrictEqual(wrong, [])
        assert.sameMembers(
          runs.map((run) => run.id),
          runIds
        )
        // The runners that survived did the rest.
        const publishers = yield* sql<{ pid: number }>`SELECT DISTINCT pid FROM test_published`
        assert.isAtLeast(publishers.length, 2)
        assert.isBelow(failoverSeconds, 30)
      }).pipe(Effect.scoped),
    300_000
  )
})

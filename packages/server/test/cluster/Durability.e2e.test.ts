/**
 * Durability of a run attempt across a killed server: the production server in a process of its own
 * (`support/ServerWithTestWorkflow.ts`), the real runtime process as its EXTERNAL_RUNTIME, one
 * Postgres. The server is SIGKILLed during execute, and again during publish; started again, the
 * workflow resumes where it was: completed steps are not re-run
 * (`workflow_attempt_steps.executions`), the interrupted one is, the runtime's events reach
 * `workflow_events` exactly once each, and the publication exists once. A third kill lands after
 * the run's end was committed but before the execute step's result was kept (a proxy holds the
 * runtime's result request): the resumed step must not tail a stream that has nothing left.
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
import { startHoldingProxy } from "../support/HoldingProxy.ts"
import { killServer, spawnServer, untilReady } from "../support/Process.ts"
import { enqueueRun } from "../support/RunQueueCalls.ts"

const script = fileURLToPath(new URL("../support/ServerWithTestWorkflow.ts", import.meta.url))
const fixtures = makeFixtures()
let runtime: RuntimeProcess

beforeAll(async () => {
  runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data"),
    BOSUN_RUNTIME_HEARTBEAT: "200 millis",
    BOSUN_RUNTIME_AGENTS: JSON.stringify({
      // Thirty events a tenth of a second apart: three seconds of execute to be killed in.
      slow: {
        command: [
          fixtures.script(
            "slow.sh",
            `i=1; while [ $i -le 30 ]; do echo "{\\"type\\":\\"tick\\",\\"n\\":$i}"; i=$((i+1)); sleep 0.1; done`
          )
        ]
      },
      quick: { command: [fixtures.script("quick.sh", `echo '{"type":"done"}'`)] }
    })
  })
})
afterAll(async () => {
  await runtime?.stop()
})

/** A fresh database with the server's settings for it, a SqlClient on it, and servers to start and kill. */
const setup = Effect.gen(function* () {
  const database = yield* freshDatabase
  const dataDir = yield* Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bosun-durability-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )
  const env = {
    DATABASE_URL: database.url,
    BOSUN_MASTER_KEY: randomBytes(32).toString("base64"),
    BOSUN_DATA_DIR: dataDir,
    BOSUN_PORT: String(yield* Effect.promise(freePort)),
    BOSUN_RUNNER_PORT: String(yield* Effect.promise(freePort)),
    BOSUN_RUNTIME_URL: runtime.base,
    BOSUN_RUNTIME_TOKEN: TOKEN,
    BOSUN_SCHEDULER_IDLE_TICK: "300 millis",
    BOSUN_SHARD_LOCK_EXPIRATION: "3 seconds",
    BOSUN_EVENT_FLUSH_INTERVAL: "200 millis",
    TEST_REPO_URL: fixtures.repoUrl
  }
  const sqlLayer = PgClient.layer({ url: Redacted.make(database.url), maxConnections: 2 })
  const context = yield* Layer.build(sqlLayer)
  const sql = yield* Effect.provide(SqlClient.SqlClient, context)
  const start = (extra: Record<string, string> = {}) =>
    Effect.gen(function* () {
      const server = yield* spawnServer({ ...env, ...extra }, script)
      yield* untilReady(server, Number(env.BOSUN_PORT))
      return server
    })
  const kill = killServer
  return { sql, start, kill }
})

const enqueue = (sql: SqlClient.SqlClient, profile: string) =>
  Effect.gen(function* () {
    yield* sql`CREATE TABLE IF NOT EXISTS test_published (run_id text, attempt_id text PRIMARY KEY, status text, pid integer)`
    const [org] = yield* sql<{ id: string }>`INSERT INTO organizations (name) VALUES ('durable') RETURNING id`
    return yield* Effect.provideService(
      enqueueRun({
        organizationId: org?.id ?? "",
        repositoryId: null,
        workflowType: "test_echo",
        lane: "AGENT",
        inputSnapshot: { profile }
      }),
      SqlClient.SqlClient,
      sql
    )
  })

const stepCounts = (sql: SqlClient.SqlClient, attemptId: string) =>
  Effect.map(
    sql<{ step: string; executions: number; status: string }>`
      SELECT step, executions, status FROM workflow_attempt_steps WHERE attempt_id = ${attemptId}`,
    (rows) => Object.fromEntries(rows.map((row) => [row.step, [row.executions, row.status] as const]))
  )

const runStatus = (sql: SqlClient.SqlClient, runId: string) =>
  Effect.map(sql<{ status: string }>`SELECT status FROM workflow_runs WHERE id = ${runId}`, (rows) => rows[0]?.status)

describe("a killed server", () => {
  it.live(
    "SIGKILLed during execute: on restart the attempt resumes at execute, prepare and acquire-sandbox are not re-run, no event is lost or doubled",
    () =>
      Effect.gen(function* () {
        const { sql, start, kill } = yield* setup
        const first = yield* start()
        const queued = yield* enqueue(sql, "slow")
        yield* eventually(
          sql<{
            n: string
          }>`SELECT count(*) AS n FROM workflow_events WHERE run_id = ${queued.runId} AND type = 'agent.event'`,
          (rows) => Number(rows[0]?.n) >= 3,
          Duration.seconds(20)
        )
        yield* kill(first)
        yield* start()
        yield* eventually(
          runStatus(sql, queued.runId),
          (status) => status === "SUCCEEDED" || status === "FAILED",
          Duration.seconds(40)
        )
        assert.strictEqual(yield* runStatus(sql, queued.runId), "SUCCEEDED")
        const steps = yield* stepCounts(sql, `${queued.runId}:1`)
        assert.deepStrictEqual(steps.prepare, [1, "SUCCEEDED"])
        assert.deepStrictEqual(steps["acquire-sandbox"], [1, "SUCCEEDED"])
        assert.isAtLeast(steps.execute?.[0] ?? 0, 2, "the execute step cut off by the kill ran again")
        assert.deepStrictEqual(steps.publish, [1, "SUCCEEDED"])
        const [job] = yield* sql<{
          attempt: number
          status: string
        }>`SELECT attempt, status FROM jobs WHERE run_id = ${queued.runId}`
        assert.deepStrictEqual(job, { attempt: 1, status: "SUCCEEDED" })
        const events = yield* sql<{ seq: string; type: string; data: { n?: number } }>`
          SELECT seq, type, data FROM workflow_events WHERE run_id = ${queued.runId} ORDER BY seq`
        assert.deepStrictEqual(
          events.map((event) => Number(event.seq)),
          events.map((_, i) => i + 1)
        )
        assert.deepStrictEqual(
          events.filter((event) => event.type === "agent.event").map((event) => event.data.n),
          Array.from({ length: 30 }, (_, i) => i + 1)
        )
        assert.strictEqual(events.filter((event) => event.type === "run.finished").length, 1)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "SIGKILLed after the run's end was committed but before execute's result was kept: the resumed step reads the result at once, one attempt",
    () =>
      Effect.gen(function* () {
        const { sql, start, kill } = yield* setup
        const proxy = yield* startHoldingProxy(runtime.base)
        const first = yield* start({ BOSUN_RUNTIME_URL: proxy.base })
        const queued = yield* enqueue(sql, "quick")
        yield* proxy.holdNext((method, path) => method === "GET" && path.endsWith("/result"))
        const ended = yield* sql<{ n: string }>`
          SELECT count(*) AS n FROM workflow_events WHERE run_id = ${queued.runId} AND type = 'run.finished'`
        assert.strictEqual(Number(ended[0]?.n), 1, "the run's end is committed before its result is asked for")
        yield* kill(first)
        yield* proxy.release
        const resumedAt = Date.now()
        yield* start({ BOSUN_RUNTIME_URL: proxy.base })
        yield* eventually(
          runStatus(sql, queued.runId),
          (status) => status === "SUCCEEDED" || status === "FAILED",
          Duration.seconds(40)
        )
        assert.strictEqual(yield* runStatus(sql, queued.runId), "SUCCEEDED")
        const attempts = yield* sql<{ attempt: number; exit_reason: string }>`
          SELECT attempt, exit_reason FROM workflow_attempts WHERE run_id = ${queued.runId}`
        assert.deepStrictEqual(attempts, [{ attempt: 1, exit_reason: "succeeded" }])
        const steps = yield* stepCounts(sql, `${queued.runId}:1`)
        assert.deepStrictEqual(steps.execute, [2, "SUCCEEDED"], "the execute step cut off by the kill ran again")
        assert.deepStrictEqual(steps.publish, [1, "SUCCEEDED"])
        const events = yield* sql<{ type: string }>`
          SELECT type FROM workflow_events WHERE run_id = ${queued.runId} ORDER BY seq`
        assert.strictEqual(events.filter((event) => event.type === "run.finished").length, 1)
        // Not a timing test: the bound only tells a resumed step that read the result apart from
        // one that waited on an empty tail through its retries (about a minute) and failed.
        assert.isBelow(Date.now() - resumedAt, 30_000)
      }).pipe(Effect.scoped),
    120_000
  )

  it.live(
    "SIGKILLed during publish: on restart publish runs again and the publication exists once",
    () =>
      Effect.gen(function* () {
        const { sql, start, kill } = yield* setup
        const first = yield* start({ TEST_PUBLISH_DELAY_MS: "60000" })
        const queued = yield* enqueue(sql, "quick")
        yield* eventually(
          sql<{ pid: number }>`SELECT pid FROM test_published WHERE run_id = ${queued.runId}`,
          (rows) => rows.length === 1,
          Duration.seconds(20)
        )
        yield* kill(first)
        const second = yield* start()
        yield* eventually(
          runStatus(sql, queued.runId),
          (status) => status === "SUCCEEDED" || status === "FAILED",
          Duration.seconds(40)
        )
        assert.strictEqual(yield* runStatus(sql, queued.runId), "SUCCEEDED")
        const steps = yield* stepCounts(sql, `${queued.runId}:1`)
        assert.deepStrictEqual(steps.prepare, [1, "SUCCEEDED"])
        assert.deepStrictEqual(steps.execute, [1, "SUCCEEDED"])
        assert.deepStrictEqual(steps.publish, [2, "SUCCEEDED"], "the publish step cut off by the kill ran again")
        const published = yield* sql<{ attempt_id: string; pid: number }>`
          SELECT attempt_id, pid FROM test_published WHERE run_id = ${queued.runId}`
        assert.deepStrictEqual(published, [{ attempt_id: `${queued.runId}:1`, pid: first.child.pid ?? 0 }])
        assert.notStrictEqual(second.child.pid, first.child.pid)
      }).pipe(Effect.scoped),
    120_000
  )
})

/**
 * The run pipeline end to end: a run and its job written by `enqueueRun`, claimed by the
 * Scheduler entity, run as a `RunAttemptWorkflow` through its seven steps on the real runtime
 * process (EXTERNAL_RUNTIME), its events flushed to `workflow_events`, the job settled. The
 * workflow type is the test's, registered through the `WorkflowTypes` port; every step around it
 * is production code.
 */
import * as path from "node:path"
import { AttemptError, type WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import type { NewRun } from "@bosun/actors/jobs/RunQueue"
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { RUNTIME_PROTOCOL_HEADER, RUNTIME_PROTOCOL_VERSION, type RunRequest } from "@bosun/domain"
import { eventually, LogCapture } from "@bosun/testing"
import {
  freePort,
  makeFixtures,
  type RuntimeProcess,
  runRequest,
  startRuntime,
  TOKEN
} from "@bosun/testing/RuntimeProcess"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Stream } from "effect"
import { PrometheusMetrics } from "effect/observability"
import { SqlClient } from "effect/sql"
import { layerWorkflowTypes } from "../../src/app/cluster/WorkflowTypesLive.ts"
import { BlobStore } from "../../src/platform/storage/BlobStore.ts"
import { parseExposition, sampleValue } from "../support/Prometheus.ts"
import { enqueueRun, requestCancel } from "../support/RunQueueCalls.ts"
import { layerTestCluster } from "../support/TestCluster.ts"

const fixtures = makeFixtures()
let runtime: RuntimeProcess

beforeAll(async () => {
  runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data"),
    BOSUN_RUNTIME_HEARTBEAT: "200 millis",
    BOSUN_RUNTIME_CANCEL_GRACE: "500 millis",
    BOSUN_RUNTIME_AGENTS: JSON.stringify({
      writer: {
        command: [
          fixtures.script(
            "writer.sh",
            `echo "changed" >> app/README.md
for i in 1 2 3 4 5; do echo "{\\"type\\":\\"step\\",\\"n\\":$i}"; done
echo '{"type":"usage","input_tokens":10,"output_tokens":5}'
echo '{"summary":"done"}' > "$BOSUN_OUTPUT_DIR/report.json"`
          )
        ]
      },
      sleeper: { command: [fixtures.script("sleeper.sh", `echo '{"type":"started"}'\nexec sleep 600`)] },
      crasher: { command: [fixtures.script("crasher.sh", 'echo "boom" >&2\nexit 3')] },
      poisoner: { command: [fixtures.script("poisoner.sh", 'echo \'{"type":"poison"}\'\nsleep 1')] }
    })
  })
})
afterAll(async () => {
  await runtime?.stop()
})

const SECRET_PROMPT = "prompt-that-must-only-be-sealed-7f3a"

/** The test's workflow type: a CUSTOM profile named by the run's input; publishes once per attempt. */
const testType = (
  failFirstPrepare: ReadonlySet<string>,
  sql: SqlClient.SqlClient,
  failFirstPublish: ReadonlySet<string> = new Set()
): WorkflowType => ({
  lane: "AGENT",
  outputs: ["outputs/report.json"],
  prepare: (run) =>
    Effect.gen(function* () {
      if (run.inputSnapshot.profile === "unpreparable") {
        return yield* new AttemptError({ code: "upstream_down", message: "the upstream said 503", retryable: true })
      }
      if (run.attempt === 1 && failFirstPrepare.has(String(run.inputSnapshot.profile))) {
        return yield* new AttemptError({ code: "flaky_upstream", message: "the upstream said 503", retryable: true })
      }
      return {
        request: runRequest(fixtures, {
          run_id: run.runId,
          attempt_id: run.attemptId,
          agent: { kind: "CUSTOM", profile: String(run.inputSnapshot.profile) },
          prompt: SECRET_PROMPT
        }) as unknown as RunRequest,
        sandbox: { provider: "EXTERNAL_RUNTIME", instanceClass: "standard-2", egressTier: "STRICT" },
        grants: [],
        model: "fake/model",
        provider: "fake"
      }
    }),
  publish: ({ run, result, file }) =>
    Effect.gen(function* () {
      if (run.attempt === 1 && failFirstPublish.has(String(run.inputSnapshot.profile))) {
        return yield* new AttemptError({
          code: "github_unavailable",
          message: "GitHub POST /pulls/{number}/reviews answered 502: Bad Gateway",
          retryable: true,
          provider: "github",
          status: 502
        })
      }
      const report = new TextDecoder().decode(yield* file("outputs/report.json"))
      yield* sql`INSERT INTO test_published (attempt_id, status, report) VALUES (${run.attemptId}, ${result.status}, ${report})
                 ON CONFLICT (attempt_id) DO UPDATE SET publishes = test_published.publishes + 1`.pipe(Effect.orDie)
    }),
  reportFailure: (report) =>
    sql`INSERT INTO test_reports (run_id, attempt, step, code, attempts)
        VALUES (${report.run.runId}, ${report.run.attempt}, ${report.step}, ${report.error.code}, ${report.attempts})`.pipe(
      Effect.orDie
    )
})

const runStatus = (runId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ status: string }>`SELECT status FROM workflow_runs WHERE id = ${runId}`
    return row?.status
  })

/** Queues a `test_echo` run of the runtime profile `profile`: AGENT work unless `job` says otherwise. */
const echo = (organizationId: string, profile: string, job: Partial<NewRun> = {}) =>
  enqueueRun({
    organizationId,
    repositoryId: null,
    workflowType: "test_echo",
    lane: "AGENT",
    inputSnapshot: { profile },
    ...job
  })

const cluster = (failFirstPrepare: ReadonlyArray<string> = [], failFirstPublish: ReadonlyArray<string> = []) =>
  Layer.unwrap(
    Effect.map(Effect.promise(freePort), (runnerPort) =>
      layerTestCluster({
        workflowTypes: layerWorkflowTypes(
          Effect.map(SqlClient.SqlClient, (sql) => ({
            test_echo: testType(new Set(failFirstPrepare), sql, new Set(failFirstPublish))
          }))
        ),
        runtime: { url: runtime.base, token: TOKEN },
        runnerPort
      })
    )
  )

const untilStatus = (runId: string, statuses: ReadonlyArray<string>) =>
  eventually(runStatus(runId), (status) => status !== undefined && statuses.includes(status), Duration.seconds(30))

/** The test's table of publications and an organization to run in. */
const setup = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE IF NOT EXISTS test_published (attempt_id text PRIMARY KEY, status text, report text,
             publishes integer NOT NULL DEFAULT 1)`
  yield* sql`CREATE TABLE IF NOT EXISTS test_reports (run_id text, attempt integer, step text, code text, attempts integer)`
  const [org] = yield* sql<{ id: string }>`INSERT INTO organizations (name) VALUES ('pipeline') RETURNING id`
  return { sql, organizationId: org?.id ?? "" }
})

describe("the run pipeline", () => {
  it.live(
    "claims a queued run, runs its attempt through the seven steps on the real runtime, flushes its events in order, and ends SUCCEEDED",
    () =>
      Effect.gen(function* () {
        const { sql, organizationId } = yield* setup
        // Inside the caller's transaction, as a webhook handler writes it.
        const queued = yield* sql.withTransaction(echo(organizationId, "writer"))
        yield* wakeScheduler
        assert.strictEqual(yield* untilStatus(queued.runId, ["SUCCEEDED", "FAILED", "CANCELLED"]), "SUCCEEDED")

        const [job] = yield* sql<{ status: string; attempt: number }>`
          SELECT status, attempt FROM jobs WHERE run_id = ${queued.runId}`
        assert.deepStrictEqual(job, { status: "SUCCEEDED", attempt: 1 })
        const [attempt] = yield* sql<{
          id: string
          status: string
          sandbox_provider: string
          sandbox_id: string
          request_key: string
          exit_reason: string
          retryable: boolean
        }>`SELECT id, status, sandbox_provider, sandbox_id, request_key, exit_reason, retryable
           FROM workflow_attempts WHERE run_id = ${queued.runId}`
        assert.deepStrictEqual(attempt, {
          id: `${queued.runId}:1`,
          status: "SUCCEEDED",
          sandbox_provider: "EXTERNAL_RUNTIME",
          sandbox_id: `external:${queued.runId}:1`,
          request_key: `runs/${queued.runId}/1/request.enc`,
          exit_reason: "succeeded",
          retryable: false
        })
        const [run] = yield* sql<{
          model: string
          provider: string
          sandbox_provider: string
          started_at: Date | null
          finished_at: Date | null
          usage: Record<string, unknown>
        }>`SELECT model, provider, sandbox_provider, started_at, finished_at, usage FROM workflow_runs WHERE id = ${queued.runId}`
        assert.strictEqual(run?.model, "fake/model")
        assert.strictEqual(run?.provider, "fake")
        assert.strictEqual(run?.sandbox_provider, "EXTERNAL_RUNTIME")
        assert.instanceOf(run?.started_at, Date)
        assert.instanceOf(run?.finished_at, Date)
        assert.strictEqual(run?.usage.input_tokens, 10)
        assert.strictEqual(run?.usage.output_tokens, 5)
        assert.strictEqual(run?.usage.attempts, 1)

        // Each step ran once, in order.
        const steps = yield* sql<{ step: string; status: string; executions: number }>`
          SELECT step, status, executions FROM workflow_attempt_steps WHERE attempt_id = ${`${queued.runId}:1`}
          ORDER BY started_at, step`
        assert.deepStrictEqual(
          steps.map((s) => [s.step, s.status, s.executions]),
          [
            ["prepare", "SUCCEEDED", 1],
            ["acquire-sandbox", "SUCCEEDED", 1],
            ["execute", "SUCCEEDED", 1],
            ["publish", "SUCCEEDED", 1],
            ["finish-attempt", "SUCCEEDED", 1],
            ["release-sandbox", "SUCCEEDED", 1],
            ["notify-scheduler", "SUCCEEDED", 1]
          ]
        )

        // The runtime's events, renumbered per run from 1 without gaps, in the runtime's order.
        const events = yield* sql<{ seq: string; attempt: number; type: string; data: unknown }>`
          SELECT seq, attempt, type, data FROM workflow_events WHERE run_id = ${queued.runId} ORDER BY seq`
        assert.deepStrictEqual(
          events.map((e) => Number(e.seq)),
          events.map((_, i) => i + 1)
        )
        assert.deepStrictEqual(
          events.map((e) => e.type),
          [
            "run.phase",
            "run.phase",
            "agent.event",
            "agent.event",
            "agent.event",
            "agent.event",
            "agent.event",
            "agent.event",
            "run.phase",
            "run.finished",
            "run.ended"
          ]
        )
        assert.deepStrictEqual(events[2]?.data, { type: "step", n: 1 })
        // The run's last event, written by the Scheduler in the pass that ended the run.
        assert.deepInclude(events[events.length - 1]?.data, { status: "SUCCEEDED", error: null })
        assert.isTrue(events.every((e) => e.attempt === 1))

        // Published once, with the run's output file.
        const published = yield* sql<{ status: string; report: string; publishes: number }>`
          SELECT status, report, publishes FROM test_published WHERE attempt_id = ${`${queued.runId}:1`}`
        assert.deepStrictEqual(published, [{ status: "SUCCEEDED", report: '{"summary":"done"}\n', publishes: 1 }])

        // The run request is sealed at rest: its prompt is nowhere in the blob.
        const blobs = yield* BlobStore
        const head = yield* blobs.head(`runs/${queued.runId}/1/request.enc`)
        assert.isTrue(head._tag === "Some")
        const body = yield* blobs.get(`runs/${queued.runId}/1/request.enc`)
        const sealed = Buffer.concat(Array.from(yield* Stream.runCollect(body))).toString("latin1")
        assert.isAbove(sealed.length, SECRET_PROMPT.length)
        assert.notInclude(sealed, SECRET_PROMPT)
      }).pipe(Effect.provide(cluster())),
    60_000
  )

  const attemptsOf = (runId: string) =>
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ attempt: number; status: string; exit_reason: string | null; retryable: boolean }>`
        SELECT attempt, status, exit_reason, retryable FROM workflow_attempts WHERE run_id = ${runId} ORDER BY attempt`
    )

  it.live(
    "an attempt that fails retryably is followed by a second one after the backoff, and the run succeeds",
    () =>
      Effect.gen(function* () {
        const { sql, organizationId } = yield* setup
        const queued = yield* echo(organizationId, "writer")
        yield* wakeScheduler
        assert.strictEqual(yield* untilStatus(queued.runId, ["SUCCEEDED", "FAILED"]), "SUCCEEDED")
        assert.deepStrictEqual(yield* attemptsOf(queued.runId), [
          { attempt: 1, status: "FAILED", exit_reason: "flaky_upstream", retryable: true },
          { attempt: 2, status: "SUCCEEDED", exit_reason: "succeeded", retryable: false }
        ])
        const [job] = yield* sql<{
          status: string
          attempt: number
        }>`SELECT status, attempt FROM jobs WHERE run_id = ${queued.runId}`
        assert.deepStrictEqual(job, { status: "SUCCEEDED", attempt: 2 })
        // The first attempt never reached a sandbox: its release step had nothing to release.
        const steps = yield* sql<{ step: string; status: string }>`
          SELECT step, status FROM workflow_attempt_steps WHERE attempt_id = ${`${queued.runId}:1`} ORDER BY started_at`
        assert.deepStrictEqual(
          steps.map((row) => [row.step, row.status]),
          [
            ["prepare", "FAILED"],
            ["finish-attempt", "SUCCEEDED"],
            ["release-sandbox", "SUCCEEDED"],
            ["notify-scheduler", "SUCCEEDED"]
          ]
        )
      }).pipe(Effect.provide(cluster(["writer"]))),
    60_000
  )

  it.live(
    "a publish that fails retryably is retried by a second attempt that publishes the kept outputs: the agent runs once",
    () =>
      Effect.gen(function* () {
        const { sql, organizationId } = yield* setup
        const capture = yield* LogCapture
        const queued = yield* echo(organizationId, "writer")
        yield* wakeScheduler
        assert.strictEqual(yield* untilStatus(queued.runId, ["SUCCEEDED", "FAILED"]), "SUCCEEDED")
        assert.deepStrictEqual(yield* attemptsOf(queued.runId), [
          { attempt: 1, status: "FAILED", exit_reason: "github_unavailable", retryable: true },
          { attempt: 2, status: "SUCCEEDED", exit_reason: "succeeded", retryable: false }
        ])
        // The second attempt went from prepare straight to publish: no sandbox, no agent.
        const steps = yield* sql<{ step: string; status: string; executions: number }>`
          SELECT step, status, executions FROM workflow_attempt_steps
          WHERE attempt_id = ${`${queued.runId}:2`} ORDER BY started_at`
        assert.deepStrictEqual(
          steps.map((row) => [row.step, row.status, row.executions]),
          [
            ["prepare", "SUCCEEDED", 1],
            ["publish", "SUCCEEDED", 1],
            ["finish-attempt", "SUCCEEDED", 1],
            ["release-sandbox", "SUCCEEDED", 1],
            ["notify-scheduler", "SUCCEEDED", 1]
          ]
        )
        // The runtime never heard of a second attempt; the first one's output was published.
        const second = yield* Effect.promise(() =>
          fetch(`${runtime.base}/v1/runs/${encodeURIComponent(`${queued.runId}:2`)}/result`, {
            headers: { authorization: `Bearer ${TOKEN}`, [RUNTIME_PROTOCOL_HEADER]: RUNTIME_PROTOCOL_VERSION }
          }).then((response) => response.status)
        )
        assert.strictEqual(second, 404)
        const [published] = yield* sql<{ status: string; report: string }>`
          SELECT status, report FROM test_published WHERE attempt_id = ${`${queued.runId}:2`}`
        assert.deepStrictEqual({ ...published }, { status: "SUCCEEDED", report: '{"summary":"done"}\n' })
        // One warn line for the failed publish: the step, the provider, its status and its words.
        const failed = (yield* capture.records).filter(
          (record) => record.msg === "attempt_step_failed" && record.run_id === queued.runId
        )
        assert.deepStrictEqual(
          failed.map((record) => [
            record.level,
            record.attempt,
            record.step,
            record.provider,
            record.http_status,
            record.error
          ]),
          [["warn", 1, "publish", "github", 502, "GitHub POST /pulls/{number}/reviews answered 502: Bad Gateway"]]
        )
      }).pipe(Effect.provide(cluster([], ["writer"]))),
    60_000
  )

  it.live(
    "a flush the database refuses fails the attempt at once, retryable, with one error line carrying the database's words",
    () =>
      Effect.gen(function* () {
        const { sql, organizationId } = yield* setup
        const capture = yield* LogCapture
        // Not a value jsonb refuses (those are escaped before the write): the database itself says no.
        yield* sql`CREATE OR REPLACE FUNCTION test_refuse_poison() RETURNS trigger AS $$
                   BEGIN
                     IF NEW.data->>'type' = 'poison' THEN RAISE EXCEPTION 'refused by the test''s trigger'; END IF;
                     RETURN NEW;
                   END $$ LANGUAGE plpgsql`
        yield* sql`CREATE OR REPLACE TRIGGER test_refuse_poison BEFORE INSERT ON workflow_events
                   FOR EACH ROW EXECUTE FUNCTION test_refuse_poison()`
        const queued = yield* echo(organizationId, "poisoner", { maxAttempts: 1 })
        yield* wakeScheduler
        assert.strictEqual(yield* untilStatus(queued.runId, ["SUCCEEDED", "FAILED"]), "FAILED")
        // Ended by the step, not by its lease running out.
        assert.deepStrictEqual(yield* attemptsOf(queued.runId), [
          { attempt: 1, status: "FAILED", exit_reason: "event_flush_failed", retryable: true }
        ])
        const failed = (yield* capture.records).filter(
          (record) => record.msg === "attempt_step_failed" && record.run_id === queued.runId
        )
        assert.deepStrictEqual(
          failed.map((record) => [record.level, record.attempt, record.step, record.code, record.retryable]),
          [["error", 1, "execute", "event_flush_failed", true]]
        )
        assert.match(
          String(failed[0]?.error),
          /^the database refused the run's events: refused by the test's trigger \(SQLSTATE P0001\)$/
        )
      }).pipe(Effect.provide(cluster())),
    60_000
  )

  it.live(
    "a run's last failed attempt is reported once through its workflow type with the step that failed; an attempt that will be retried is not",
    () =>
      Effect.gen(function* () {
        const { sql, organizationId } = yield* setup
        const crashed = yield* echo(organizationId, "crasher")
        const unpreparable = yield* echo(organizationId, "unpreparable", { maxAttempts: 2 })
        const flaky = yield* echo(organizationId, "writer")
        yield* wakeScheduler
        assert.strictEqual(yield* untilStatus(crashed.runId, ["SUCCEEDED", "FAILED"]), "FAILED")
        assert.strictEqual(yield* untilStatus(unpreparable.runId, ["SUCCEEDED", "FAILED"]), "FAILED")
        assert.strictEqual(yield* untilStatus(flaky.runId, ["SUCCEEDED", "FAILED"]), "SUCCEEDED")
        const reports = yield* sql<{ run_id: string; attempt: number; step: string; code: string; attempts: number }>`
          SELECT run_id, attempt, step, code, attempts FROM test_reports
          WHERE run_id IN (${crashed.runId}, ${unpreparable.runId}, ${flaky.runId}) ORDER BY attempts`
        assert.deepStrictEqual(reports, [
          // The agent itself failed: the execute step ended, the run's result says why.
          { run_id: crashed.runId, attempt: 1, step: "execute", code: "agent_failed", attempts: 1 },
          // Retryable, but its attempts are used up: only the second is reported.
          { run_id: unpreparable.runId, attempt: 2, step: "prepare", code: "upstream_down", attempts: 2 }
        ])
      }).pipe(Effect.provide(cluster(["writer"]))),
    90_000
  )

  it.live(
    "a run cancelled mid-execute stops its agent, releases its sandbox and ends CANCELLED",
    () =>
      Effect.gen(function* () {
        const { sql, organizationId } = yield* setup
        const queued = yield* echo(organizationId, "sleeper")
        yield* wakeScheduler
        // The agent is at work once its first event is stored.
        yield* eventually(
          sql<{
            n: string
          }>`SELECT count(*) AS n FROM workflow_events WHERE run_id = ${queued.runId} AND type = 'agent.event'`,
          (rows) => Number(rows[0]?.n) > 0,
          Duration.seconds(20)
        )
        assert.isTrue(yield* requestCancel(organizationId, queued.runId))
        assert.strictEqual(yield* untilStatus(queued.runId, ["SUCCEEDED", "FAILED", "CANCELLED"]), "CANCELLED")
        assert.deepStrictEqual(yield* attemptsOf(queued.runId), [
          { attempt: 1, status: "CANCELLED", exit_reason: "cancelled", retryable: false }
        ])
        const [release] = yield* sql<{ status: string }>`
          SELECT status FROM workflow_attempt_steps WHERE attempt_id = ${`${queued.runId}:1`} AND step = 'release-sandbox'`
        assert.strictEqual(release?.status, "SUCCEEDED")
        const [last, finished] = yield* sql<{ type: string; data: { status: string } }>`
          SELECT type, data FROM workflow_events WHERE run_id = ${queued.runId} ORDER BY seq DESC LIMIT 2`
        assert.strictEqual(finished?.type, "run.finished")
        assert.strictEqual(finished?.data.status, "CANCELLED")
        assert.strictEqual(last?.type, "run.ended")
        assert.strictEqual(last?.data.status, "CANCELLED")
        assert.isFalse(yield* requestCancel(organizationId, queued.runId), "a finished run cannot be cancelled again")
      }).pipe(Effect.provide(cluster())),
    60_000
  )

  it.live(
    "runs of one session run one at a time in order; queued reviews of one pull request keep only the newest",
    () =>
      Effect.gen(function* () {
        const { sql, organizationId } = yield* setup
        const session = yield* Effect.forEach([1, 2, 3], (n) =>
          echo(organizationId, "writer", { sessionKey: "thread-1", inputSnapshot: { profile: "writer", n } })
        )
        const windowEnd = new Date(Date.now() + 1500)
        const older = yield* echo(organizationId, "writer", {
          lane: "REVIEW",
          batchKey: "repo-1#7",
          headSha: "a".repeat(40),
          notBefore: windowEnd
        })
        const newer = yield* echo(organizationId, "writer", {
          lane: "REVIEW",
          batchKey: "repo-1#7",
          headSha: "b".repeat(40),
          notBefore: windowEnd
        })
        yield* wakeScheduler
        for (const run of session)
          assert.strictEqual(yield* untilStatus(run.runId, ["SUCCEEDED", "FAILED"]), "SUCCEEDED")
        const spans = yield* sql<{ run_id: string; started_at: Date; finished_at: Date }>`
          SELECT run_id, started_at, finished_at FROM workflow_attempts
          WHERE run_id IN ${sql.in(session.map((run) => run.runId))} ORDER BY started_at`
        assert.deepStrictEqual(
          spans.map((row) => row.run_id),
          session.map((run) => run.runId)
        )
        for (let i = 1; i < spans.length; i++) {
          assert.isAtLeast(
            spans[i]?.started_at.getTime() ?? 0,
            spans[i - 1]?.finished_at.getTime() ?? Number.POSITIVE_INFINITY,
            "the next run of the session starts after the previous one finished"
          )
        }

        assert.strictEqual(yield* untilStatus(older.runId, ["CANCELLED"]), "CANCELLED")
        assert.strictEqual(yield* untilStatus(newer.runId, ["SUCCEEDED", "FAILED"]), "SUCCEEDED")
        const [superseded] = yield* sql<{ status: string; error_code: string }>`
          SELECT j.status, r.error_code FROM jobs j JOIN workflow_runs r ON r.id = j.run_id WHERE j.run_id = ${older.runId}`
        assert.deepStrictEqual(superseded, { status: "SUPERSEDED", error_code: "superseded" })
        const [review] = yield* sql<{
          started_at: Date
        }>`SELECT started_at FROM workflow_attempts WHERE run_id = ${newer.runId}`
        assert.isAtLeast(
          review?.started_at.getTime() ?? 0,
          windowEnd.getTime() - 50,
          "not claimed while the batch window was open"
        )
      }).pipe(Effect.provide(cluster())),
    90_000
  )

  it.live(
    "an attempt whose worker vanished is failed by lease expiry and a second attempt succeeds",
    () =>
      Effect.gen(function* () {
        const { sql, organizationId } = yield* setup
        const leaseFailures = Effect.map(PrometheusMetrics.format(), (text) =>
          sampleValue(parseExposition(text), "bosun_attempt_failures_total", { step: "lease", cause: "lease_expired" })
        )
        const before = (yield* leaseFailures) ?? 0
        const queued = yield* echo(organizationId, "writer")
        // As if a worker had claimed it long ago and died without its workflow ever starting.
        yield* sql`UPDATE jobs SET status = 'RUNNING', attempt = 1, workflow_started = true WHERE run_id = ${queued.runId}`
        yield* sql`INSERT INTO workflow_attempts (id, run_id, attempt, status, started_at, heartbeat_at)
                   VALUES (${`${queued.runId}:1`}, ${queued.runId}, 1, 'RUNNING', now() - interval '1 hour',
                           now() - interval '1 hour')`
        yield* wakeScheduler
        assert.strictEqual(yield* untilStatus(queued.runId, ["SUCCEEDED", "FAILED"]), "SUCCEEDED")
        assert.deepStrictEqual(yield* attemptsOf(queued.runId), [
          { attempt: 1, status: "FAILED", exit_reason: "lease_expired", retryable: true },
          { attempt: 2, status: "SUCCEEDED", exit_reason: "succeeded", retryable: false }
        ])
        assert.strictEqual(yield* leaseFailures, before + 1, "the expired attempt is counted as an attempt failure")
      }).pipe(Effect.provide(cluster())),
    60_000
  )
})

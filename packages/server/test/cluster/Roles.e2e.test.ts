/**
 * Roles and metrics: one API-only and one runner-only production server process
 * (`support/ServerWithTestWorkflow.ts`, configured by `BOSUN_ROLE`) on one Postgres. The runner
 * hosts every shard and runs the work, serving only the health endpoints; the API process serves
 * the API, joins the cluster as a client and hosts nothing. Each process's `/metrics`, on its own
 * port, is scraped and read as Prometheus samples.
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
import packageJson from "../../package.json" with { type: "json" }
import { spawnServer, untilReady } from "../support/Process.ts"
import { type Sample, samples, sampleValue, scrape } from "../support/Prometheus.ts"
import { enqueueRun } from "../support/RunQueueCalls.ts"

const script = fileURLToPath(new URL("../support/ServerWithTestWorkflow.ts", import.meta.url))
const fixtures = makeFixtures()
const SUCCEEDING = 6
let runtime: RuntimeProcess

beforeAll(async () => {
  runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data"),
    BOSUN_RUNTIME_WORKSPACE_RETENTION: "1 second",
    BOSUN_RUNTIME_AGENTS: JSON.stringify({
      brief: { command: [fixtures.script("brief.sh", `echo '{"type":"step"}'\nsleep 0.2\necho '{"type":"done"}'`)] },
      broken: { command: [fixtures.script("broken.sh", `echo '{"type":"step"}'\nexit 3`)] }
    })
  })
})
afterAll(async () => {
  await runtime?.stop()
})

const get = (url: string, method = "GET") =>
  Effect.promise(async () => {
    const response = await fetch(url, { method, signal: AbortSignal.timeout(10_000) })
    return { status: response.status, body: (await response.json()) as unknown }
  })

const scrapeOf = (port: number) => Effect.promise(() => scrape(`http://127.0.0.1:${port}/metrics`))

describe("roles: an API-only process and a runner-only process", () => {
  it.live(
    "the runner runs every run and answers only health checks; the API process serves the API and hosts no shard; both expose /metrics on their own port",
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabase
        const dataDir = yield* Effect.acquireRelease(
          Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bosun-roles-"))),
          (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        )
        const shared = {
          DATABASE_URL: database.url,
          BOSUN_MASTER_KEY: randomBytes(32).toString("base64"),
          BOSUN_DATA_DIR: dataDir,
          BOSUN_RUNTIME_URL: runtime.base,
          BOSUN_RUNTIME_TOKEN: TOKEN,
          BOSUN_SCHEDULER_IDLE_TICK: "300 millis",
          BOSUN_ATTEMPT_RETRY_BACKOFF: "100 millis",
          BOSUN_EVENT_FLUSH_INTERVAL: "200 millis",
          BOSUN_OUTBOX_RELAY_INTERVAL: "200 millis",
          BOSUN_QUEUE_RETRY_DELAY: "100 millis",
          BOSUN_QUEUE_POLL_INTERVAL: "100 millis",
          TEST_REPO_URL: fixtures.repoUrl
        }
        const port = Effect.promise(freePort)
        const runnerPort = yield* port
        const runnerMetrics = yield* port
        const clusterPort = yield* port
        const apiPort = yield* port
        const apiMetrics = yield* port
        const runner = yield* spawnServer(
          {
            ...shared,
            BOSUN_ROLE: "runner",
            BOSUN_PORT: String(runnerPort),
            BOSUN_RUNNER_PORT: String(clusterPort),
            BOSUN_METRICS_PORT: String(runnerMetrics)
          },
          script
        )
        yield* untilReady(runner, runnerPort, Duration.seconds(60))
        const api = yield* spawnServer(
          { ...shared, BOSUN_ROLE: "api", BOSUN_PORT: String(apiPort), BOSUN_METRICS_PORT: String(apiMetrics) },
          script
        )
        yield* untilReady(api, apiPort, Duration.seconds(60))

        // The runner answers health checks, and nothing of the API.
        assert.deepStrictEqual(yield* get(`http://127.0.0.1:${runnerPort}/healthz`), {
          status: 200,
          body: { status: "ok" }
        })
        assert.deepStrictEqual(yield* get(`http://127.0.0.1:${runnerPort}/readyz`), {
          status: 200,
          body: { status: "ready" }
        })
        const refused = yield* get(`http://127.0.0.1:${runnerPort}/api/v1/openapi.json`)
        assert.strictEqual(refused.status, 404)
        assert.deepStrictEqual(refused.body, {
          error: { code: "route_not_found", message: "No route matches this method and path" }
        })
        // The API process serves the contract.
        const openapi = yield* get(`http://127.0.0.1:${apiPort}/api/v1/openapi.json`)
        assert.strictEqual(openapi.status, 200)
        assert.property((openapi.body as { paths: object }).paths, "/api/v1/me")
        // The dashboard answers every other GET: a POST is what no route matches.
        const unmatched = yield* get(
          `http://127.0.0.1:${apiPort}/no/such/route/${randomBytes(4).toString("hex")}`,
          "POST"
        )
        assert.strictEqual(unmatched.status, 404)

        const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(database.url), maxConnections: 2 }))
        const sql = yield* Effect.provide(SqlClient.SqlClient, context)
        yield* sql`CREATE TABLE test_published (run_id text, attempt_id text PRIMARY KEY, status text, pid integer)`
        const [org] = yield* sql<{ id: string }>`INSERT INTO organizations (name) VALUES ('roles') RETURNING id`
        const enqueue = (profile: string, maxAttempts: number) =>
          Effect.provideService(
            enqueueRun({
              organizationId: org?.id ?? "",
              repositoryId: null,
              workflowType: "test_echo",
              lane: "AGENT",
              inputSnapshot: { profile },
              maxAttempts
            }),
            SqlClient.SqlClient,
            sql
          )
        for (let i = 0; i < SUCCEEDING; i++) yield* enqueue("brief", 3)
        yield* enqueue("broken", 2)
        // An outbox effect no handler knows: its delivery fails, as a provider call that failed would.
        yield* sql`INSERT INTO outbox (queue, kind, payload) VALUES ('bosun-effects', 'nowhere.unknown_effect', '{}'::jsonb)`

        const finished = sql<{ n: number }>`
          SELECT count(*)::int AS n FROM workflow_runs WHERE status IN ('SUCCEEDED', 'FAILED')`
        yield* eventually(finished, (rows) => rows[0]?.n === SUCCEEDING + 1, Duration.seconds(90)).pipe(
          Effect.catch(() =>
            Effect.die(new Error(`runs did not finish; the runner said: ${runner.stdout().slice(-4000)}`))
          )
        )

        // Only the runner registered with the cluster, and it holds every shard.
        const runners = yield* sql<{ address: string }>`SELECT address FROM cluster_runners`
        assert.lengthOf(runners, 1)
        assert.include(runners[0]?.address ?? "", `:${clusterPort}`)
        const published = yield* sql<{ pid: number }>`SELECT DISTINCT pid FROM test_published`
        assert.deepStrictEqual(
          published.map((row) => row.pid),
          [runner.child.pid]
        )

        const failedAttempts = yield* sql<{ error_code: string; n: number }>`
          SELECT a.error_code, count(*)::int AS n FROM workflow_attempts a
          JOIN workflow_runs r ON r.id = a.run_id
          WHERE a.status = 'FAILED' AND r.input_snapshot->>'profile' = 'broken'
          GROUP BY a.error_code`
        assert.lengthOf(failedAttempts, 1, "the broken agent's attempts failed with one code")
        const failure = failedAttempts[0]
        const brokenAttempts = failure?.n ?? 0
        assert.isAtLeast(brokenAttempts, 1)

        const runnerSamples: ReadonlyArray<Sample> = yield* eventually(
          scrapeOf(runnerMetrics),
          (all) =>
            (sampleValue(all, "bosun_outbound_effect_failures_total", { kind: "nowhere.unknown_effect" }) ?? 0) >= 1,
          Duration.seconds(30)
        )
        assert.strictEqual(
          sampleValue(runnerSamples, "bosun_build_info", { version: packageJson.version, role: "runner" }),
          1
        )
        assert.strictEqual(
          sampleValue(runnerSamples, "bosun_runs", { workflow_type: "test_echo", status: "SUCCEEDED" }),
          SUCCEEDING
        )
        assert.strictEqual(
          sampleValue(runnerSamples, "bosun_runs", { workflow_type: "test_echo", status: "FAILED" }),
          1
        )
        // Every claim of an attempt waited in the AGENT lane: one per succeeding run, one per broken attempt.
        assert.strictEqual(
          sampleValue(runnerSamples, "bosun_run_queue_wait_seconds_count", { lane: "AGENT" }),
          SUCCEEDING + brokenAttempts
        )
        assert.strictEqual(
          sampleValue(runnerSamples, "bosun_run_time_to_first_event_seconds_count", { workflow_type: "test_echo" }),
          SUCCEEDING + 1
        )
        const firstEventSum =
          sampleValue(runnerSamples, "bosun_run_time_to_first_event_seconds_sum", { workflow_type: "test_echo" }) ?? 0
        assert.isAbove(firstEventSum, 0)
        assert.isBelow(firstEventSum / (SUCCEEDING + 1), 90)
        assert.strictEqual(
          sampleValue(runnerSamples, "bosun_attempt_failures_total", {
            step: "execute",
            cause: failure?.error_code ?? ""
          }),
          brokenAttempts
        )
        assert.lengthOf(samples(runnerSamples, "bosun_attempt_failures_total"), 1)
        assert.strictEqual(
          sampleValue(runnerSamples, "bosun_outbound_effect_failures_total", {
            provider: "nowhere",
            kind: "nowhere.unknown_effect"
          }),
          sampleValue(runnerSamples, "bosun_outbound_effect_failures_total", { kind: "nowhere.unknown_effect" })
        )
        for (const queue of ["bosun-inbox", "bosun-review-batches"]) {
          assert.strictEqual(sampleValue(runnerSamples, "bosun_queue_depth", { queue }), 0, queue)
          assert.strictEqual(sampleValue(runnerSamples, "bosun_dead_letter_depth", { queue }), 0, queue)
        }
        // The failing effect is being retried or already dead-lettered: counted in one of the two.
        const effectsDepth = sampleValue(runnerSamples, "bosun_queue_depth", { queue: "bosun-effects" }) ?? -1
        const effectsDead = sampleValue(runnerSamples, "bosun_dead_letter_depth", { queue: "bosun-effects" }) ?? -1
        assert.strictEqual(effectsDepth + effectsDead, 1)
        // The runner's only HTTP traffic was health checks.
        assert.deepStrictEqual(
          [
            ...new Set(samples(runnerSamples, "bosun_http_request_duration_seconds_count").map((s) => s.labels.route))
          ].sort(),
          ["/healthz", "/readyz", "unmatched"]
        )

        // The effect dead-letters after five deliveries; the DLQ gauge shows it.
        const dead = yield* eventually(
          scrapeOf(runnerMetrics),
          (all) => sampleValue(all, "bosun_dead_letter_depth", { queue: "bosun-effects" }) === 1,
          Duration.seconds(60)
        )
        assert.strictEqual(
          sampleValue(dead, "bosun_outbound_effect_failures_total", { kind: "nowhere.unknown_effect" }),
          5
        )

        const apiSamples = yield* scrapeOf(apiMetrics)
        assert.strictEqual(
          sampleValue(apiSamples, "bosun_build_info", { version: packageJson.version, role: "api" }),
          1
        )
        assert.strictEqual(
          sampleValue(apiSamples, "bosun_http_request_duration_seconds_count", {
            method: "GET",
            route: "/api/v1/openapi.json",
            status: "200"
          }),
          1
        )
        assert.strictEqual(
          sampleValue(apiSamples, "bosun_http_request_duration_seconds_count", {
            method: "POST",
            route: "unmatched",
            status: "404"
          }),
          1
        )
        const buckets = samples(apiSamples, "bosun_http_request_duration_seconds_bucket", {
          route: "/api/v1/openapi.json"
        })
        assert.strictEqual(buckets.find((b) => b.labels.le === "+Inf")?.value, 1)
        // The API process ran no attempt: its run histograms are empty, its instance-wide gauges agree.
        assert.isUndefined(sampleValue(apiSamples, "bosun_run_queue_wait_seconds_count", { lane: "AGENT" }))
        assert.strictEqual(
          sampleValue(apiSamples, "bosun_runs", { workflow_type: "test_echo", status: "SUCCEEDED" }),
          SUCCEEDING
        )
      }),
    { timeout: 240_000 }
  )
})

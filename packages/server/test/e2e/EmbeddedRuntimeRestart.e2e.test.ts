/**
 * A server on its embedded agent runtime, SIGKILLed while a review's agent runs, then started
 * again on the same data directory: the runtime it launches again answers under the same token,
 * the resumed execute step reads the cut-off attempt back (not started again), a new attempt runs
 * the agent to the end, and the run ends SUCCEEDED with one review. Every event the runtime logged
 * for either attempt is in `workflow_events` once, and a standard EventSource that followed the
 * run across the kill got each of them once, in order, ending with `run.ended`.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { RUN_ENDED, type RunEvent, type WorkflowEvent } from "@bosun/domain"
import { readEvents } from "@bosun/runtime/RunLog"
import { eventually, FakeGithub, TestDatabase } from "@bosun/testing"
import { freePort } from "@bosun/testing/RuntimeProcess"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { EventSource } from "eventsource"
import { killServer, spawnServer, untilReady } from "../support/Process.ts"
import { CART_CONTENT, CART_FILE, CART_REVIEW, reviewedPullRequest } from "../support/ReviewedPullRequest.ts"
import { makeTestServices } from "../support/TestServices.ts"

const MASTER_KEY = randomBytes(32).toString("base64")
const ORG = "restart-org"
const TICKS = 40

const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-embedded-restart-"))
// As root the runtime's agents run as users of their own: they must pass through to their workspaces.
fs.chmodSync(root, 0o711)

/** Forty events a tenth of a second apart, then the review: four seconds of agent to be killed in. */
const SLOW_REVIEW = [
  `i=1; while [ $i -le ${TICKS} ]; do echo "{\\"type\\":\\"tick\\",\\"n\\":$i}"; i=$((i+1)); sleep 0.1; done`,
  `cat > "$BOSUN_OUTPUT_DIR/review.json" <<'JSON'\n${JSON.stringify(CART_REVIEW)}\nJSON`
].join("\n")

/** What the runtime logged for an attempt, from its own log on disk. */
const runtimeLog = (dataDir: string, attemptId: string): Array<RunEvent> =>
  readEvents(path.join(dataDir, "runtime", "runs", attemptId, "events.ndjson"), 0)

const Stack = Layer.mergeAll(makeTestServices(MASTER_KEY), FakeGithub.layer)

layer(Stack, { excludeTestServices: true, timeout: Duration.minutes(4) })("a restart of the embedded runtime", (it) => {
  it.effect(
    "a server killed mid-run comes back under the same runtime token; the run ends SUCCEEDED on a new attempt with every event once",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const database = yield* TestDatabase
        const { fake, fullName, admin, importConnection, openPullRequest } = yield* reviewedPullRequest({
          org: ORG,
          root,
          appId: 5252,
          installationId: 82_101,
          repositoryId: 92_101,
          owner: { id: 72_101, login: "acme", type: "Organization" },
          name: "store",
          webhookSecret: "whsec-restart-7d2e",
          file: CART_FILE,
          content: CART_CONTENT
        })
        const port = yield* Effect.promise(freePort)
        const dataDir = path.join(root, "server")
        // No BOSUN_RUNTIME_URL: the server launches its embedded runtime, as `npm start` does.
        const env = {
          DATABASE_URL: database.url,
          BOSUN_MASTER_KEY: MASTER_KEY,
          BOSUN_DATA_DIR: dataDir,
          BOSUN_PORT: String(port),
          BOSUN_GITHUB_API_URL: fake.apiUrl,
          BOSUN_RUNTIME_AGENTS: JSON.stringify({ "slow-review": { command: ["sh", "-c", SLOW_REVIEW] } }),
          BOSUN_REVIEW_AGENT_PROFILE: "slow-review",
          BOSUN_SCHEDULER_IDLE_TICK: "300 millis",
          BOSUN_SHARD_LOCK_EXPIRATION: "3 seconds",
          BOSUN_EVENT_FLUSH_INTERVAL: "200 millis",
          BOSUN_ATTEMPT_RETRY_BACKOFF: "1 second"
        }
        const start = Effect.gen(function* () {
          const server = yield* spawnServer(env)
          yield* untilReady(server, port)
          return server
        })
        const first = yield* start
        const imported = yield* importConnection(port)
        assert.strictEqual(imported.status, 200, imported.text)
        assert.strictEqual(yield* openPullRequest(port, "restart-delivery-1"), 202)

        const [run] = yield* eventually(
          sql<{ id: string }>`SELECT id FROM workflow_runs WHERE organization_id = ${ORG} AND workflow_type = 'review'`,
          (rows) => rows.length === 1,
          Duration.seconds(60)
        )
        const runId = run?.id ?? ""

        // A standard EventSource follows the run from its start, across the kill.
        const received: Array<WorkflowEvent> = []
        let ends = 0
        const source = new EventSource(
          `http://127.0.0.1:${port}/api/v1/organizations/${ORG}/workflow-runs/${runId}/events/stream`,
          { fetch: (input, init) => fetch(input, { ...init, headers: { ...init.headers, cookie: admin.cookie } }) }
        )
        yield* Effect.addFinalizer(() => Effect.sync(() => source.close()))
        source.onmessage = (message) => {
          received.push(JSON.parse(message.data) as WorkflowEvent)
        }
        source.addEventListener("end", () => {
          ends++
        })

        // Killed while the agent is printing its ticks.
        yield* eventually(
          sql<{
            n: number
          }>`SELECT count(*)::int AS n FROM workflow_events WHERE run_id = ${runId} AND type = 'agent.event'`,
          (rows) => (rows[0]?.n ?? 0) >= 5,
          Duration.seconds(60)
        )
        yield* killServer(first)
        const [cut] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM workflow_events WHERE run_id = ${runId} AND type = 'agent.event'`
        assert.isBelow(cut?.n ?? 0, TICKS, "the agent was still running when the server died")

        const second = yield* start
        const [ended] = yield* eventually(
          sql<{ status: string }>`SELECT status FROM workflow_runs WHERE id = ${runId}`,
          (rows) => ["SUCCEEDED", "FAILED", "CANCELLED"].includes(rows[0]?.status ?? ""),
          Duration.seconds(120)
        )
        assert.strictEqual(ended?.status, "SUCCEEDED")

        const attempts = yield* sql<{ attempt: number; status: string; retryable: boolean; exit_reason: string }>`
          SELECT attempt, status, retryable, exit_reason FROM workflow_attempts WHERE run_id = ${runId} ORDER BY attempt`
        assert.strictEqual(attempts.length, 2)
        assert.strictEqual(attempts[0]?.status, "FAILED")
        assert.isTrue(attempts[0]?.retryable)
        assert.include(["runtime_error", "runtime_restarted"], attempts[0]?.exit_reason)
        assert.strictEqual(attempts[1]?.status, "SUCCEEDED")
        // Never a conflict with the runtime: the resumed step read the cut-off attempt back.
        assert.notInclude(second.stdout() + first.stdout(), "runtime_conflict")

        // Every event the runtime logged, for each attempt, is stored once, in order.
        const stored = yield* sql<{ seq: string; attempt: number; type: string; data: unknown }>`
          SELECT seq, attempt, type, data FROM workflow_events WHERE run_id = ${runId} ORDER BY seq`
        assert.deepStrictEqual(
          stored.map((row) => Number(row.seq)),
          Array.from({ length: stored.length }, (_, i) => i + 1)
        )
        for (const attempt of [1, 2]) {
          const logged = runtimeLog(dataDir, `${runId}:${attempt}`)
          const mine = stored.filter((row) => row.attempt === attempt && row.type !== RUN_ENDED)
          assert.deepStrictEqual(
            mine.map((row) => ({ type: row.type, data: row.data })),
            logged.map((event) => ({ type: event.type, data: event.data })),
            `attempt ${attempt}`
          )
          assert.strictEqual(logged[logged.length - 1]?.type, "run.finished")
        }
        const agentTicks = runtimeLog(dataDir, `${runId}:2`).filter((event) => event.type === "agent.event")
        assert.strictEqual(agentTicks.length, TICKS, "the new attempt ran the agent to its end")
        const last = stored[stored.length - 1]
        assert.strictEqual(last?.type, RUN_ENDED)
        assert.deepInclude(last?.data, { status: "SUCCEEDED", error: null })

        // The EventSource got each stored event once, in order, ended with run.ended, and stopped.
        yield* eventually(
          Effect.sync(() => source.readyState),
          (state) => state === EventSource.CLOSED,
          Duration.seconds(30)
        )
        assert.deepStrictEqual(
          received.map((event) => event.seq),
          stored.map((row) => Number(row.seq))
        )
        assert.strictEqual(received[received.length - 1]?.type, RUN_ENDED)
        assert.strictEqual(ends, 1)

        assert.strictEqual(fake.reviews(fullName, 1).length, 1, "one review")
      }).pipe(Effect.scoped)
  )
})

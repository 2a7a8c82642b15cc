/**
 * A server killed while it publishes a review (kill the server during publish → after restart
 * exactly one review exists). The production server runs in a process of its own (`src/main.ts`, as
 * `npm start` runs it) on a test database, with the real runtime process (a custom review agent
 * profile through `BOSUN_REVIEW_AGENT_PROFILE` that writes a fixed review at once) and the fake
 * GitHub serving the repository over smart HTTP.
 *
 * The worst moment is chosen: GitHub has created the review but its answer is held back, so the
 * server dies not knowing whether its call landed (its provider effect is PENDING). Started
 * again, the review's delivery comes back from `bosun-effects`, finds the review GitHub already
 * has by the marker its body carries, records it, and posts nothing more; the run ends SUCCEEDED
 * in its one attempt, its agent run once.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { eventually, FakeGithub, TestDatabase } from "@bosun/testing"
import { freePort, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { killServer, spawnServer, untilReady } from "../support/Process.ts"
import { CART_CONTENT, CART_FILE, CART_REVIEW, reviewedPullRequest } from "../support/ReviewedPullRequest.ts"
import { makeTestServices } from "../support/TestServices.ts"

const MASTER_KEY = randomBytes(32).toString("base64")
const WEBHOOK_SECRET = "whsec-crash-5a1c"
const APP_ID = 5151
const ORG = "crash-org"
const REPO = "acme/store"
const OWNER = { id: 72_001, login: "acme", type: "Organization" } as const

const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-review-crash-"))
// As root the runtime's agents run as users of their own: they must pass through to their workspaces.
fs.chmodSync(root, 0o711)

const Stack = Layer.mergeAll(makeTestServices(MASTER_KEY), FakeGithub.layer)

layer(Stack, { excludeTestServices: true, timeout: Duration.minutes(3) })("a server killed during publish", (it) => {
  it.effect(
    "GitHub has the review but the server died before its answer: after a restart exactly one review exists and it is recorded",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const database = yield* TestDatabase
        const { fake, importConnection, openPullRequest } = yield* reviewedPullRequest({
          org: ORG,
          root,
          appId: APP_ID,
          installationId: 82_001,
          repositoryId: 92_001,
          owner: OWNER,
          name: "store",
          webhookSecret: WEBHOOK_SECRET,
          file: CART_FILE,
          content: CART_CONTENT
        })

        const runtime = yield* Effect.acquireRelease(
          Effect.promise(() =>
            startRuntime({
              BOSUN_RUNTIME_DATA_DIR: path.join(root, "runtime"),
              BOSUN_RUNTIME_AGENTS: JSON.stringify({
                "fixed-review": {
                  command: [
                    "sh",
                    "-c",
                    `cat > "$BOSUN_OUTPUT_DIR/review.json" <<'JSON'\n${JSON.stringify(CART_REVIEW)}\nJSON`
                  ]
                }
              })
            })
          ),
          (process) => Effect.promise(() => process.stop())
        )
        const port = yield* Effect.promise(freePort)
        const env = {
          DATABASE_URL: database.url,
          BOSUN_MASTER_KEY: MASTER_KEY,
          BOSUN_DATA_DIR: path.join(root, "server"),
          BOSUN_PORT: String(port),
          BOSUN_GITHUB_API_URL: fake.apiUrl,
          BOSUN_RUNTIME_URL: runtime.base,
          BOSUN_RUNTIME_TOKEN: TOKEN,
          BOSUN_REVIEW_AGENT_PROFILE: "fixed-review",
          BOSUN_SCHEDULER_IDLE_TICK: "300 millis",
          BOSUN_SHARD_LOCK_EXPIRATION: "3 seconds"
        }
        const start = Effect.gen(function* () {
          const server = yield* spawnServer(env)
          yield* untilReady(server, port)
          return server
        })
        const first = yield* start

        const imported = yield* importConnection(port)
        assert.strictEqual(imported.status, 200, imported.text)

        // GitHub creates the review at once and answers a minute later.
        fake.delayNext({ method: "POST", path: /\/pulls\/1\/reviews$/, milliseconds: 60_000 })
        assert.strictEqual(yield* openPullRequest(port, "crash-delivery-1"), 202)

        yield* eventually(
          Effect.sync(() => fake.reviews(REPO, 1)),
          (reviews) => reviews.length === 1,
          Duration.seconds(60)
        )
        yield* killServer(first)
        const [pending] = yield* sql<{ status: string; attempts: number }>`
          SELECT status, attempts FROM provider_effects WHERE organization_id = ${ORG} AND kind = 'github.review'`
        assert.deepStrictEqual({ ...pending }, { status: "PENDING", attempts: 1 }, "the server died before the answer")

        yield* start
        const [run] = yield* eventually(
          sql<{ id: string; status: string }>`
            SELECT id, status FROM workflow_runs WHERE organization_id = ${ORG} AND workflow_type = 'review'`,
          (rows) => rows.length === 1 && ["SUCCEEDED", "FAILED"].includes(rows[0]?.status ?? ""),
          Duration.seconds(90)
        )
        assert.strictEqual(run?.status, "SUCCEEDED")

        // The delivery the killed server was making comes back once its claim times out.
        yield* eventually(
          sql<{ done: boolean }>`SELECT done_at IS NOT NULL AS done FROM outbox
            WHERE kind = 'github.review_delivery' AND payload->>'run_id' = ${run?.id ?? ""}`,
          (rows) => rows[0]?.done === true,
          Duration.seconds(90)
        )
        const reviews = fake.reviews(REPO, 1)
        assert.strictEqual(reviews.length, 1, "exactly one review")
        assert.strictEqual(reviews[0]?.comments.length, 1)
        const [effect] = yield* sql<{ status: string; attempts: number; result: { review_id: number } }>`
          SELECT status, attempts, result FROM provider_effects WHERE organization_id = ${ORG} AND kind = 'github.review'`
        assert.strictEqual(effect?.status, "SUCCEEDED")
        assert.strictEqual(effect?.attempts, 2)
        assert.strictEqual(effect?.result.review_id, reviews[0]?.id, "the review GitHub had is the one recorded")
        const posts = fake.requests.filter(
          (request) => request.method === "POST" && /\/pulls\/1\/reviews$/.test(request.path)
        )
        assert.strictEqual(posts.length, 1, "the redelivered review found the one GitHub had instead of posting again")
        const [attempts] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM workflow_attempts WHERE run_id = ${run?.id ?? ""}`
        assert.strictEqual(
          attempts?.n,
          1,
          "the agent ran in one attempt; posting the review never sent the run round again"
        )
        // The run names what ran its review: the operator's profile, not the repository's agent_provider.
        const [shown] = yield* sql<{
          provider: string | null
        }>`SELECT provider FROM workflow_runs WHERE id = ${run?.id ?? ""}`
        assert.strictEqual(shown?.provider, "custom agent profile fixed-review")
        const [finding] = yield* sql<{ state: string; github_comment_id: string | null }>`
          SELECT state, github_comment_id FROM review_findings WHERE organization_id = ${ORG}`
        assert.strictEqual(finding?.state, "OPEN")
        assert.strictEqual(Number(finding?.github_comment_id), reviews[0]?.comments[0]?.id)
      }).pipe(Effect.scoped)
  )
})

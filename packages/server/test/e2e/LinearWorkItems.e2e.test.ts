import type { IntakeOutput } from "@bosun/domain"
import { eventually, FakeLinear, type FakeModelRequest, FakeModelServer, linearSignature } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { commentIdFor } from "../../src/outbound/linear/LinearTracker.ts"
import { connectFakeAgent, layerTestRuntime, outputTurns, runtimeSettings, TestRuntime } from "../support/AgentStack.ts"
import { signIn } from "../support/Identity.ts"
import { layerTestServer, request } from "../support/TestServer.ts"

const ORG = "linear-work"
const WORKSPACE = "lin-ws-work"
const BOSUN_USER = "lin-user-bosun"
const LINEAR_TOKEN = "lin_api_linear_work_e2e_5f6a"
const WEBHOOK_SECRET = "linear-work-webhook-secret"
const ISSUE = "7a2b3c4d-0000-4000-8000-0000000000b1"

/** What the model decides, by a phrase of the prompt; the follow-up's first, as its prompt holds the issue too. */
const decisions = new Map<string, IntakeOutput>([
  ["Webhook retries", { decision: "ANSWER", answer: "Deliveries are retried with backoff for 24 hours." }],
  ["does it retry on 429", { decision: "ANSWER", answer: "Yes: it waits out Retry-After, up to five times." }]
])

const decisionFor = (request: FakeModelRequest): IntakeOutput => {
  const text = JSON.stringify(request.body)
  for (const [phrase, output] of decisions) if (text.includes(phrase)) return output
  return { decision: "NEEDS_CONTEXT", question: "The prompt named no request this test knows." }
}

const Server = Layer.unwrap(
  Effect.gen(function* () {
    const linear = yield* FakeLinear
    const runtime = yield* TestRuntime
    return layerTestServer({
      settings: { linearApiUrl: new URL(linear.apiUrl), runtime: runtimeSettings(runtime) }
    })
  })
).pipe(
  Layer.provideMerge(layerTestRuntime("bosun-linear-work")),
  Layer.provideMerge(FakeModelServer.layer({ turns: outputTurns(2, "intake.json", decisionFor), title: "Intake" })),
  Layer.provideMerge(FakeLinear.layer)
)

const json = (cookie: string, method: string, body?: unknown): RequestInit => ({
  method,
  headers: { cookie, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const deliver = (id: string, event: "Issue" | "Comment", payload: Record<string, unknown>) =>
  Effect.gen(function* () {
    const body = JSON.stringify({ ...payload, organizationId: WORKSPACE, webhookTimestamp: Date.now() })
    const response = yield* request("/api/v1/linear/webhooks", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "Linear-Delivery": id,
        "Linear-Event": event,
        "Linear-Timestamp": String(Date.now()),
        "Linear-Signature": linearSignature(WEBHOOK_SECRET, body)
      },
      body
    })
    assert.strictEqual(response.status, 202, response.text)
  })

layer(Server, { excludeTestServices: true, timeout: Duration.minutes(4) })(
  "work items from Linear end to end",
  (it) => {
    it.effect(
      "an issue assigned to Bosun is answered in a comment; a comment on it is a follow-up answered after it",
      () =>
        Effect.gen(function* () {
          const linear = yield* FakeLinear
          const sql = yield* SqlClient.SqlClient
          linear.addToken(LINEAR_TOKEN, WORKSPACE)
          linear.addIssue({
            id: ISSUE,
            identifier: "ENG-42",
            title: "Does the Slack client retry?",
            url: "https://linear.app/acme/issue/ENG-42"
          })
          const admin = yield* signIn("linear-work-admin", [[ORG, "ADMIN"]])
          const connected = yield* request(
            `/api/v1/organizations/${ORG}/linear-connection`,
            json(admin.cookie, "PUT", {
              linear_organization_id: WORKSPACE,
              webhook_secret: WEBHOOK_SECRET,
              access_token: LINEAR_TOKEN,
              app_user_id: BOSUN_USER,
              app_user_name: "bosun"
            })
          )
          assert.strictEqual(connected.status, 200, connected.text)
          yield* connectFakeAgent(ORG, admin.cookie)

          yield* deliver("lin-work-1", "Issue", {
            action: "create",
            type: "Issue",
            actor: { id: "user-ada", name: "ada" },
            url: "https://linear.app/acme/issue/ENG-42",
            data: {
              id: ISSUE,
              identifier: "ENG-42",
              title: "Does the Slack client retry?",
              description: "When Slack answers 429, does it retry on 429 or drop the message?",
              url: "https://linear.app/acme/issue/ENG-42",
              assigneeId: BOSUN_USER
            }
          })
          yield* deliver("lin-work-2", "Comment", {
            action: "create",
            type: "Comment",
            actor: { id: "user-ben", name: "ben" },
            data: { id: "comment-ben-1", body: "Webhook retries too?", issueId: ISSUE, userId: "user-ben" }
          })

          const runs = yield* eventually(
            sql<{ id: string; status: string; error_message: string | null }>`
          SELECT r.id, r.status, r.error_message FROM workflow_runs r JOIN jobs j ON j.run_id = r.id
          WHERE r.organization_id = ${ORG} AND j.session_key = ${`linear:${ISSUE}`} ORDER BY r.created_at`,
            (rows) => rows.length === 2 && rows.every((row) => ["SUCCEEDED", "FAILED"].includes(row.status)),
            Duration.seconds(120)
          )
          assert.deepStrictEqual(
            runs.map((run) => run.status),
            ["SUCCEEDED", "SUCCEEDED"],
            runs.map((run) => run.error_message).join("; ")
          )
          const comments = yield* Effect.orDie(
            eventually(
              Effect.sync(() => linear.comments(ISSUE)),
              (found) => found.length >= 2
            )
          )
          yield* Effect.sleep(Duration.millis(500))
          assert.deepStrictEqual(
            linear.comments(ISSUE).map((comment) => comment.body),
            ["Yes: it waits out Retry-After, up to five times.", "Deliveries are retried with backoff for 24 hours."]
          )
          assert.strictEqual(comments[0]?.id, commentIdFor(`work_item.intake:${runs[0]?.id}`))
          const [item] = yield* sql<{ state: string; kind: string; source: string; title: string }>`
        SELECT state, kind, source, title FROM work_items WHERE organization_id = ${ORG}`
          assert.deepStrictEqual(item, {
            state: "COMPLETED",
            kind: "QUESTION",
            source: "TRACKER",
            title: "ENG-42: Does the Slack client retry?"
          })
        })
    )
  }
)

import type { IntakeOutput } from "@bosun/domain"
import {
  eventually,
  type FakeModelRequest,
  FakeModelServer,
  FakeSlack,
  signedSlackHeaders,
  systemPrompt
} from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { connectFakeAgent, layerTestRuntime, outputTurns, runtimeSettings, TestRuntime } from "../support/AgentStack.ts"
import { signIn } from "../support/Identity.ts"
import { layerTestServer, request } from "../support/TestServer.ts"

const ORG = "slack-work"
const TEAM = "T0WORK"
const BOT = "U0BOSUN"
const BOT_TOKEN = "xoxb-slack-work-e2e-9a8b"
const SIGNING_SECRET = "slack-work-signing-secret-7c6d"
const CHANNEL = "C0HELP"

/** What the model decides for each request: keyed by a phrase of the request, filled in by the tests. */
const decisions = new Map<string, IntakeOutput>()

const decisionFor = (request: FakeModelRequest): IntakeOutput => {
  const text = JSON.stringify(request.body)
  for (const [phrase, output] of decisions) if (text.includes(phrase)) return output
  return { decision: "NEEDS_CONTEXT", question: "The prompt named no request this test knows." }
}

const Server = Layer.unwrap(
  Effect.gen(function* () {
    const slack = yield* FakeSlack
    const runtime = yield* TestRuntime
    return layerTestServer({
      settings: { slackApiUrl: new URL(slack.apiUrl), runtime: runtimeSettings(runtime) }
    })
  })
).pipe(
  Layer.provideMerge(layerTestRuntime("bosun-slack-work")),
  Layer.provideMerge(FakeModelServer.layer({ turns: outputTurns(4, "intake.json", decisionFor), title: "Intake" })),
  Layer.provideMerge(FakeSlack.layer)
)

const json = (cookie: string, method: string, body?: unknown): RequestInit => ({
  method,
  headers: { cookie, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

/** The organization: Slack connected, two repositories, an OpenCode connection to the fake model. */
const setUp = Effect.gen(function* () {
  const slack = yield* FakeSlack
  slack.addWorkspace({ token: BOT_TOKEN, teamId: TEAM, teamName: "Work", botUserId: BOT })
  const admin = yield* signIn("work-admin", [[ORG, "ADMIN"]])
  const connected = yield* request(
    `/api/v1/organizations/${ORG}/slack-connection`,
    json(admin.cookie, "PUT", { bot_token: BOT_TOKEN, signing_secret: SIGNING_SECRET })
  )
  assert.strictEqual(connected.status, 200, connected.text)
  const repositories = yield* RepositoriesRepo
  yield* repositories.upsert(ORG, { githubRepositoryId: 92_001, owner: "acme", name: "shop", defaultBranch: "main" })
  yield* repositories.upsert(ORG, { githubRepositoryId: 92_002, owner: "acme", name: "api", defaultBranch: "main" })
  yield* connectFakeAgent(ORG, admin.cookie)
  return admin.cookie
})

let seq = 0
/** A person mentions Bosun at the top of the channel; answers the thread's ts. */
const mention = (text: string) =>
  Effect.gen(function* () {
    const ts = `1732380${String(++seq).padStart(3, "0")}.000200`
    const body = JSON.stringify({
      type: "event_callback",
      team_id: TEAM,
      event_id: `Ev0WORK${seq}`,
      event_time: 1_732_380_000,
      event: {
        type: "app_mention",
        channel: CHANNEL,
        channel_type: "channel",
        user: "U0ADA",
        text: `<@${BOT}> ${text}`,
        ts
      }
    })
    const response = yield* request("/api/v1/slack/events", {
      method: "POST",
      headers: signedSlackHeaders(SIGNING_SECRET, body),
      body
    })
    assert.strictEqual(response.status, 202, response.text)
    return ts
  })

const botRepliesIn = (threadTs: string) =>
  Effect.map(FakeSlack, (slack) =>
    slack.messages(CHANNEL).filter((message) => message.thread_ts === threadTs && message.user === BOT)
  )

/** The thread's work item once its intake run has ended, with the run. */
const settled = (threadTs: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const sessionKey = `slack:${TEAM}:${CHANNEL}:${threadTs}`
    const [run] = yield* eventually(
      sql<{ status: string; error_code: string | null; error_message: string | null }>`
        SELECT r.status, r.error_code, r.error_message FROM workflow_runs r JOIN jobs j ON j.run_id = r.id
        WHERE r.organization_id = ${ORG} AND r.workflow_type = 'work_item_intake' AND j.session_key = ${sessionKey}`,
      (rows) => rows.length === 1 && ["SUCCEEDED", "FAILED", "CANCELLED"].includes(rows[0]?.status ?? ""),
      Duration.seconds(120)
    )
    assert.strictEqual(run?.status, "SUCCEEDED", `${run?.error_code}: ${run?.error_message}`)
    const [item] = yield* sql<{ id: string }>`
      SELECT id FROM work_items WHERE organization_id = ${ORG} AND session_key = ${sessionKey}`
    return item?.id ?? ""
  })

layer(Server, { excludeTestServices: true, timeout: Duration.minutes(4) })("work items from Slack end to end", (it) => {
  it.effect(
    "a question gets one threaded answer and the item completes; a change request gets its plan in the thread and waits for APPROVE",
    () =>
      Effect.gen(function* () {
        const cookie = yield* setUp
        const model = yield* FakeModelServer
        const voice = "Answer in the team's voice: short and plain."
        const configured = yield* request(
          `/api/v1/organizations/${ORG}/configuration`,
          json(cookie, "PUT", { custom_instructions: voice })
        )
        assert.strictEqual(configured.status, 204, configured.text)

        // A question: answered in its thread, once.
        decisions.set("how are refunds retried", {
          decision: "ANSWER",
          answer: "Refunds are retried three times by the payments worker, an hour apart."
        })
        const question = yield* mention("how are refunds retried?")
        const questionItem = yield* settled(question)
        const answers = yield* Effect.orDie(eventually(botRepliesIn(question), (replies) => replies.length >= 1))
        yield* Effect.sleep(Duration.millis(500))
        assert.strictEqual((yield* botRepliesIn(question)).length, 1, "exactly one answer")
        assert.strictEqual(answers[0]?.text, "Refunds are retried three times by the payments worker, an hour apart.")
        const answered = yield* request(`/api/v1/organizations/${ORG}/work-items/${questionItem}`, json(cookie, "GET"))
        const answeredItem = (answered.json as { data: Record<string, unknown> }).data
        assert.deepStrictEqual(
          {
            kind: answeredItem.kind,
            state: answeredItem.state,
            phase: answeredItem.phase,
            waiting_reason: answeredItem.waiting_reason,
            active_run_id: answeredItem.active_run_id,
            available_actions: answeredItem.available_actions
          },
          {
            kind: "QUESTION",
            state: "COMPLETED",
            phase: "DONE",
            waiting_reason: null,
            active_run_id: null,
            available_actions: ["REOPEN"]
          }
        )
        assert.isNotNull(answeredItem.completed_at)
        // The agent was given the request and the organization's repositories, and the team's instructions.
        const intake = model.requests.find((entry) => entry.kind === "agent")
        assert.isDefined(intake)
        if (intake !== undefined) assert.include(systemPrompt(intake), `Instructions from this team:\n${voice}`)
        const prompt = JSON.stringify(intake?.body)
        assert.include(prompt, "how are refunds retried?")
        assert.include(prompt, "acme/shop")
        assert.include(prompt, "acme/api")

        // A change request: the plan goes to the thread and the item waits for approval.
        decisions.set("add a health check", {
          decision: "CHANGE",
          repository: "acme/api",
          title: "Add a /healthz endpoint",
          plan: "1. Add a `/healthz` route answering 200.\n2. Test it."
        })
        const change = yield* mention("please add a health check to the api")
        const changeItem = yield* settled(change)
        const plans = yield* Effect.orDie(eventually(botRepliesIn(change), (replies) => replies.length >= 1))
        assert.include(plans[0]?.text ?? "", "**Plan for acme/api: Add a /healthz endpoint**")
        assert.include(plans[0]?.text ?? "", "1. Add a `/healthz` route answering 200.")
        assert.include(plans[0]?.text ?? "", `APPROVE work item ${changeItem}`)
        const waiting = yield* request(`/api/v1/organizations/${ORG}/work-items/${changeItem}`, json(cookie, "GET"))
        const waitingItem = (waiting.json as { data: Record<string, unknown> }).data
        const [api] = (yield* (yield* RepositoriesRepo).list(ORG)).filter((repository) => repository.name === "api")
        assert.deepStrictEqual(
          {
            kind: waitingItem.kind,
            state: waitingItem.state,
            phase: waitingItem.phase,
            waiting_reason: waitingItem.waiting_reason,
            primary_repository_id: waitingItem.primary_repository_id,
            available_actions: waitingItem.available_actions
          },
          {
            kind: "TASK",
            state: "WAITING",
            phase: "PLANNING",
            waiting_reason: "APPROVAL",
            primary_repository_id: api?.id,
            available_actions: ["APPROVE", "REJECT", "CANCEL"]
          }
        )
        assert.strictEqual((yield* botRepliesIn(question)).length, 1, "the first thread got nothing more")
      })
  )

  it.effect(
    "a follow-up while the thread's first run is busy goes to the same work item and runs after it; each gets its threaded answer",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const model = yield* FakeModelServer
        // The follow-up's phrase first: its run's prompt holds the first request too.
        decisions.set("how often does it run", {
          decision: "ANSWER",
          answer: "Every night at 02:00 UTC."
        })
        decisions.set("what does the export job do", {
          decision: "ANSWER",
          answer: "It writes the day's orders to the warehouse as CSV."
        })
        const thread = yield* mention("what does the export job do?")
        const body = JSON.stringify({
          type: "event_callback",
          team_id: TEAM,
          event_id: "Ev0WORKFOLLOW",
          event: {
            type: "message",
            channel: CHANNEL,
            channel_type: "channel",
            user: "U0BEN",
            text: "and how often does it run?",
            ts: "1732389999.000900",
            thread_ts: thread
          }
        })
        const followed = yield* request("/api/v1/slack/events", {
          method: "POST",
          headers: signedSlackHeaders(SIGNING_SECRET, body),
          body
        })
        assert.strictEqual(followed.status, 202, followed.text)

        const sessionKey = `slack:${TEAM}:${CHANNEL}:${thread}`
        const runs = yield* eventually(
          sql<{ id: string; status: string; started_at: Date | null; finished_at: Date | null }>`
            SELECT r.id, r.status, r.started_at, r.finished_at FROM workflow_runs r JOIN jobs j ON j.run_id = r.id
            WHERE r.organization_id = ${ORG} AND j.session_key = ${sessionKey} ORDER BY r.created_at`,
          (rows) => rows.length === 2 && rows.every((row) => row.status === "SUCCEEDED"),
          Duration.seconds(120)
        )
        const [first, second] = runs
        assert.isAtLeast(
          second?.started_at?.getTime() ?? 0,
          first?.finished_at?.getTime() ?? Number.POSITIVE_INFINITY,
          "the follow-up's run started only after the first had finished"
        )
        const items = yield* sql<{ id: string; state: string; kind: string }>`
          SELECT id, state, kind FROM work_items WHERE organization_id = ${ORG} AND session_key = ${sessionKey}`
        assert.deepStrictEqual(
          items.map((item) => [item.state, item.kind]),
          [["COMPLETED", "QUESTION"]]
        )
        const replies = yield* Effect.orDie(eventually(botRepliesIn(thread), (found) => found.length >= 2))
        yield* Effect.sleep(Duration.millis(500))
        assert.deepStrictEqual(
          (yield* botRepliesIn(thread)).map((reply) => reply.text),
          ["It writes the day's orders to the warehouse as CSV.", "Every night at 02:00 UTC."]
        )
        assert.strictEqual(replies.length, 2)
        // The second run saw the whole conversation.
        const prompts = model.requests
          .filter((entry) => entry.kind === "agent")
          .map((entry) => JSON.stringify(entry.body))
          .filter((text) => text.includes("what does the export job do?"))
        assert.isTrue(prompts.some((text) => text.includes("U0BEN: and how often does it run?")))
      })
  )
})

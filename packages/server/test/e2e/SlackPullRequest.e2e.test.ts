/**
 * A change request from Slack to a merged pull request, end to end (a change request in a thread →
 * plan → APPROVE → a pull request on the fake GitHub and its link in the thread; the item follows
 * the PR to merged). Signed Slack events and GitHub webhooks into a real Bosun; the intake and
 * implement runs on the real runtime process with the real OpenCode CLI and a scripted model; the
 * checkout cloned from the fake GitHub over git smart HTTP; the pull request opened through the Git
 * Data API on the fake's real git repository; the replies through `@slack/web-api`.
 */
import { generateKeyPairSync } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  eventually,
  FakeGithub,
  FakeModelServer,
  type FakeModelTurn,
  FakeSlack,
  type GitRepository,
  makeGitRepository,
  signedSlackHeaders
} from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { GithubAppsRepo } from "../../src/outbound/github/GithubAppsRepo.ts"
import { connectFakeAgent, layerTestRuntime, runtimeSettings, TestRuntime } from "../support/AgentStack.ts"
import { APP_ID, deliver as deliverGithub, processed, SECRET } from "../support/GithubDeliveries.ts"
import { signIn } from "../support/Identity.ts"
import { layerTestServer, request } from "../support/TestServer.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const ORG = "slack-pr"
const OWNER = { id: 72_001, login: "acme" }
const INSTALLATION_ID = 82_001
const GITHUB_REPOSITORY_ID = 93_001
const REPO = "acme/api"
const TEAM = "T0PR"
const BOT = "U0BOSUN"
const BOT_TOKEN = "xoxb-slack-pr-e2e-1c2d"
const SIGNING_SECRET = "slack-pr-signing-secret-3e4f"
const CHANNEL = "C0DEV"

const HEALTH = 'export const health = () => ({ status: "ok" })\n'

const turns: ReadonlyArray<FakeModelTurn> = [
  // Intake: the request is a change to acme/api.
  {
    type: "tools",
    calls: [
      {
        name: "bash",
        arguments: {
          command: `cat > "$BOSUN_OUTPUT_DIR/intake.json" <<'JSON'\n${JSON.stringify({
            decision: "CHANGE",
            repository: REPO,
            title: "Add a health check",
            plan: "1. Add `src/health.ts` exporting `health()`.\n2. Mention it in the README."
          })}\nJSON`,
          description: "Write the intake decision"
        }
      }
    ],
    usage: { input: 700, output: 60 }
  },
  { type: "text", text: "Planned.", usage: { input: 750, output: 3 } },
  // Implement: change the checkout, then write the summary.
  {
    type: "tools",
    calls: [
      {
        name: "bash",
        arguments: {
          command: [
            "set -e",
            `cat > repo/src/health.ts <<'TS'\n${HEALTH}TS`,
            `printf '\\nGET /health answers {"status":"ok"}.\\n' >> repo/README.md`,
            `cat > "$BOSUN_OUTPUT_DIR/implement.json" <<'JSON'\n${JSON.stringify({
              summary: "Adds `health()` in `src/health.ts` and documents it."
            })}\nJSON`
          ].join("\n"),
          description: "Implement the plan"
        }
      }
    ],
    usage: { input: 900, output: 120 }
  },
  { type: "text", text: "Implemented.", usage: { input: 950, output: 3 } }
]

class TestRepository extends Context.Service<TestRepository, GitRepository>()("test/SlackPrRepository") {}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-slack-pr-"))

const layerRepository = Layer.effect(
  TestRepository,
  Effect.gen(function* () {
    const repository = yield* Effect.promise(() => makeGitRepository(path.join(root, "git"), REPO))
    ;(yield* FakeGithub).addGitRepository(REPO, repository.dir)
    return repository
  })
)

const Server = Layer.unwrap(
  Effect.gen(function* () {
    const github = yield* FakeGithub
    const slack = yield* FakeSlack
    const runtime = yield* TestRuntime
    return layerTestServer({
      settings: {
        githubApiUrl: new URL(github.apiUrl),
        slackApiUrl: new URL(slack.apiUrl),
        runtime: runtimeSettings(runtime)
      }
    })
  })
).pipe(
  Layer.provideMerge(layerRepository),
  Layer.provideMerge(layerTestRuntime("bosun-slack-pr")),
  Layer.provideMerge(FakeModelServer.layer({ turns, title: "Work" })),
  Layer.provideMerge(FakeSlack.layer),
  Layer.provideMerge(FakeGithub.layer)
)

const json = (cookie: string, method: string, body?: unknown): RequestInit => ({
  method,
  headers: { cookie, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const account = { ...OWNER, type: "Organization" } as const

const setUp = Effect.gen(function* () {
  const github = yield* FakeGithub
  const slack = yield* FakeSlack
  const repository = yield* TestRepository
  const sql = yield* SqlClient.SqlClient
  yield* Effect.promise(() =>
    repository.commit("main", { "README.md": "# api\n", "src/app.ts": "export const app = 1\n" }, "init")
  )
  github.addApp({
    clientId: "Iv1.slack-pr",
    clientSecret: "slack-pr-secret",
    appId: APP_ID,
    publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
    slug: "bosun"
  })
  github.addInstallation({ id: INSTALLATION_ID, appId: APP_ID, account, repositories: [REPO] })
  yield* (yield* OrganizationsRepo).ensure(ORG)
  yield* sql`UPDATE organizations SET github_account_id = ${OWNER.id} WHERE id = ${ORG}`
  yield* (yield* GithubAppsRepo).upsert(ORG, {
    githubAppId: APP_ID,
    slug: "bosun",
    clientId: "Iv1.slack-pr",
    clientSecret: Redacted.make("slack-pr-secret"),
    privateKey: Redacted.make(privateKey.export({ type: "pkcs8", format: "pem" }).toString()),
    webhookSecret: Redacted.make(SECRET)
  })
  const installed = yield* deliverGithub({
    id: "slack-pr-installation",
    event: "installation",
    body: JSON.stringify({
      action: "created",
      installation: { id: INSTALLATION_ID, account, app_id: APP_ID, target_type: "Organization" },
      repositories: [{ id: GITHUB_REPOSITORY_ID, name: "api", full_name: REPO, private: true }],
      sender: { id: 1, login: "octocat" }
    })
  })
  assert.strictEqual(installed.status, 202, installed.text)
  assert.isNull(yield* processed("slack-pr-installation"))

  slack.addWorkspace({ token: BOT_TOKEN, teamId: TEAM, teamName: "PR", botUserId: BOT })
  const admin = yield* signIn("slack-pr-admin", [[ORG, "ADMIN"]])
  const connected = yield* request(
    `/api/v1/organizations/${ORG}/slack-connection`,
    json(admin.cookie, "PUT", { bot_token: BOT_TOKEN, signing_secret: SIGNING_SECRET })
  )
  assert.strictEqual(connected.status, 200, connected.text)
  yield* connectFakeAgent(ORG, admin.cookie)
  return admin.cookie
})

const slackEvent = (eventId: string, event: Record<string, unknown>) =>
  Effect.gen(function* () {
    const body = JSON.stringify({
      type: "event_callback",
      team_id: TEAM,
      event_id: eventId,
      event: { channel: CHANNEL, channel_type: "channel", ...event }
    })
    const response = yield* request("/api/v1/slack/events", {
      method: "POST",
      headers: signedSlackHeaders(SIGNING_SECRET, body),
      body
    })
    assert.strictEqual(response.status, 202, response.text)
  })

const botRepliesIn = (threadTs: string) =>
  Effect.map(FakeSlack, (slack) =>
    slack.messages(CHANNEL).filter((message) => message.thread_ts === threadTs && message.user === BOT)
  )

const itemState = (cookie: string, id: string) =>
  Effect.map(
    request(`/api/v1/organizations/${ORG}/work-items/${id}`, json(cookie, "GET")),
    (response) => (response.json as { data: Record<string, unknown> }).data
  )

layer(Server, { excludeTestServices: true, timeout: Duration.minutes(5) })(
  "a change request from Slack to a pull request",
  (it) => {
    it.effect(
      "plan in the thread, approved by a reply, a draft pull request with exactly the agent's change, its link in the thread, and the item done when it merges",
      () =>
        Effect.gen(function* () {
          const cookie = yield* setUp
          const github = yield* FakeGithub
          const sql = yield* SqlClient.SqlClient
          const thread = "1732400000.000100"
          yield* slackEvent("Ev0PR1", {
            type: "app_mention",
            user: "U0ADA",
            text: `<@${BOT}> please add a health check to the api`,
            ts: thread
          })
          const plans = yield* Effect.orDie(
            eventually(botRepliesIn(thread), (replies) => replies.length >= 1, Duration.seconds(120))
          )
          assert.include(plans[0]?.text ?? "", "**Plan for acme/api: Add a health check**")
          assert.include(plans[0]?.text ?? "", "press Approve below, reply `approve` here")
          // The plan carries its Approve and Reject buttons (Block Kit), valued with the item's id.
          const buttons = (plans[0]?.blocks ?? []).at(-1) as
            | { type: string; elements: ReadonlyArray<{ action_id: string; value: string }> }
            | undefined
          assert.strictEqual(buttons?.type, "actions")
          assert.deepStrictEqual(
            buttons?.elements.map((element) => element.action_id),
            ["work_item.approve", "work_item.reject"]
          )
          const [row] = yield* sql<{ id: string }>`SELECT id FROM work_items WHERE organization_id = ${ORG}`
          const id = row?.id ?? ""
          assert.strictEqual(buttons?.elements[0]?.value, id)
          const waiting = yield* itemState(cookie, id)
          assert.deepStrictEqual([waiting.state, waiting.waiting_reason], ["WAITING", "APPROVAL"])

          // Approved by a reply in the thread.
          yield* slackEvent("Ev0PR2", {
            type: "message",
            user: "U0ADA",
            text: "approve",
            ts: "1732400001.000100",
            thread_ts: thread
          })
          const replies = yield* Effect.orDie(
            eventually(botRepliesIn(thread), (found) => found.length >= 2, Duration.seconds(120))
          )
          const [opened] = github.createdPulls(REPO)
          assert.isDefined(opened, `one pull request was opened; the thread says: ${replies[1]?.text}`)
          assert.strictEqual(github.createdPulls(REPO).length, 1)
          assert.strictEqual(opened?.title, "Add a health check")
          assert.strictEqual(opened?.draft, true, "issue_pull_request_mode DRAFT (the default) opens a draft")
          assert.strictEqual(opened?.base.ref, "main")
          assert.match(opened?.head.ref ?? "", /^bosun\/wi-/)
          assert.include(opened?.body ?? "", "Adds `health()` in `src/health.ts` and documents it.")
          assert.include(opened?.body ?? "", "### Plan")
          const url = `https://github.com/${REPO}/pull/${opened?.number}`
          assert.strictEqual(replies[1]?.text, `Opened ${url} for review: Add a health check`)
          // The branch holds exactly the agent's change on main.
          const head = opened?.head.ref ?? ""
          assert.strictEqual(yield* github.fileAt(REPO, head, "src/health.ts"), HEALTH)
          assert.strictEqual(
            yield* github.fileAt(REPO, head, "README.md"),
            '# api\n\nGET /health answers {"status":"ok"}.\n'
          )
          assert.strictEqual(yield* github.fileAt(REPO, head, "src/app.ts"), "export const app = 1\n")
          const reviewing = yield* itemState(cookie, id)
          assert.deepStrictEqual([reviewing.state, reviewing.phase], ["IN_PROGRESS", "REVIEWING"])

          // GitHub says it was merged: the item is done.
          const merged = yield* deliverGithub({
            id: "slack-pr-merged",
            event: "pull_request",
            body: JSON.stringify({
              action: "closed",
              number: opened?.number,
              pull_request: {
                id: 7_000_001,
                number: opened?.number,
                title: "Add a health check",
                state: "closed",
                draft: false,
                merged: true,
                changed_files: 2,
                user: { id: 5_001, login: "bosun[bot]", type: "Bot" },
                head: { sha: opened?.head.sha, ref: head, repo: { id: GITHUB_REPOSITORY_ID } },
                base: { sha: opened?.base.sha, ref: "main", repo: { id: GITHUB_REPOSITORY_ID } }
              },
              repository: {
                id: GITHUB_REPOSITORY_ID,
                name: "api",
                full_name: REPO,
                private: true,
                owner: account,
                default_branch: "main"
              },
              installation: { id: INSTALLATION_ID },
              sender: { id: 4_001, login: "dev-ada" }
            })
          })
          assert.strictEqual(merged.status, 202, merged.text)
          assert.isNull(yield* processed("slack-pr-merged"))
          const done = yield* itemState(cookie, id)
          assert.deepStrictEqual([done.state, done.phase, done.available_actions], ["COMPLETED", "DONE", ["REOPEN"]])
          assert.strictEqual((yield* botRepliesIn(thread)).length, 2)
        })
    )
  }
)

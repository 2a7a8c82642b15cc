/**
 * A memory learned from review feedback, end to end (a reply "we always use parameterized queries
 * through db.query here" on a finding → a PROPOSED memory with provenance → approve → the next
 * review's run request contains it). A real Bosun reviews a pull request on the fake GitHub through
 * the real runtime and OpenCode with a scripted model; a person's reply in the finding's thread
 * arrives as a signed webhook and queues a memory-distill run, whose agent proposes the convention;
 * an `@bosun remember` restating it is merged into that memory, not proposed twice; approved and
 * enabled, the memory is in the next review's instructions, and what the review says it did with it
 * is the memory's measured effect.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { Memory, ReviewOutput } from "@bosun/domain"
import {
  eventually,
  FakeGithub,
  type FakeModelRequest,
  FakeModelServer,
  type FakeModelTurn,
  type GitRepository
} from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import {
  connectFakeAgent,
  jsonRequest,
  layerAgentServer,
  layerGitRepository,
  runEnded as runEndedOf
} from "../support/AgentStack.ts"
import { processed } from "../support/GithubDeliveries.ts"
import { signIn } from "../support/Identity.ts"
import { deliveries, installApp, type Tenant } from "../support/InstalledApp.ts"
import { eventRepository, pullRequestEvent, pushToPull } from "../support/PullRequests.ts"
import { request } from "../support/TestServer.ts"

const tenant: Tenant = {
  org: "memory-e2e",
  account: { id: 73_101, login: "acme-mem" },
  installationId: 83_101,
  githubRepositoryId: 94_101,
  fullName: "acme-mem/shop"
}
const ORG = tenant.org
const REPO = tenant.fullName
const FILE = "src/users.js"

const FIRST = 'exports.findUser = (db, id) => db.query("SELECT * FROM users WHERE id = " + id)\n'
const SECOND = `${FIRST}exports.findOrder = (db, id) => db.raw("SELECT * FROM orders WHERE id = " + id)\n`

const REPLY = "we always use parameterized queries through db.query here"
const CONVENTION =
  "Database access goes through db.query with parameters ($1, $2, …); SQL text is never built from input."

const finding = (line: number, title: string, memoryIds?: ReadonlyArray<string>) => ({
  path: FILE,
  start_line: line,
  end_line: line,
  side: "RIGHT" as const,
  severity: "HIGH" as const,
  category: "CWE-89",
  title,
  body: `${title}: the id reaches the SQL text.`,
  ...(memoryIds === undefined ? {} : { memory_ids: memoryIds })
})

/** Review outputs by head, filled in as the test pushes. */
const reviews = new Map<string, (memoryId: string) => ReviewOutput>()

const bodyOf = (request: FakeModelRequest) => JSON.stringify(request.body)
const memoryIdIn = (text: string) => /- ([0-9a-f-]{36}) \(PROPOSED/.exec(text)?.[1] ?? null

/** What the agent writes, by what it was asked: a memory decision or a review of the head named. */
const answer = (request: FakeModelRequest): { readonly file: string; readonly output: unknown } => {
  const text = bodyOf(request)
  if (text.includes("memory keeper")) {
    const existing = memoryIdIn(text)
    return {
      file: "memory.json",
      output:
        existing === null
          ? {
              propose: true,
              convention: CONVENTION,
              purpose: "Keeps every query safe from SQL injection.",
              rationale: "The team's data layer parameterizes every query through db.query.",
              scope: "REPOSITORY",
              language: "javascript",
              restates_memory_id: null,
              reason: "The reply states how this repository always queries its database."
            }
          : { propose: true, restates_memory_id: existing, reason: "It restates the db.query convention." }
    }
  }
  for (const [head, output] of reviews) {
    if (text.includes(head)) {
      const cited = /\[([0-9a-f-]{36})\]/.exec(text)?.[1] ?? "none"
      return { file: "review.json", output: output(cited) }
    }
  }
  return { file: "review.json", output: { summary: "No head this test knows.", findings: [] } }
}

const turns = (runs: number): ReadonlyArray<FakeModelTurn> =>
  Array.from(
    { length: runs },
    (): ReadonlyArray<FakeModelTurn> => [
      {
        type: "tools",
        calls: [
          {
            name: "bash",
            arguments: (request) => {
              const { file, output } = answer(request)
              return {
                command: `cat > "$BOSUN_OUTPUT_DIR/${file}" <<'JSON'\n${JSON.stringify(output)}\nJSON`,
                description: `Write ${file}`
              }
            }
          }
        ],
        usage: { input: 900, output: 60 }
      },
      { type: "text", text: "Written.", usage: { input: 1_000, output: 4 } }
    ]
  ).flat()

class TestRepository extends Context.Service<TestRepository, GitRepository>()("test/MemoryRepository") {}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-memory-e2e-"))

const Server = layerAgentServer({
  name: "bosun-memory-e2e",
  title: "Memory",
  turns: turns(4),
  repositories: layerGitRepository(TestRepository, root, REPO)
})

const json = jsonRequest
const runEnded = (workflowType: string, count: number) => runEndedOf(ORG, workflowType, count)

layer(Server, { excludeTestServices: true, timeout: Duration.minutes(5) })("memories from review feedback", (it) => {
  it.effect(
    "a reply on a finding becomes a PROPOSED memory with its provenance; @bosun remember restating it is merged; approved and enabled, it is in the next review's instructions and its effect is measured",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeGithub
        const model = yield* FakeModelServer
        const repository = yield* TestRepository
        const sql = yield* SqlClient.SqlClient
        const { send, sendNew } = deliveries("memory-e2e")
        const base = yield* Effect.promise(() => repository.commit("main", { "README.md": "# shop\n" }, "init"))
        const repositoryId = yield* installApp(tenant, { slug: "bosun", clientId: "Iv1.memory-e2e" }, sendNew)
        const admin = yield* signIn("memory-admin", [[ORG, "ADMIN"]])
        yield* connectFakeAgent(ORG, admin.cookie)

        // The first review raises the interpolated query.
        const head1 = yield* pushToPull(repository, REPO, { number: 1, base, files: { [FILE]: FIRST } })
        reviews.set(head1, () => ({
          summary: "Adds findUser.",
          findings: [finding(1, "SQL built from the id")]
        }))
        yield* sendNew("pull_request", pullRequestEvent(tenant, { action: "opened", number: 1, head: head1, base }))
        const firstReview = yield* runEnded("review", 1)
        const [posted] = fake.reviews(REPO, 1)
        const commentId = posted?.comments[0]?.id ?? 0
        assert.isAbove(commentId, 0)

        // A person answers in the finding's thread.
        const replyId = fake.addReply(REPO, 1, commentId, { login: "dev-anna", body: REPLY })
        const replyUrl = `https://github.com/${REPO}/pull/1#discussion_r${replyId}`
        const reply = yield* sendNew(
          "pull_request_review_comment",
          JSON.stringify({
            action: "created",
            comment: {
              id: replyId,
              in_reply_to_id: commentId,
              body: REPLY,
              path: FILE,
              html_url: replyUrl,
              author_association: "MEMBER",
              user: { id: 4_001, login: "dev-anna", type: "User" }
            },
            pull_request: { number: 1 },
            repository: eventRepository(tenant),
            installation: { id: tenant.installationId }
          })
        )
        assert.isNull(yield* processed(reply))
        const distill = yield* runEnded("memory_distill", 1)
        const [findingRow] = yield* sql<{ id: string; state: string }>`
          SELECT id, state FROM review_findings WHERE organization_id = ${ORG} AND github_comment_id = ${commentId}`

        const list = Effect.map(
          request(`/api/v1/organizations/${ORG}/memories`, json(admin.cookie, "GET")),
          (response) => (response.json as { data: ReadonlyArray<Memory> }).data
        )
        const [proposed] = yield* list
        assert.isDefined(proposed)
        assert.strictEqual(proposed?.lifecycle, "PROPOSED")
        assert.strictEqual(proposed?.enabled, false)
        assert.strictEqual(proposed?.convention, CONVENTION)
        assert.strictEqual(proposed?.scope, "REPOSITORY")
        assert.strictEqual(proposed?.repository_id, repositoryId)
        assert.strictEqual(proposed?.repository_name, "shop")
        assert.strictEqual(proposed?.purpose, "Keeps every query safe from SQL injection.")
        assert.strictEqual(proposed?.rationale, "The team's data layer parameterizes every query through db.query.")
        assert.strictEqual(proposed?.source_type, "REVIEW_REPLY")
        assert.strictEqual(proposed?.source_url, replyUrl)
        assert.strictEqual(proposed?.source_actor, "dev-anna")
        assert.strictEqual(proposed?.proposed_by_login, "dev-anna")
        assert.strictEqual(proposed?.source_finding_id, findingRow?.id)
        assert.strictEqual(proposed?.source_run_id, distill)
        assert.deepStrictEqual(proposed?.metadata, {
          file_path: FILE,
          language: "javascript",
          pull_request_number: 1,
          source_comment_id: replyId
        })
        assert.deepStrictEqual(
          proposed?.sources.map((source) => [source.source_type, source.excerpt, source.source_comment_id]),
          [["REVIEW_REPLY", REPLY, replyId]]
        )
        // The reply answered the finding, too: it is dismissed.
        assert.strictEqual(findingRow?.state, "DISMISSED")

        // `@bosun remember` restating it: merged into the memory, its source appended, not proposed twice.
        const remember = yield* sendNew(
          "issue_comment",
          JSON.stringify({
            action: "created",
            issue: { number: 1, title: "Change 1", state: "open", user: { login: "dev-anna" }, pull_request: {} },
            comment: {
              id: 55_501,
              body: "@bosun remember queries take parameters through db.query, always",
              html_url: `https://github.com/${REPO}/pull/1#issuecomment-55501`,
              author_association: "MEMBER",
              user: { id: 4_002, login: "dev-ben", type: "User" }
            },
            repository: eventRepository(tenant),
            installation: { id: tenant.installationId }
          })
        )
        assert.isNull(yield* processed(remember))
        yield* runEnded("memory_distill", 2)
        const merged = yield* list
        assert.strictEqual(merged.length, 1)
        assert.deepStrictEqual(
          merged[0]?.sources.map((source) => [source.source_type, source.source_actor, source.excerpt]),
          [
            ["REVIEW_REPLY", "dev-anna", REPLY],
            ["REMEMBER_COMMAND", "dev-ben", "queries take parameters through db.query, always"]
          ]
        )
        const acknowledged = yield* eventually(
          Effect.sync(() => fake.issueComments(REPO, 1)),
          (comments) => comments.some((comment) => comment.body.includes("Thanks @dev-ben")),
          Duration.seconds(30)
        )
        assert.isTrue(acknowledged.some((comment) => comment.body.includes("proposed memory")))

        // Approved and enabled by an admin.
        const memoryId = proposed?.id ?? ""
        const approved = yield* request(
          `/api/v1/organizations/${ORG}/memories/${memoryId}/decision`,
          json(admin.cookie, "POST", { decision: "approve" })
        )
        assert.strictEqual(approved.status, 200, approved.text)
        assert.strictEqual((approved.json as { data: Memory }).data.approved_by_login, "memory-admin")
        const enabled = yield* request(
          `/api/v1/organizations/${ORG}/memories/${memoryId}`,
          json(admin.cookie, "PATCH", { enabled: true })
        )
        assert.strictEqual(enabled.status, 200, enabled.text)

        // The next review is given the memory, and says what it did with it.
        const head2 = yield* pushToPull(repository, REPO, { number: 1, base, files: { [FILE]: SECOND } })
        reviews.set(head2, (cited) => ({
          summary: "Adds findOrder.",
          findings: [finding(2, "db.raw with concatenated SQL", [cited])],
          suppressed: [{ memory_id: cited, path: FILE, note: "findUser's template goes through db.query" }]
        }))
        yield* send("pull_request", pullRequestEvent(tenant, { action: "synchronize", number: 1, head: head2, base }))
        const secondReview = yield* runEnded("review", 2)
        const reviewRequests = model
          .agentRequests()
          .map(bodyOf)
          .filter((text) => text.includes("code reviewer"))
        assert.isTrue(reviewRequests.some((text) => text.includes(head1)))
        assert.isFalse(
          reviewRequests.filter((text) => text.includes(head1)).some((text) => text.includes(CONVENTION)),
          "the first review ran before the memory was approved"
        )
        const second = reviewRequests.filter((text) => text.includes(head2))
        assert.isNotEmpty(second)
        assert.isTrue(second.every((text) => text.includes(`[${memoryId}] ${CONVENTION}`)))

        const [given] = yield* sql<{ run_id: string }>`
          SELECT run_id FROM memory_uses WHERE organization_id = ${ORG} AND memory_id = ${memoryId}`
        assert.strictEqual(given?.run_id, secondReview)
        assert.notStrictEqual(given?.run_id, firstReview)
        const measured = yield* request(`/api/v1/organizations/${ORG}/memories/${memoryId}`, json(admin.cookie, "GET"))
        assert.deepStrictEqual((measured.json as { data: Memory }).data.effect, {
          runs: 1,
          findings_shaped: 1,
          findings_suppressed: 1,
          feedback: { open: 1, resolved: 0, dismissed: 0 }
        })
      })
  )
})

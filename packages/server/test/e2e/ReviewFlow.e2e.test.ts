/**
 * Pull-request reviews end to end: signed GitHub webhooks into a real Bosun, the inbox, the
 * Scheduler and a `review` RunAttemptWorkflow on the real runtime process, which clones the pull
 * request's head from the fake GitHub over git smart HTTP with the installation token and runs the
 * real OpenCode CLI against a scripted OpenAI-compatible model; the review is published to the fake
 * GitHub through the real Octokit clients.
 *
 * The model's script answers each review with two steps: a bash call that prints a line of the
 * checked-out file (so the test sees the agent read the head it was given) and writes
 * `$BOSUN_OUTPUT_DIR/review.json` — the findings this test chose for the head named in the
 * agent's prompt — then a closing text.
 */
import { generateKeyPairSync } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ATTEMPT_STEPS, type ReviewOutput, RUNTIME_PROTOCOL_HEADER, RUNTIME_PROTOCOL_VERSION } from "@bosun/domain"
import {
  type CollectedSpan,
  eventually,
  FakeGithub,
  type FakeModelRequest,
  FakeModelServer,
  type FakeModelTurn,
  FakeOtlpCollector,
  type GitRepository,
  LogCapture,
  makeGitRepository,
  toolResults
} from "@bosun/testing"
import { type RuntimeProcess, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { assert, layer } from "@effect/vitest"
import { ConfigProvider, Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../../src/features/agentConnections/ConfigurationRepo.ts"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { GithubAppsRepo } from "../../src/outbound/github/GithubAppsRepo.ts"
import { AppConfig } from "../../src/platform/config/AppConfig.ts"
import { TracingLive } from "../../src/platform/observability/Tracing.ts"
import { APP_ID, deliver, processed, SECRET } from "../support/GithubDeliveries.ts"
import { signIn } from "../support/Identity.ts"
import { layerTestServer, request, testSettings } from "../support/TestServer.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const ORG = "review-flow"
const SLUG = "bosun"
const OWNER = { id: 71_001, login: "acme" }
const INSTALLATION_ID = 81_001
const GITHUB_REPOSITORY_ID = 91_001
const REPO = "acme/shop"
const FILE = "src/handler.ts"

/** What the model writes as the review of each head: filled in as the test pushes. */
const outputs = new Map<string, ReviewOutput>()

const outputFor = (request: FakeModelRequest): ReviewOutput => {
  const text = JSON.stringify(request.body)
  for (const [head, output] of outputs) if (text.includes(head)) return output
  return { summary: "The prompt named no head this test knows.", findings: [] }
}

const NOT_A_CONVENTION = {
  propose: false,
  reason: "It explains this one finding (the index is validated upstream); it states no rule for future code."
}

const reviewTurns = (reviews: number): ReadonlyArray<FakeModelTurn> =>
  Array.from(
    { length: reviews },
    (): ReadonlyArray<FakeModelTurn> => [
      {
        type: "tools",
        text: "Reading the change, then writing the review.",
        calls: [
          {
            name: "bash",
            arguments: (request) =>
              // A reply on a finding is feedback Bosun learns from: its memory-distill run asks too.
              JSON.stringify(request.body).includes("memory keeper")
                ? {
                    command: `cat > "$BOSUN_OUTPUT_DIR/memory.json" <<'JSON'\n${JSON.stringify(NOT_A_CONVENTION)}\nJSON`,
                    description: "Write the memory decision"
                  }
                : {
                    command: `sed -n 3p repo/${FILE} && cat > "$BOSUN_OUTPUT_DIR/review.json" <<'JSON'\n${JSON.stringify(outputFor(request))}\nJSON`,
                    description: "Read line 3 and write the review"
                  }
          }
        ],
        usage: { input: 900, output: 60 }
      },
      { type: "text", text: "The review is written.", usage: { input: 1000, output: 10 } }
    ]
  ).flat()

class TestRuntime extends Context.Service<TestRuntime, RuntimeProcess>()("test/ReviewFlowRuntime") {}
class TestRepository extends Context.Service<TestRepository, GitRepository>()("test/ReviewFlowRepository") {}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-review-flow-"))
// As root the runtime's agents run as users of their own: they must pass through to their workspaces.
fs.chmodSync(root, 0o711)

const layerRuntime = Layer.effect(
  TestRuntime,
  Effect.acquireRelease(
    Effect.promise(() => startRuntime({ BOSUN_RUNTIME_DATA_DIR: path.join(root, "runtime") })),
    (runtime) => Effect.promise(() => runtime.stop())
  )
)

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
    const fake = yield* FakeGithub
    const runtime = yield* TestRuntime
    const collector = yield* FakeOtlpCollector
    // Production's tracer, configured as an operator would: the OTLP endpoint and protocol from
    // the standard OTEL_* settings, a short batch delay so spans arrive while the test waits.
    const tracing = TracingLive.pipe(
      Layer.provide(
        Layer.succeed(
          AppConfig,
          testSettings({ tracing: Option.some({ serviceName: "bosun-review-flow", protocol: "http/json" }) })
        )
      ),
      Layer.provide(
        ConfigProvider.layer(
          ConfigProvider.fromUnknown({
            OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
            OTEL_BSP_SCHEDULE_DELAY: "100"
          })
        )
      )
    )
    return layerTestServer({
      settings: {
        githubApiUrl: new URL(fake.apiUrl),
        runtime: {
          external: Option.some({ url: new URL(runtime.base), token: Redacted.make(TOKEN) }),
          embeddedPort: 0,
          reviewAgentProfile: Option.none()
        }
      }
    }).pipe(Layer.provide(tracing))
  })
).pipe(
  Layer.provideMerge(FakeOtlpCollector.layer),
  Layer.provideMerge(layerRepository),
  Layer.provideMerge(layerRuntime),
  Layer.provideMerge(FakeModelServer.layer({ turns: reviewTurns(8), title: "Review" })),
  Layer.provideMerge(FakeGithub.layer)
)

const lines = (count: number) => Array.from({ length: count }, (_, i) => `const v${i + 1} = input[${i + 1}]`)
const FIRST = lines(20)
/** The push that fixes line 3 and adds an eval on line 21; line 7 is untouched. */
const SECOND = [...FIRST.slice(0, 2), "const v3 = sanitize(input[3])", ...FIRST.slice(3), "eval(input[21])"]
/** A later push that only appends a line. */
const THIRD = [...SECOND, "export default v1"]
/** A push that deletes the first two lines: every finding moves up two lines. */
const FOURTH = THIRD.slice(2)
/** A push that restores them: every finding is back on its line. */
const FIFTH = THIRD
const text = (content: ReadonlyArray<string>) => `${content.join("\n")}\n`

const finding = (line: number, title: string, severity: "HIGH" | "MEDIUM") => ({
  path: FILE,
  start_line: line,
  end_line: line,
  side: "RIGHT" as const,
  severity,
  category: "security",
  title,
  body: `${title}: the request's input reaches it unchecked.`
})
const A = finding(3, "Unsanitized input reaches the query", "HIGH")
const B = finding(7, "Input index is not bounds-checked", "MEDIUM")
const D = finding(21, "eval of request input", "HIGH")
/** B and D two lines up, after FOURTH deleted the first two lines. */
const B_UP = finding(5, B.title, "MEDIUM")
const D_UP = finding(19, D.title, "HIGH")

let sent = 0
const send = (event: string, body: string, id = `review-flow-${sent++}`) =>
  Effect.map(deliver({ id, event, body }), (response) => {
    assert.strictEqual(response.status, 202, response.text)
    return { id, answer: (response.json as { data: { accepted: boolean; duplicate: boolean } }).data }
  })

const account = { ...OWNER, type: "Organization" } as const
const eventRepository = {
  id: GITHUB_REPOSITORY_ID,
  name: "shop",
  full_name: REPO,
  private: true,
  owner: account,
  default_branch: "main"
}

const pullRequestEvent = (pr: {
  readonly action: string
  readonly number: number
  readonly head: string
  readonly base: string
  readonly draft?: boolean
  readonly author?: string
  readonly changedFiles?: number
}) =>
  JSON.stringify({
    action: pr.action,
    number: pr.number,
    pull_request: {
      id: 6_000_000 + pr.number,
      number: pr.number,
      title: `Change ${pr.number}`,
      state: "open",
      draft: pr.draft ?? false,
      merged: false,
      changed_files: pr.changedFiles ?? 1,
      user: { id: 4_001, login: pr.author ?? "dev-anna", type: pr.author?.endsWith("[bot]") ? "Bot" : "User" },
      head: { sha: pr.head, ref: `feature-${pr.number}`, repo: { id: GITHUB_REPOSITORY_ID } },
      base: { sha: pr.base, ref: "main", repo: { id: GITHUB_REPOSITORY_ID } }
    },
    repository: eventRepository,
    installation: { id: INSTALLATION_ID },
    sender: { id: 4_001, login: pr.author ?? "dev-anna" }
  })

/** The organization, its App (real key) installed on acme/shop, an OpenCode connection to the fake model. */
const setUp = Effect.gen(function* () {
  const fake = yield* FakeGithub
  const model = yield* FakeModelServer
  const sql = yield* SqlClient.SqlClient
  fake.addApp({
    clientId: "Iv1.review-flow",
    clientSecret: "review-flow-secret",
    appId: APP_ID,
    publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
    slug: SLUG
  })
  fake.addInstallation({ id: INSTALLATION_ID, appId: APP_ID, account, repositories: [REPO] })
  yield* (yield* OrganizationsRepo).ensure(ORG)
  yield* sql`UPDATE organizations SET github_account_id = ${OWNER.id} WHERE id = ${ORG}`
  yield* (yield* GithubAppsRepo).upsert(ORG, {
    githubAppId: APP_ID,
    slug: SLUG,
    clientId: "Iv1.review-flow",
    clientSecret: Redacted.make("review-flow-secret"),
    privateKey: Redacted.make(privateKey.export({ type: "pkcs8", format: "pem" }).toString()),
    webhookSecret: Redacted.make(SECRET)
  })
  const installed = yield* send(
    "installation",
    JSON.stringify({
      action: "created",
      installation: { id: INSTALLATION_ID, account, app_id: APP_ID, target_type: "Organization" },
      repositories: [{ id: GITHUB_REPOSITORY_ID, name: "shop", full_name: REPO, private: true }],
      sender: { id: 1, login: "octocat" }
    })
  )
  assert.isNull(yield* processed(installed.id))

  const admin = yield* signIn("flow-admin", [[ORG, "ADMIN"]])
  const imported = yield* request(`/api/v1/organizations/${ORG}/opencode-connection/import`, {
    method: "PUT",
    headers: { cookie: admin.cookie, "content-type": "application/json" },
    body: JSON.stringify({
      auth: {
        fake: {
          type: "api",
          key: "sk-review-flow-0123456789abcdef",
          npm: "@ai-sdk/openai-compatible",
          name: "Fake Provider",
          base_url: model.url,
          models: { "fake-coder": { name: "Fake Coder" } }
        }
      }
    })
  })
  assert.strictEqual(imported.status, 200, imported.text)
  yield* (yield* ConfigurationRepo).setOrganizationGroup(
    ORG,
    "agent",
    { agent_provider: "OPENCODE", model: "fake/fake-coder" },
    null
  )
  const [repository] = yield* sql<{ id: string }>`
    SELECT id FROM repositories WHERE organization_id = ${ORG} AND github_repository_id = ${GITHUB_REPOSITORY_ID}`
  return repository?.id ?? ""
})

/** Waits for the review run of `head` to end; answers its status, error and id. */
const reviewRunOf = (number: number, head: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* eventually(
      sql<{ id: string; status: string; error_code: string | null; error_message: string | null }>`
        SELECT id, status, error_code, error_message FROM workflow_runs
        WHERE organization_id = ${ORG} AND workflow_type = 'review' AND pull_request_number = ${number}
          AND head_sha = ${head}`,
      (found) => found.length > 0 && found.every((row) => ["SUCCEEDED", "FAILED", "CANCELLED"].includes(row.status)),
      Duration.seconds(120)
    )
    assert.strictEqual(rows.length, 1, "one review run per head")
    const [run] = rows
    assert.strictEqual(run?.status, "SUCCEEDED", `${run?.error_code}: ${run?.error_message}`)
    // The run recorded its review; the review's delivery on bosun-effects posts it.
    yield* eventually(
      sql<{
        done: boolean
        dead: boolean
      }>`SELECT done_at IS NOT NULL AS done, dead_lettered_at IS NOT NULL AS dead FROM outbox
        WHERE kind = 'github.review_delivery' AND payload->>'run_id' = ${run?.id ?? ""}`,
      (delivery) => delivery.length === 0 || delivery[0]?.done === true || delivery[0]?.dead === true,
      Duration.seconds(60)
    )
    // And the check-run states it recorded are posted.
    yield* eventually(
      sql<{ n: number }>`SELECT count(*)::int AS n FROM outbox
        WHERE kind = 'github.check_run' AND payload->>'external_id' = ${`bosun-review:${run?.id ?? ""}`}
          AND done_at IS NULL AND dead_lettered_at IS NULL`,
      (pending) => pending[0]?.n === 0,
      Duration.seconds(60)
    )
    return run
  })

const findingStates = (repositoryId: string, number: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ title: string; state: string }>`
      SELECT title, state FROM review_findings
      WHERE organization_id = ${ORG} AND repository_id = ${repositoryId} AND pull_request_number = ${number}
      ORDER BY title COLLATE "C"`.pipe(Effect.map((rows) => rows.map((row) => ({ ...row }))))
  )

/** Pushes `content` as the pull request's new head: git, the pull ref, and what GitHub lists for it. */
const push = (number: number, content: ReadonlyArray<string>, base: string, previous?: string) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    const repository = yield* TestRepository
    const head = yield* Effect.promise(() =>
      repository.commit(`feature-${number}`, { [FILE]: text(content) }, `push to #${number}`, { from: "main" })
    )
    yield* Effect.promise(() => repository.setRef(`refs/pull/${number}/head`, head))
    const files = yield* Effect.promise(() => repository.pullFiles(base, head))
    fake.setPull(REPO, {
      number,
      head: { sha: head, ref: `feature-${number}` },
      base: { sha: base, ref: "main" },
      files
    })
    if (previous !== undefined) {
      fake.setCompare(REPO, previous, head, yield* Effect.promise(() => repository.changedPaths(previous, head)))
    }
    return head
  })

layer(Server, { excludeTestServices: true, timeout: Duration.minutes(5) })("pull-request reviews end to end", (it) => {
  it.effect(
    "a pull request gets one review; a push resolves the fixed finding and posts only the new one; a finding answered 'not an issue' is never raised again",
    () =>
      Effect.gen(function* () {
        const repositoryId = yield* setUp
        const fake = yield* FakeGithub
        const model = yield* FakeModelServer
        const repository = yield* TestRepository
        const base = yield* Effect.promise(() => repository.commit("main", { "README.md": "shop\n" }, "init"))

        // Opened: the agent reviews the first head.
        const head1 = yield* push(1, FIRST, base)
        outputs.set(head1, { summary: "Adds the request handler.", findings: [B, A] })
        const opened = yield* send("pull_request", pullRequestEvent({ action: "opened", number: 1, head: head1, base }))
        assert.deepStrictEqual(opened.answer, { accepted: true, duplicate: false })
        // GitHub redelivers the same delivery: acknowledged, not processed twice.
        const again = yield* send(
          "pull_request",
          pullRequestEvent({ action: "opened", number: 1, head: head1, base }),
          opened.id
        )
        assert.deepStrictEqual(again.answer, { accepted: true, duplicate: true })
        yield* reviewRunOf(1, head1)

        const first = fake.reviews(REPO, 1)
        assert.strictEqual(first.length, 1, "exactly one review")
        assert.strictEqual(first[0]?.commit_id, head1)
        assert.strictEqual(first[0]?.event, "COMMENT")
        assert.strictEqual(first[0]?.user.login, `${SLUG}[bot]`)
        assert.include(first[0]?.body ?? "", "Adds the request handler.")
        assert.deepStrictEqual(
          first[0]?.comments.map((comment) => ({ path: comment.path, line: comment.line, side: comment.side })),
          [
            { path: FILE, line: 3, side: "RIGHT" },
            { path: FILE, line: 7, side: "RIGHT" }
          ],
          "ranked by severity: the HIGH one first"
        )
        assert.include(first[0]?.comments[0]?.body ?? "", A.title)
        // The agent read the head it was given: line 3 of the checkout came back as the tool's result.
        const readBack = model.agentRequests().flatMap(toolResults)
        assert.isTrue(
          readBack.some((result) => result.content.includes(FIRST[2] ?? "?")),
          "the first review's bash printed line 3 of the first head"
        )

        // A push fixes A and adds D; B is unchanged.
        const head2 = yield* push(1, SECOND, base, head1)
        outputs.set(head2, { summary: "Sanitizes the input; adds an eval.", findings: [B, D] })
        yield* send("pull_request", pullRequestEvent({ action: "synchronize", number: 1, head: head2, base }))
        yield* reviewRunOf(1, head2)
        const second = fake.reviews(REPO, 1)
        assert.strictEqual(second.length, 2)
        assert.deepStrictEqual(
          second[1]?.comments.map((comment) => ({ path: comment.path, line: comment.line, side: comment.side })),
          [{ path: FILE, line: 21, side: "RIGHT" }],
          "only the new finding is posted"
        )
        assert.include(second[1]?.comments[0]?.body ?? "", D.title)
        const threads = fake.threads(REPO, 1)
        const threadOf = (commentId: number | undefined) =>
          threads.find((thread) => commentId !== undefined && thread.commentIds.includes(commentId))
        assert.isTrue(threadOf(first[0]?.comments[0]?.id)?.isResolved, "the fixed finding's thread is resolved")
        assert.isFalse(threadOf(first[0]?.comments[1]?.id)?.isResolved, "the unchanged finding's thread stays open")
        assert.deepStrictEqual(yield* findingStates(repositoryId, 1), [
          { title: B.title, state: "OPEN" },
          { title: A.title, state: "RESOLVED" },
          { title: D.title, state: "OPEN" }
        ])

        // A person answers B: "not an issue". The reply's webhook dismisses it.
        const bComment = first[0]?.comments[1]
        const replyId = fake.addReply(REPO, 1, bComment?.id ?? 0, {
          login: "dev-anna",
          body: "Not an issue: the index is validated upstream."
        })
        const reply = yield* send(
          "pull_request_review_comment",
          JSON.stringify({
            action: "created",
            comment: {
              id: replyId,
              in_reply_to_id: bComment?.id,
              body: "Not an issue: the index is validated upstream.",
              user: { id: 4_001, login: "dev-anna", type: "User" }
            },
            pull_request: { number: 1 },
            repository: eventRepository,
            installation: { id: INSTALLATION_ID }
          })
        )
        assert.isNull(yield* processed(reply.id))
        // The reply is feedback: its distill run decides it states no convention, and proposes nothing.
        const sql = yield* SqlClient.SqlClient
        const distilled = yield* eventually(
          sql<{ status: string; source: string }>`
            SELECT status, input_snapshot->'source'->>'text' AS source FROM workflow_runs
            WHERE organization_id = ${ORG} AND workflow_type = 'memory_distill'`,
          (runs) => runs.length === 1 && ["SUCCEEDED", "FAILED"].includes(runs[0]?.status ?? ""),
          Duration.seconds(60)
        )
        assert.deepStrictEqual(
          distilled.map((run) => ({ ...run })),
          [{ status: "SUCCEEDED", source: "Not an issue: the index is validated upstream." }]
        )
        const [proposed] = yield* sql<{
          n: string
        }>`SELECT count(*)::text AS n FROM memories WHERE organization_id = ${ORG}`
        assert.strictEqual(proposed?.n, "0")

        // The next push: the agent reports B again; it is not raised.
        const head3 = yield* push(1, THIRD, base, head2)
        outputs.set(head3, { summary: "Exports v1.", findings: [B, D] })
        yield* send("pull_request", pullRequestEvent({ action: "synchronize", number: 1, head: head3, base }))
        yield* reviewRunOf(1, head3)
        const third = fake.reviews(REPO, 1).filter((review) => review.user.type === "Bot")
        assert.strictEqual(third.length, 3)
        assert.deepStrictEqual(third[2]?.comments, [], "neither the dismissed one nor the posted one again")
        assert.deepStrictEqual(yield* findingStates(repositoryId, 1), [
          { title: B.title, state: "DISMISSED" },
          { title: A.title, state: "RESOLVED" },
          { title: D.title, state: "OPEN" }
        ])
        const [listed] = yield* sql<{ open_findings: number; resolved_findings: number; review_status: string }>`
          SELECT open_findings, resolved_findings, review_status FROM pull_requests
          WHERE organization_id = ${ORG} AND repository_id = ${repositoryId} AND number = 1`
        assert.deepStrictEqual({ ...listed }, { open_findings: 1, resolved_findings: 1, review_status: "REVIEWED" })

        // Two more pushes move every finding two lines up and back: the same findings, none posted again.
        const head4 = yield* push(1, FOURTH, base, head3)
        outputs.set(head4, { summary: "Drops two lines.", findings: [B_UP, D_UP] })
        yield* send("pull_request", pullRequestEvent({ action: "synchronize", number: 1, head: head4, base }))
        yield* reviewRunOf(1, head4)
        const head5 = yield* push(1, FIFTH, base, head4)
        outputs.set(head5, { summary: "Restores them.", findings: [B, D] })
        yield* send("pull_request", pullRequestEvent({ action: "synchronize", number: 1, head: head5, base }))
        yield* reviewRunOf(1, head5)

        const all = fake.reviews(REPO, 1).filter((review) => review.user.type === "Bot")
        assert.deepStrictEqual(
          all.map((review) => review.commit_id),
          [head1, head2, head3, head4, head5],
          "one review per head"
        )
        const posted = all.flatMap((review) => review.comments)
        assert.deepStrictEqual(
          posted.map((comment) => comment.body.split("\n")[0]),
          [
            `**HIGH** · security · ${A.title}`,
            `**MEDIUM** · security · ${B.title}`,
            `**HIGH** · security · ${D.title}`
          ],
          "every finding posted once across five pushes; the replied-to one never again"
        )
        // Every id GitHub gave is past 2^31, as github.com's are, and each is recorded exactly.
        assert.isTrue(posted.every((comment) => comment.id > 2 ** 31))
        const recorded = yield* sql<{ title: string; github_comment_id: string; github_thread_id: string | null }>`
          SELECT title, github_comment_id, github_thread_id FROM review_findings
          WHERE organization_id = ${ORG} AND repository_id = ${repositoryId} AND pull_request_number = 1
          ORDER BY github_comment_id`
        assert.deepStrictEqual(
          recorded.map((row) => [row.title, Number(row.github_comment_id), row.github_thread_id !== null]),
          posted.map((comment) => [[A, B, D].find((f) => comment.body.includes(f.title))?.title, comment.id, true])
        )
        assert.deepStrictEqual(yield* findingStates(repositoryId, 1), [
          { title: B.title, state: "DISMISSED" },
          { title: A.title, state: "RESOLVED" },
          { title: D.title, state: "OPEN" }
        ])
        // The check run of each head went in_progress, then success.
        const checks = fake.checkRuns(REPO).filter((check) => check.name === "Bosun review")
        assert.deepStrictEqual(
          checks.map((check) => [check.head_sha, fake.checkRunStates(check.id)]),
          [head1, head2, head3, head4, head5].map((head) => [head, ["in_progress", "success"]])
        )
      }),
    // Five reviews one after another, each a real agent run.
    180_000
  )

  it.effect(
    "a trace of one review shows every step of its attempt as a span under one root, with the run's correlation ids, the review's delivery to GitHub under the run's id, and the webhook's request span",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const collector = yield* FakeOtlpCollector
        const [run] = yield* sql<{ id: string }>`
          SELECT id FROM workflow_runs
          WHERE organization_id = ${ORG} AND workflow_type = 'review' AND pull_request_number = 1
          ORDER BY created_at LIMIT 1`
        assert.isDefined(run, "the first test reviewed pull request 1")
        const runId = run?.id ?? ""
        const ofRun = yield* eventually(
          // The attempt's spans; the review's delivery has a trace of its own (see below).
          Effect.sync(() =>
            collector
              .spans()
              .filter((span) => span.attributes["bosun.run_id"] === runId && span.name !== "ReviewDelivery.deliver")
          ),
          (found) => ATTEMPT_STEPS.every((step) => found.some((span) => span.name === `RunAttempt.step.${step}`)),
          Duration.seconds(20)
        )
        const traceIds = [...new Set(ofRun.map((span) => span.traceId))]
        assert.lengthOf(traceIds, 1, "every span of the review's attempt is in one trace")
        const trace = collector.spans().filter((span) => span.traceId === traceIds[0])
        const byId = new Map(trace.map((span) => [span.spanId, span]))
        const ancestors = (span: CollectedSpan): ReadonlyArray<string> => {
          const parent = span.parentSpanId === undefined ? undefined : byId.get(span.parentSpanId)
          return parent === undefined ? [] : [parent.name, ...ancestors(parent)]
        }

        const roots = trace.filter((span) => span.name === "RunAttempt.attempt")
        assert.lengthOf(roots, 1)
        const root = roots[0]
        assert.strictEqual(root?.attributes["bosun.run_id"], runId)
        assert.strictEqual(root?.attributes["bosun.org_id"], ORG)
        assert.strictEqual(root?.attributes["bosun.attempt"], 1)
        assert.strictEqual(root?.status, 1, "the attempt succeeded: status OK")
        assert.strictEqual(root?.resource["service.name"], "bosun-review-flow")
        assert.strictEqual(root?.resource["bosun.role"], "all")
        assert.isString(root?.resource["service.version"])

        const steps = ATTEMPT_STEPS.map((step) => {
          const found = trace.filter((span) => span.name === `RunAttempt.step.${step}`)
          assert.lengthOf(found, 1, step)
          const span = found[0]
          assert.strictEqual(span?.attributes["bosun.run_id"], runId, step)
          assert.strictEqual(span?.attributes["bosun.org_id"], ORG, step)
          // Each step runs inside its workflow activity, inside the attempt.
          const chain = span === undefined ? [] : ancestors(span)
          // (The execute activity is named per chunk: `execute/1`.)
          assert.match(chain[0] ?? "", new RegExp(`^${step}(/\\d+)?$`), `${step}'s parent is its activity`)
          assert.include(chain, "RunAttempt.attempt", `${step} is under the attempt's root`)
          return span
        })
        const starts = steps.map((span) => span?.startNanos ?? 0n)
        assert.deepStrictEqual(
          [...starts].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
          starts,
          "the steps ran in the spec's order"
        )

        // The review was posted by its delivery on bosun-effects, under a span carrying the run's ids.
        const [delivery] = yield* eventually(
          Effect.sync(() =>
            collector
              .spans()
              .filter((span) => span.name === "ReviewDelivery.deliver" && span.attributes["bosun.run_id"] === runId)
          ),
          (found) => found.length > 0,
          Duration.seconds(20)
        )
        assert.strictEqual(delivery?.attributes["bosun.org_id"], ORG)
        const posted = collector
          .spans()
          .filter((span) => span.name === "GitHubPulls.createReview" && span.traceId === delivery?.traceId)
        assert.lengthOf(posted, 1)

        // The webhook that asked for the review was served under a request span with its request id.
        const webhookSpans = collector
          .spans()
          .filter((span) => span.kind === 2 && span.attributes["http.route"] === "/api/v1/github/webhooks")
        assert.isAtLeast(webhookSpans.length, 1)
        for (const span of webhookSpans) {
          assert.match(String(span.attributes["bosun.request_id"]), /^[0-9a-f]{16}-[0-9a-z]+$/)
          assert.strictEqual(span.attributes["http.request.method"], "POST")
        }

        // An OAuth callback's code and state never reach the trace backend: the span keeps their names only.
        const code = `oauth-code-${Date.now().toString(36)}`
        const state = `oauth-state-${Date.now().toString(36)}`
        yield* request(`/api/v1/auth/github/callback?code=${code}&state=${state}&installation_id=7`)
        const callbacks = yield* eventually(
          Effect.sync(() =>
            collector
              .spans()
              .filter((span) => span.kind === 2 && span.attributes["url.path"] === "/api/v1/auth/github/callback")
          ),
          (found) => found.length >= 1,
          Duration.seconds(20)
        )
        const callback = callbacks[0]
        assert.strictEqual(callback?.attributes["url.query"], "code=REDACTED&state=REDACTED&installation_id=7")
        // The Scheduler's keepalive (every 250 ms) is never exported; its wake-ups are.
        assert.deepStrictEqual(
          collector.spans().filter((span) => /keepalive/i.test(span.name)),
          [],
          "no keepalive span reaches the backend"
        )
        assert.isAtLeast(collector.spans().filter((span) => span.name === "Scheduler.wake").length, 1)
        const exported = JSON.stringify(collector.spans().map((span) => [span.name, span.attributes]))
        assert.notInclude(exported, code)
        assert.notInclude(exported, state)
      })
  )

  it.effect(
    "a draft with review_drafts off, an excluded author and a pull request over max_changed_files start no review; the last gets one notice; a bad signature is refused and writes nothing",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeGithub
        const sql = yield* SqlClient.SqlClient
        yield* (yield* ConfigurationRepo).setOrganizationGroup(
          ORG,
          "review_policy",
          { review_policy: { excluded_authors: ["renovate[bot]"], max_changed_files: 50 } },
          null
        )
        const head = "c".repeat(40)
        const base = "d".repeat(40)
        for (const number of [2, 3, 4]) {
          fake.setPull(REPO, {
            number,
            head: { sha: head, ref: `feature-${number}` },
            base: { sha: base, ref: "main" }
          })
        }
        const draft = yield* send(
          "pull_request",
          pullRequestEvent({ action: "opened", number: 2, head, base, draft: true })
        )
        const excluded = yield* send(
          "pull_request",
          pullRequestEvent({ action: "opened", number: 3, head, base, author: "renovate[bot]" })
        )
        const large = yield* send(
          "pull_request",
          pullRequestEvent({ action: "opened", number: 4, head, base, changedFiles: 51 })
        )
        assert.match((yield* processed(draft.id)) ?? "", /^no review: .*draft/)
        assert.match((yield* processed(excluded.id)) ?? "", /^no review: .*renovate\[bot\]/)
        assert.strictEqual(
          yield* processed(large.id),
          "no review: 51 changed files are over max_changed_files (50); a notice was posted"
        )
        const notices = yield* eventually(
          Effect.sync(() => fake.issueComments(REPO, 4)),
          (comments) => comments.length > 0,
          Duration.seconds(20)
        )
        assert.strictEqual(notices.length, 1)
        assert.include(notices[0]?.body ?? "", "it changes 51 files, over this repository's limit of 50")
        const runs = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM workflow_runs
          WHERE organization_id = ${ORG} AND workflow_type = 'review' AND pull_request_number IN (2, 3, 4)`
        assert.strictEqual(runs[0]?.n, 0)
        for (const number of [2, 3, 4]) assert.deepStrictEqual(fake.reviews(REPO, number), [])

        const forged = yield* deliver({
          id: "review-flow-forged",
          event: "pull_request",
          body: pullRequestEvent({ action: "opened", number: 5, head, base }),
          secret: "not-the-webhook-secret"
        })
        assert.strictEqual(forged.status, 401)
        assert.strictEqual((forged.json as { error: { code: string } }).error.code, "unauthorized")
        const rows = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM github_deliveries WHERE delivery_id = 'review-flow-forged'`
        assert.strictEqual(rows[0]?.n, 0)
      })
  )
  it.effect(
    "GitHub failing while a review is posted never runs the agent again: 502, 502, 201 posts it once; a GraphQL error fails it at once with GitHub's words on the check run and in one error line",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeGithub
        const sql = yield* SqlClient.SqlClient
        const capture = yield* LogCapture
        const runtime = yield* TestRuntime
        const repository = yield* TestRepository
        const base = yield* Effect.promise(() => repository.commit("main", { "README.md": "shop, again\n" }, "more"))
        /** What the runtime knows of the run's attempt `attempt`: its status, or 404. */
        const runtimeAttempt = (runId: string, attempt: number) =>
          Effect.promise(() =>
            fetch(`${runtime.base}/v1/runs/${encodeURIComponent(`${runId}:${attempt}`)}/result`, {
              headers: { authorization: `Bearer ${TOKEN}`, [RUNTIME_PROTOCOL_HEADER]: RUNTIME_PROTOCOL_VERSION }
            }).then(async (response) =>
              response.status === 200 ? ((await response.json()) as { status: string }).status : response.status
            )
          )
        const attemptsOf = (runId: string) =>
          Effect.map(
            sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_attempts WHERE run_id = ${runId}`,
            (rows) => rows[0]?.n
          )
        const checkStatesOf = (head: string) =>
          fake
            .checkRuns(REPO)
            .filter((check) => check.head_sha === head && check.name === "Bosun review")
            .map((check) => fake.checkRunStates(check.id))

        // GitHub answers the review POST 502 twice, then takes it.
        fake.failNext({ method: "POST", path: /\/pulls\/2\/reviews$/, status: 502, times: 2 })
        const head2 = yield* push(2, FIRST, base)
        outputs.set(head2, { summary: "Posted on the third try.", findings: [A] })
        yield* send("pull_request", pullRequestEvent({ action: "opened", number: 2, head: head2, base }))
        const run2 = yield* reviewRunOf(2, head2)
        const posts = fake.requests.filter(
          (r) => r.method === "POST" && r.path === `/api/v3/repos/${REPO}/pulls/2/reviews`
        )
        assert.strictEqual(posts.length, 3)
        assert.strictEqual(fake.reviews(REPO, 2).length, 1, "the review is posted once")
        assert.strictEqual(yield* attemptsOf(run2?.id ?? ""), 1)
        assert.strictEqual(yield* runtimeAttempt(run2?.id ?? "", 1), "SUCCEEDED")
        assert.strictEqual(yield* runtimeAttempt(run2?.id ?? "", 2), 404, "the agent ran once")
        assert.deepStrictEqual(checkStatesOf(head2), [["in_progress", "success"]])

        // GitHub answers the review-thread query with an error: nothing to retry.
        const refusal = "Resource not accessible by integration"
        fake.failNext({
          method: "POST",
          path: /^\/api\/graphql$/,
          status: 200,
          body: { data: null, errors: [{ type: "FORBIDDEN", path: ["repository"], message: refusal }] }
        })
        const head3 = yield* push(3, FIRST, base)
        outputs.set(head3, { summary: "GitHub will refuse the thread query.", findings: [A] })
        yield* send("pull_request", pullRequestEvent({ action: "opened", number: 3, head: head3, base }))
        const run3 = yield* reviewRunOf(3, head3)
        const [check] = fake.checkRuns(REPO).filter((c) => c.head_sha === head3)
        assert.deepStrictEqual(checkStatesOf(head3), [["in_progress", "failure"]])
        assert.strictEqual(check?.output.title, "Review failed while publishing the review: GitHub refused it")
        assert.include(check?.output.summary ?? "", `- Error: GitHub GraphQL reviewThreads answered: ${refusal}`)
        const lines = (yield* capture.records).filter(
          (record) => record.msg === "review_delivery_failed" && record.run_id === run3?.id
        )
        assert.deepStrictEqual(
          lines.map((record) => [record.level, record.step, record.provider, record.http_status, record.error]),
          [["error", "publish", "github", 200, `GitHub GraphQL reviewThreads answered: ${refusal}`]]
        )
        const [pull] = yield* sql<{ review_status: string }>`
          SELECT p.review_status FROM pull_requests p JOIN repositories r ON r.id = p.repository_id
          WHERE p.organization_id = ${ORG} AND r.github_repository_id = ${GITHUB_REPOSITORY_ID} AND p.number = 3`
        assert.strictEqual(pull?.review_status, "FAILED")
        assert.strictEqual(yield* attemptsOf(run3?.id ?? ""), 1)
        assert.strictEqual(yield* runtimeAttempt(run3?.id ?? "", 2), 404, "no second attempt ran the agent")
      })
  )
})

/**
 * A deep scan end to end (a seeded repository with a planted SQL injection and a planted false
 * positive → one verified HIGH finding and one unverified; rejecting the false positive as
 * false_positive → the next scan does not raise it; accepting the real one → a fix work item → a
 * pull request). A real Bosun launches the scan through the API; the run goes through the Scheduler
 * to the real runtime process with the real OpenCode CLI and a scripted model, which audits the
 * checkout cloned from the fake GitHub at the pinned head, writes its reproductions in the sandbox
 * and runs them; Bosun judges them against the run's own changes.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { eventually, FakeGithub, FakeModelServer, type FakeModelTurn, type GitRepository } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { connectFakeAgent, jsonRequest, layerAgentServer, layerGitRepository } from "../support/AgentStack.ts"
import { signIn } from "../support/Identity.ts"
import { deliveries, installApp } from "../support/InstalledApp.ts"
import { request } from "../support/TestServer.ts"

const ORG = "deep-scan-e2e"
const OWNER = { id: 73_001, login: "acme-scan" }
const INSTALLATION_ID = 83_001
const GITHUB_REPOSITORY_ID = 94_001
const REPO = "acme-scan/shop"

const USERS = `exports.findUser = (db, id) => db.query("SELECT * FROM users WHERE id = " + id)\n`
const REPORT = `const MONTHLY = "SELECT sum(total) FROM orders WHERE month = "\nexports.monthlyReport = (db) => db.query(MONTHLY + "date_trunc('month', now())")\n`

const SQLI_TEST = [
  'const { findUser } = require("../src/users.js")',
  "const seen = []",
  'findUser({ query: (sql) => seen.push(sql) }, "1 OR 1=1")',
  'if (seen[0].includes("1 OR 1=1")) { console.error("injected: " + seen[0]); process.exit(1) }',
  ""
].join("\n")
const REPORT_TEST = [
  'const { monthlyReport } = require("../src/report.js")',
  "const seen = []",
  "monthlyReport({ query: (sql) => seen.push(sql) })",
  'console.log("constant query: " + seen[0])',
  ""
].join("\n")

const report = {
  summary: "Audited `src/`: one SQL injection in `findUser`; `monthlyReport` concatenates constants only.",
  coverage: { complete: true, skipped: [] },
  findings: [
    {
      title: "SQL injection in findUser",
      severity: "HIGH",
      category: "sql_injection",
      cwe: "CWE-89",
      path: "src/users.js",
      start_line: 1,
      end_line: 1,
      symbol: "findUser",
      evidence: [{ path: "src/users.js", line: 1, note: "`id` is concatenated into the SQL text" }],
      proposed_fix: "Use a parameterized query: `db.query('SELECT * FROM users WHERE id = $1', [id])`.",
      reproduction: {
        confirmed: true,
        test_path: "bosun-repro/sqli.test.js",
        command: "node bosun-repro/sqli.test.js",
        exit_code: 1,
        output: "injected: SELECT * FROM users WHERE id = 1 OR 1=1"
      }
    },
    {
      title: "Possible SQL injection in monthlyReport",
      severity: "HIGH",
      category: "sql_injection",
      cwe: "CWE-89",
      path: "src/report.js",
      start_line: 2,
      end_line: 2,
      symbol: "monthlyReport",
      evidence: [{ path: "src/report.js", line: 2, note: "SQL text is built by concatenation" }],
      proposed_fix: "Keep the query a single constant.",
      reproduction: {
        confirmed: false,
        test_path: "bosun-repro/report.test.js",
        command: "node bosun-repro/report.test.js",
        exit_code: 0,
        output: "constant query: SELECT sum(total) FROM orders WHERE month = date_trunc('month', now())"
      }
    }
  ]
}

/** One scan's turns: write and run both reproductions in the checkout, write the report, close. */
const scanTurns: ReadonlyArray<FakeModelTurn> = [
  {
    type: "tools",
    calls: [
      {
        name: "bash",
        arguments: {
          command: [
            "cd repo",
            "mkdir -p bosun-repro",
            `cat > bosun-repro/sqli.test.js <<'JS'\n${SQLI_TEST}JS`,
            `cat > bosun-repro/report.test.js <<'JS'\n${REPORT_TEST}JS`,
            "node bosun-repro/sqli.test.js; echo exit=$?",
            "node bosun-repro/report.test.js; echo exit=$?",
            `cat > "$BOSUN_OUTPUT_DIR/deep-scan.json" <<'JSON'\n${JSON.stringify(report)}\nJSON`
          ].join("\n"),
          description: "Reproduce and report"
        }
      }
    ],
    usage: { input: 2_000, output: 400 }
  },
  { type: "text", text: "Audit written.", usage: { input: 2_100, output: 4 } }
]

const FIXED = `exports.findUser = (db, id) => db.query("SELECT * FROM users WHERE id = $1", [id])\n`

/** The fix work item's implement run: parameterize the query, describe the change. */
const fixTurns: ReadonlyArray<FakeModelTurn> = [
  {
    type: "tools",
    calls: [
      {
        name: "bash",
        arguments: {
          command: [
            "set -e",
            `cat > repo/src/users.js <<'JS'\n${FIXED}JS`,
            `cat > "$BOSUN_OUTPUT_DIR/implement.json" <<'JSON'\n${JSON.stringify({
              summary: "`findUser` passes the id as a query parameter instead of concatenating it."
            })}\nJSON`
          ].join("\n"),
          description: "Fix the accepted finding"
        }
      }
    ],
    usage: { input: 1_500, output: 200 }
  },
  { type: "text", text: "Fixed.", usage: { input: 1_600, output: 2 } }
]

class TestRepository extends Context.Service<TestRepository, GitRepository>()("test/DeepScanRepository") {}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-deep-scan-"))

const Server = layerAgentServer({
  name: "bosun-deep-scan",
  title: "Scan",
  turns: [...scanTurns, ...scanTurns, ...fixTurns],
  repositories: layerGitRepository(TestRepository, root, REPO)
})

const json = jsonRequest

const setUp = Effect.gen(function* () {
  const repository = yield* TestRepository
  const head = yield* Effect.promise(() =>
    repository.commit("main", { "README.md": "# shop\n", "src/users.js": USERS, "src/report.js": REPORT }, "init")
  )
  const repositoryId = yield* installApp(
    {
      org: ORG,
      account: OWNER,
      installationId: INSTALLATION_ID,
      githubRepositoryId: GITHUB_REPOSITORY_ID,
      fullName: REPO
    },
    { slug: "bosun", clientId: "Iv1.deep-scan" },
    deliveries("deep-scan").sendNew
  )
  const admin = yield* signIn("deep-scan-admin", [[ORG, "ADMIN"]])
  yield* connectFakeAgent(ORG, admin.cookie)
  return { cookie: admin.cookie, repositoryId, head }
})

interface ScanView {
  readonly id: string
  readonly status: string
  readonly completion_status: string | null
  readonly finding_count: number
  readonly risk_level: string | null
  readonly decision_counts: { readonly accepted: number; readonly pending: number; readonly rejected: number }
  readonly suppressed_count: number
  readonly summary: string | null
  readonly head_sha: string
  readonly model: string | null
  readonly error_message: string | null
}

interface FindingView {
  readonly id: string
  readonly title: string
  readonly severity: string
  readonly symbol: string
  readonly fingerprint: string
  readonly verification: {
    readonly status: string
    readonly reason: string | null
    readonly reproduction: {
      readonly test_path: string
      readonly test_content: string | null
      readonly exit_code: number
    } | null
  }
  readonly decision: string
  readonly reason_code: string | null
}

const launchAndFinish = (cookie: string, repositoryId: string) =>
  Effect.gen(function* () {
    const launched = yield* request(
      `/api/v1/organizations/${ORG}/deep-scans`,
      json(cookie, "POST", { repository_id: repositoryId })
    )
    assert.strictEqual(launched.status, 202, launched.text)
    const id = (launched.json as { data: { id: string } }).data.id
    const read = Effect.map(
      request(`/api/v1/organizations/${ORG}/deep-scans/${id}`, json(cookie, "GET")),
      (response) => (response.json as { data: ScanView }).data
    )
    const done = yield* Effect.orDie(
      eventually(read, (scan) => ["SUCCEEDED", "FAILED", "CANCELLED"].includes(scan.status), Duration.seconds(150))
    )
    assert.strictEqual(done.status, "SUCCEEDED", `the scan failed: ${done.error_message}`)
    const listed = yield* request(`/api/v1/organizations/${ORG}/deep-scans/${id}/findings`, json(cookie, "GET"))
    assert.strictEqual(listed.status, 200, listed.text)
    return { scan: done, findings: (listed.json as { data: ReadonlyArray<FindingView> }).data }
  })

layer(Server, { excludeTestServices: true, timeout: Duration.minutes(6) })("a deep scan", (it) => {
  it.effect(
    "a planted SQL injection is one verified HIGH finding, a planted false positive one unverified; rejected as false_positive, the next scan does not raise it",
    () =>
      Effect.gen(function* () {
        const { cookie, repositoryId, head } = yield* setUp

        const first = yield* launchAndFinish(cookie, repositoryId)
        assert.strictEqual(first.scan.head_sha, head)
        assert.strictEqual(first.scan.completion_status, "COMPLETE")
        assert.strictEqual(first.scan.finding_count, 2)
        assert.strictEqual(first.scan.risk_level, "HIGH")
        assert.deepStrictEqual(first.scan.decision_counts, { accepted: 0, pending: 2, rejected: 0 })
        assert.strictEqual(first.scan.model, "fake/fake-coder")
        assert.include(first.scan.summary ?? "", "one SQL injection in `findUser`")

        const byTitle = new Map(first.findings.map((finding) => [finding.symbol, finding]))
        const real = byTitle.get("findUser")
        const falsePositive = byTitle.get("monthlyReport")
        assert.strictEqual(real?.severity, "HIGH")
        assert.strictEqual(real?.verification.status, "VERIFIED")
        assert.isNull(real?.verification.reason ?? null)
        assert.strictEqual(real?.verification.reproduction?.test_path, "bosun-repro/sqli.test.js")
        // The proof is the test the sandbox holds, taken from the run's changes, not the agent's word.
        assert.strictEqual(real?.verification.reproduction?.test_content, SQLI_TEST.trimEnd())
        assert.strictEqual(real?.verification.reproduction?.exit_code, 1)
        assert.strictEqual(falsePositive?.severity, "HIGH")
        assert.strictEqual(falsePositive?.verification.status, "UNVERIFIED")
        assert.strictEqual(falsePositive?.verification.reason, "The reproduction did not show the flaw")
        assert.match(real?.fingerprint ?? "", /^[0-9a-f]{64}$/)
        assert.notStrictEqual(real?.fingerprint, falsePositive?.fingerprint)

        // Rejected as a false positive: suppressed for the repository's next scans.
        const rejected = yield* request(
          `/api/v1/organizations/${ORG}/deep-scans/${first.scan.id}/findings/${falsePositive?.id}/decision`,
          json(cookie, "POST", { decision: "reject", reason: "false_positive", note: "The query is a constant." })
        )
        assert.strictEqual(rejected.status, 200, rejected.text)
        const decided = (rejected.json as { data: FindingView }).data
        assert.deepStrictEqual([decided.decision, decided.reason_code], ["REJECTED", "false_positive"])
        const afterReject = yield* request(
          `/api/v1/organizations/${ORG}/deep-scans/${first.scan.id}`,
          json(cookie, "GET")
        )
        const counted = (afterReject.json as { data: ScanView }).data
        assert.deepStrictEqual(counted.decision_counts, { accepted: 0, pending: 1, rejected: 1 })
        assert.strictEqual(counted.risk_level, "HIGH")

        const second = yield* launchAndFinish(cookie, repositoryId)
        assert.notStrictEqual(second.scan.id, first.scan.id)
        assert.deepStrictEqual(
          second.findings.map((finding) => finding.symbol),
          ["findUser"]
        )
        assert.strictEqual(second.scan.finding_count, 1)
        assert.strictEqual(second.scan.suppressed_count, 1)
        assert.strictEqual(second.findings[0]?.fingerprint, real?.fingerprint)

        // The second scan's agent was told what the team had ruled on.
        const model = yield* FakeModelServer
        const prompts = model.requests
          .filter((entry) => entry.kind === "agent")
          .map((entry) => JSON.stringify(entry.body))
        assert.isTrue(
          prompts.some((body) => body.includes("do not report them again") && body.includes("monthlyReport"))
        )
        const sql = yield* SqlClient.SqlClient
        const runs = yield* sql<{ egress: string }>`
          SELECT input_snapshot->>'egress_tier' AS egress FROM workflow_runs
          WHERE organization_id = ${ORG} AND workflow_type = 'deep_scan'`
        assert.deepStrictEqual(
          runs.map((run) => run.egress),
          ["DEEP_SCAN", "DEEP_SCAN"]
        )

        // Nothing accepted on the first scan: nothing to fix.
        const nothing = yield* request(
          `/api/v1/organizations/${ORG}/deep-scans/${first.scan.id}/fix`,
          json(cookie, "POST")
        )
        assert.strictEqual(nothing.status, 409, nothing.text)
        assert.strictEqual((nothing.json as { error: { code: string } }).error.code, "no_accepted_findings")

        // The real finding accepted: one fix work item, whose run opens the pull request.
        const accepted = yield* request(
          `/api/v1/organizations/${ORG}/deep-scans/${second.scan.id}/findings/${second.findings[0]?.id}/decision`,
          json(cookie, "POST", { decision: "accept" })
        )
        assert.strictEqual(accepted.status, 200, accepted.text)
        const fixed = yield* request(
          `/api/v1/organizations/${ORG}/deep-scans/${second.scan.id}/fix`,
          json(cookie, "POST")
        )
        assert.strictEqual(fixed.status, 202, fixed.text)
        const fix = (fixed.json as { data: { work_item_id: string; created: boolean } }).data
        assert.strictEqual(fix.created, true)
        const again = yield* request(
          `/api/v1/organizations/${ORG}/deep-scans/${second.scan.id}/fix`,
          json(cookie, "POST")
        )
        assert.deepStrictEqual((again.json as { data: unknown }).data, {
          work_item_id: fix.work_item_id,
          created: false
        })

        const item = Effect.map(
          request(`/api/v1/organizations/${ORG}/work-items/${fix.work_item_id}`, json(cookie, "GET")),
          (response) => (response.json as { data: Record<string, unknown> }).data
        )
        const reviewing = yield* Effect.orDie(
          eventually(item, (found) => found.phase === "REVIEWING" || found.state === "FAILED", Duration.seconds(150))
        )
        assert.deepStrictEqual([reviewing.state, reviewing.phase, reviewing.kind], ["IN_PROGRESS", "REVIEWING", "BUG"])
        assert.strictEqual(reviewing.title, "Fix SQL injection in findUser")
        const github = yield* FakeGithub
        const [pull] = github.createdPulls(REPO)
        assert.isDefined(pull)
        assert.strictEqual(github.createdPulls(REPO).length, 1)
        assert.strictEqual(pull?.title, "Fix SQL injection in findUser")
        assert.include(pull?.body ?? "", "passes the id as a query parameter")
        assert.include(pull?.body ?? "", "CWE-89")
        assert.strictEqual(yield* github.fileAt(REPO, pull?.head.ref ?? "", "src/users.js"), FIXED)
        assert.strictEqual(yield* github.fileAt(REPO, pull?.head.ref ?? "", "src/report.js"), REPORT)
        const linked = yield* request(`/api/v1/organizations/${ORG}/deep-scans/${second.scan.id}`, json(cookie, "GET"))
        assert.strictEqual(
          (linked.json as { data: ScanView & { fix_work_item_id: string } }).data.fix_work_item_id,
          fix.work_item_id
        )
      })
  )
})

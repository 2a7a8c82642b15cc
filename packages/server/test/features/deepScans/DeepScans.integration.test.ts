/**
 * Deep scans over real HTTP (docs/interface.md: Organization endpoints `GET`/`POST .../deep-scans`;
 * Resources "Deep scan"; Authentication 5): a launch asks GitHub, as the organization's App, for
 * the default branch's head through the real Octokit clients against the local fake GitHub, and
 * pins the scan to it; the list and single reads field by field; every refusal writes nothing.
 */
import { generateKeyPairSync } from "node:crypto"
import { FakeGithub } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { DeepScanFindingsRepo } from "../../../src/features/deepScans/DeepScanFindingsRepo.ts"
import { launchDueScans } from "../../../src/features/deepScans/DeepScanSchedules.ts"
import { fingerprintOf } from "../../../src/features/deepScans/FindingVerification.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { GithubAppsRepo } from "../../../src/outbound/github/GithubAppsRepo.ts"
import { Cache } from "../../../src/platform/storage/Cache.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request, testSettings } from "../../support/TestServer.ts"

// No AGENT lane: the scans' runs stay QUEUED for the assertions (the e2e test runs them).
const defaults = testSettings()
const cluster = { ...defaults.cluster, scheduler: { ...defaults.cluster.scheduler, lanes: { AGENT: 0, REVIEW: 4 } } }

const Server = Layer.unwrap(
  Effect.map(FakeGithub, (fake) => layerTestServer({ settings: { githubApiUrl: new URL(fake.apiUrl), cluster } }))
).pipe(Layer.provideMerge(FakeGithub.layer))

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
const APP_ID = 4242
const INSTALLATION_ID = 777
const HEAD_1 = "1".repeat(40)
const HEAD_2 = "2".repeat(40)

const post = (cookie: string, body: unknown, extra: Record<string, string> = {}) => ({
  method: "POST",
  headers: { cookie, "content-type": "application/json", ...extra },
  body: JSON.stringify(body)
})

const counts = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ scans: string; runs: string; audits: string }>`
    SELECT (SELECT count(*) FROM deep_scans)::text AS scans,
           (SELECT count(*) FROM workflow_runs WHERE workflow_type = 'deep_scan')::text AS runs,
           (SELECT count(*) FROM audit_events WHERE action = 'deep_scan.launch')::text AS audits`.pipe(
    Effect.map(([row]) => ({ scans: Number(row?.scans), runs: Number(row?.runs), audits: Number(row?.audits) }))
  )
)

/**
 * org-a has a GitHub App installed on acme/api (default branch main at HEAD_1) but not on
 * acme/other; org-b has a repository and no App. Idempotent: every test calls it.
 */
const fixture = Effect.gen(function* () {
  const fake = yield* FakeGithub
  const apps = yield* GithubAppsRepo
  const repositories = yield* RepositoriesRepo
  fake.addApp({
    clientId: "Iv1.deepscan",
    clientSecret: "deep-scan-client-secret",
    appId: APP_ID,
    publicKey: publicKey.export({ type: "spki", format: "pem" }).toString()
  })
  fake.addInstallation({
    id: INSTALLATION_ID,
    appId: APP_ID,
    account: { id: 9001, login: "acme", type: "Organization" },
    repositories: ["acme/api"]
  })
  fake.setBranch("acme/api", "main", HEAD_1)
  fake.failWith(undefined)
  const member = yield* signIn("scan-member", [["org-a", "MEMBER"]])
  const outsider = yield* signIn("scan-outsider", [["org-b", "ADMIN"]])
  yield* apps.upsert("org-a", {
    githubAppId: APP_ID,
    slug: "bosun-test",
    clientId: "Iv1.deepscan",
    clientSecret: Redacted.make("deep-scan-client-secret"),
    privateKey: Redacted.make(privateKey.export({ type: "pkcs8", format: "pem" }).toString()),
    webhookSecret: Redacted.make("webhook-secret")
  })
  const repo = yield* repositories.upsert("org-a", {
    githubRepositoryId: 501,
    owner: "acme",
    name: "api",
    defaultBranch: "main"
  })
  const uninstalled = yield* repositories.upsert("org-a", {
    githubRepositoryId: 502,
    owner: "acme",
    name: "other",
    defaultBranch: "main"
  })
  const repoB = yield* repositories.upsert("org-b", {
    githubRepositoryId: 601,
    owner: "beta",
    name: "web",
    defaultBranch: "main"
  })
  return { fake, member, outsider, repo, uninstalled, repoB }
})

const reset = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.andThen(sql`DELETE FROM deep_scan_suppressions`, sql`DELETE FROM deep_scans`).pipe(Effect.asVoid)
)

layer(Server, { excludeTestServices: true })("deep scans", (it) => {
  describe("launch", () => {
    it.effect("pins the scan to the default branch's head, queues a deep_scan run and reads back field by field", () =>
      Effect.gen(function* () {
        yield* reset
        const f = yield* fixture
        const launched = yield* request(
          "/api/v1/organizations/org-a/deep-scans",
          post(f.member.cookie, { repository_id: f.repo.id })
        )
        assert.strictEqual(launched.status, 202)
        const id = (launched.json as { data: { id: string } }).data.id
        assert.deepStrictEqual(Object.keys((launched.json as { data: object }).data), ["id"])

        const listed = yield* request("/api/v1/organizations/org-a/deep-scans", {
          headers: { cookie: f.member.cookie }
        })
        assert.strictEqual(listed.status, 200)
        const [scan] = (listed.json as { data: Array<Record<string, unknown>> }).data
        assert.isDefined(scan)
        const runId = String(scan?.run_id)
        assert.match(String(scan?.created_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        assert.deepStrictEqual(scan, {
          completion_status: null,
          created_at: scan?.created_at,
          decision_counts: { accepted: 0, pending: 0, rejected: 0 },
          error_code: null,
          error_message: null,
          finding_count: 0,
          finished_at: null,
          fix_work_item_id: null,
          head_sha: HEAD_1,
          id,
          model: null,
          provider: null,
          repository: { id: f.repo.id, name: "api", owner: "acme" },
          risk_level: null,
          run_id: runId,
          skipped: [],
          started_at: null,
          status: "QUEUED",
          summary: null,
          suppressed_count: 0
        })

        const single = yield* request(`/api/v1/organizations/org-a/deep-scans/${id}`, {
          headers: { cookie: f.member.cookie }
        })
        assert.strictEqual(single.status, 200)
        assert.deepStrictEqual(single.json, { data: scan })

        const run = yield* request(`/api/v1/organizations/org-a/workflow-runs/${runId}`, {
          headers: { cookie: f.member.cookie }
        })
        const detail = (run.json as { data: { run: Record<string, unknown>; attempts: Array<unknown> } }).data
        assert.strictEqual(detail.run.workflow_type, "deep_scan")
        assert.strictEqual(detail.run.status, "QUEUED")
        assert.strictEqual(detail.run.head_sha, HEAD_1)
        assert.strictEqual(detail.run.repository_id, f.repo.id)
        assert.deepStrictEqual(detail.run.input_snapshot, {
          default_branch: "main",
          egress_tier: "DEEP_SCAN",
          head_sha: HEAD_1,
          repository_id: f.repo.id
        })
        assert.deepStrictEqual(detail.attempts, [])

        // What GitHub saw: the App's JWT for the installation and the token, then the branch read.
        const paths = f.fake.requests.map((r) => `${r.method} ${r.path}`)
        assert.include(paths, "GET /api/v3/repos/acme/api/installation")
        assert.include(paths, `POST /api/v3/app/installations/${INSTALLATION_ID}/access_tokens`)
        assert.include(paths, "GET /api/v3/repos/acme/api/branches/main")
        const audited = yield* counts
        assert.strictEqual(audited.audits, 1)
      })
    )

    it.effect(
      "joins the unfinished scan of the same head, starts a new one for a new head, and reuses the sealed cached token",
      () =>
        Effect.gen(function* () {
          yield* reset
          const f = yield* fixture
          const tokensBefore = f.fake.issuedInstallationTokens()
          const first = yield* request(
            "/api/v1/organizations/org-a/deep-scans",
            post(f.member.cookie, { repository_id: f.repo.id })
          )
          const again = yield* request(
            "/api/v1/organizations/org-a/deep-scans",
            post(f.member.cookie, { repository_id: f.repo.id })
          )
          assert.strictEqual(again.status, 202)
          assert.deepStrictEqual(again.json, first.json)

          f.fake.setBranch("acme/api", "main", HEAD_2)
          const newer = yield* request(
            "/api/v1/organizations/org-a/deep-scans",
            post(f.member.cookie, { repository_id: f.repo.id })
          )
          assert.strictEqual(newer.status, 202)
          assert.notDeepEqual(newer.json, first.json)

          const listed = yield* request("/api/v1/organizations/org-a/deep-scans", {
            headers: { cookie: f.member.cookie }
          })
          const scans = (listed.json as { data: Array<{ id: string; head_sha: string }> }).data
          assert.deepStrictEqual(
            scans.map((scan) => scan.head_sha),
            [HEAD_2, HEAD_1],
            "newest first"
          )
          // At most one token for three launches (none if an earlier test cached one).
          assert.isAtMost(f.fake.issuedInstallationTokens() - tokensBefore, 1)

          // The cached token is an envelope, not the token.
          const cache = yield* Cache
          const cached = yield* cache.get(`github:installation-token:org-a:${INSTALLATION_ID}`)
          assert.isTrue(Option.isSome(cached))
          const sealed = Buffer.from(Option.getOrThrow(cached), "base64").toString("latin1")
          assert.notInclude(sealed, "ghs_")
        })
    )

    it.effect(
      "refuses what it cannot pin, writing nothing: unknown, foreign, uninstalled, branchless, App-less, GitHub down",
      () =>
        Effect.gen(function* () {
          yield* reset
          const f = yield* fixture
          const before = yield* counts
          const launch = (cookie: string, org: string, body: unknown) =>
            request(`/api/v1/organizations/${org}/deep-scans`, post(cookie, body))

          const unknown = yield* launch(f.member.cookie, "org-a", { repository_id: "no-such-repository" })
          assert.deepStrictEqual([unknown.status, errorCode(unknown.json)], [404, "not_found"])
          const foreign = yield* launch(f.member.cookie, "org-a", { repository_id: f.repoB.id })
          assert.deepStrictEqual([foreign.status, errorCode(foreign.json)], [404, "not_found"])

          const uninstalled = yield* launch(f.member.cookie, "org-a", { repository_id: f.uninstalled.id })
          assert.deepStrictEqual([uninstalled.status, errorCode(uninstalled.json)], [409, "github_app_not_installed"])

          f.fake.setBranch("acme/api", "main", HEAD_1)
          yield* Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql`UPDATE repositories SET default_branch = 'gone' WHERE id = ${f.repo.id}`
          )
          const branchless = yield* launch(f.member.cookie, "org-a", { repository_id: f.repo.id })
          assert.deepStrictEqual([branchless.status, errorCode(branchless.json)], [409, "default_branch_not_found"])
          yield* Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql`UPDATE repositories SET default_branch = 'main', available = false WHERE id = ${f.repo.id}`
          )
          const unavailable = yield* launch(f.member.cookie, "org-a", { repository_id: f.repo.id })
          assert.deepStrictEqual([unavailable.status, errorCode(unavailable.json)], [409, "repository_unavailable"])
          yield* Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql`UPDATE repositories SET available = true WHERE id = ${f.repo.id}`
          )

          const appless = yield* launch(f.outsider.cookie, "org-b", { repository_id: f.repoB.id })
          assert.deepStrictEqual([appless.status, errorCode(appless.json)], [409, "github_app_unconfigured"])

          f.fake.failWith(503)
          const down = yield* launch(f.member.cookie, "org-a", { repository_id: f.repo.id })
          f.fake.failWith(undefined)
          assert.deepStrictEqual([down.status, errorCode(down.json)], [502, "github_unavailable"])
          assert.notInclude(down.text, "ghs_")
          assert.notInclude(down.text, "BEGIN")

          assert.deepStrictEqual(yield* counts, before)
        })
    )

    it.effect(
      "answers 401 without a session, 404 outside the caller's organizations, 403 to a foreign Origin, 400 for a bad body",
      () =>
        Effect.gen(function* () {
          yield* reset
          const f = yield* fixture
          const before = yield* counts
          const anonymous = yield* request("/api/v1/organizations/org-a/deep-scans", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ repository_id: f.repo.id })
          })
          assert.deepStrictEqual([anonymous.status, errorCode(anonymous.json)], [401, "session_required"])
          const outside = yield* request(
            "/api/v1/organizations/org-a/deep-scans",
            post(f.outsider.cookie, { repository_id: f.repo.id })
          )
          assert.deepStrictEqual([outside.status, errorCode(outside.json)], [404, "not_found"])
          const csrf = yield* request(
            "/api/v1/organizations/org-a/deep-scans",
            post(f.member.cookie, { repository_id: f.repo.id }, { origin: "https://evil.example" })
          )
          assert.deepStrictEqual([csrf.status, errorCode(csrf.json)], [403, "origin_mismatch"])
          for (const body of [{}, { repository_id: "" }, { repository_id: "x".repeat(129) }, { repository_id: 7 }]) {
            const bad = yield* request("/api/v1/organizations/org-a/deep-scans", post(f.member.cookie, body))
            assert.deepStrictEqual([bad.status, errorCode(bad.json)], [400, "invalid_body"], JSON.stringify(body))
          }
          assert.deepStrictEqual(yield* counts, before)
        })
    )
  })

  describe("reads", () => {
    it.effect(
      "filter by repository, cap at page_size, refuse bad query values, and hide other organizations' scans",
      () =>
        Effect.gen(function* () {
          yield* reset
          const f = yield* fixture
          f.fake.setBranch("acme/api", "main", HEAD_1)
          yield* request("/api/v1/organizations/org-a/deep-scans", post(f.member.cookie, { repository_id: f.repo.id }))
          f.fake.setBranch("acme/api", "main", HEAD_2)
          const latest = yield* request(
            "/api/v1/organizations/org-a/deep-scans",
            post(f.member.cookie, { repository_id: f.repo.id })
          )
          const latestId = (latest.json as { data: { id: string } }).data.id

          const get = (path: string, cookie = f.member.cookie) => request(path, { headers: { cookie } })
          const one = yield* get(`/api/v1/organizations/org-a/deep-scans?page_size=1`)
          assert.deepStrictEqual(
            (one.json as { data: Array<{ id: string }> }).data.map((scan) => scan.id),
            [latestId]
          )
          const ofRepo = yield* get(`/api/v1/organizations/org-a/deep-scans?repository_id=${f.repo.id}`)
          assert.strictEqual((ofRepo.json as { data: Array<unknown> }).data.length, 2)
          const ofOther = yield* get(`/api/v1/organizations/org-a/deep-scans?repository_id=${f.uninstalled.id}`)
          assert.deepStrictEqual(ofOther.json, { data: [] })

          for (const query of ["page_size=0", "page_size=101", "page_size=x", `repository_id=${"r".repeat(129)}`]) {
            const bad = yield* get(`/api/v1/organizations/org-a/deep-scans?${query}`)
            assert.deepStrictEqual([bad.status, errorCode(bad.json)], [400, "invalid_query_parameter"], query)
          }

          const outsiderList = yield* get("/api/v1/organizations/org-a/deep-scans", f.outsider.cookie)
          assert.deepStrictEqual([outsiderList.status, errorCode(outsiderList.json)], [404, "not_found"])
          const crossRead = yield* get(`/api/v1/organizations/org-b/deep-scans/${latestId}`, f.outsider.cookie)
          assert.deepStrictEqual([crossRead.status, errorCode(crossRead.json)], [404, "not_found"])
          const ownOrgB = yield* get("/api/v1/organizations/org-b/deep-scans", f.outsider.cookie)
          assert.deepStrictEqual(ownOrgB.json, { data: [] })
          const anonymous = yield* request("/api/v1/organizations/org-a/deep-scans")
          assert.strictEqual(anonymous.status, 401)
        })
    )
  })

  describe("findings", () => {
    /** A launched scan of org-a with two recorded findings, as a scan's publish records them. */
    const scanWithFindings = Effect.gen(function* () {
      yield* reset
      const f = yield* fixture
      const launched = yield* request(
        "/api/v1/organizations/org-a/deep-scans",
        post(f.member.cookie, { repository_id: f.repo.id })
      )
      const scanId = (launched.json as { data: { id: string } }).data.id
      const finding = (symbol: string, severity: "HIGH" | "LOW") => ({
        fingerprint: fingerprintOf(f.repo.id, {
          cwe: "CWE-22",
          category: "path_traversal",
          path: "src/files.js",
          symbol
        }),
        title: `Path traversal in ${symbol}`,
        severity,
        category: "path_traversal",
        cwe: "CWE-22",
        path: "src/files.js",
        startLine: 3,
        endLine: 4,
        symbol,
        evidence: [{ path: "src/files.js", line: 3, note: "the name reaches fs.readFile" }],
        proposedFix: "Resolve the path and check it stays under the root.",
        verification: severity === "HIGH" ? ("UNVERIFIED" as const) : ("NOT_REQUIRED" as const),
        verificationReason: severity === "HIGH" ? "No reproduction was attempted" : null,
        reproduction: null
      })
      yield* (yield* DeepScanFindingsRepo).record(
        "org-a",
        { id: scanId, repositoryId: f.repo.id },
        {
          summary: "Two path traversals.",
          complete: false,
          skipped: [{ path: "vendor/", reason: "third-party code" }],
          suppressedCount: 0,
          findings: [finding("readUpload", "HIGH"), finding("readAvatar", "LOW")]
        }
      )
      const listed = yield* request(`/api/v1/organizations/org-a/deep-scans/${scanId}/findings`, {
        headers: { cookie: f.member.cookie }
      })
      assert.strictEqual(listed.status, 200, listed.text)
      const findings = (listed.json as { data: Array<Record<string, unknown>> }).data
      return { f, scanId, findings }
    })

    it.effect("a scan's findings are listed worst first, field by field, and the scan's counts follow them", () =>
      Effect.gen(function* () {
        const { f, scanId, findings } = yield* scanWithFindings
        assert.deepStrictEqual(
          findings.map((finding) => [finding.severity, finding.symbol]),
          [
            ["HIGH", "readUpload"],
            ["LOW", "readAvatar"]
          ]
        )
        const first = findings[0]
        assert.deepStrictEqual(Object.keys(first ?? {}).sort(), [
          "category",
          "created_at",
          "cwe",
          "decided_at",
          "decided_by",
          "decision",
          "deep_scan_id",
          "end_line",
          "evidence",
          "fingerprint",
          "id",
          "path",
          "proposed_fix",
          "reason_code",
          "reason_note",
          "severity",
          "start_line",
          "symbol",
          "title",
          "verification"
        ])
        assert.deepStrictEqual(first?.verification, {
          status: "UNVERIFIED",
          reason: "No reproduction was attempted",
          reproduction: null
        })
        assert.deepStrictEqual(
          [first?.deep_scan_id, first?.decision, first?.reason_code, first?.decided_by, first?.decided_at],
          [scanId, "PENDING", null, null, null]
        )
        const scan = yield* request(`/api/v1/organizations/org-a/deep-scans/${scanId}`, {
          headers: { cookie: f.member.cookie }
        })
        const data = (scan.json as { data: Record<string, unknown> }).data
        assert.deepStrictEqual(
          [data.finding_count, data.risk_level, data.completion_status, data.decision_counts, data.skipped],
          [
            2,
            "HIGH",
            "PARTIAL",
            { accepted: 0, pending: 2, rejected: 0 },
            [{ path: "vendor/", reason: "third-party code" }]
          ]
        )
      })
    )

    it.effect("accepting and rejecting are recorded once and audited; a rejection lowers the risk and suppresses", () =>
      Effect.gen(function* () {
        const { f, scanId, findings } = yield* scanWithFindings
        const decide = (id: unknown, body: unknown) =>
          request(
            `/api/v1/organizations/org-a/deep-scans/${scanId}/findings/${String(id)}/decision`,
            post(f.member.cookie, body)
          )
        const high = findings[0]
        const low = findings[1]
        const rejected = yield* decide(high?.id, {
          decision: "reject",
          reason: "accepted_risk",
          note: "Admin-only route."
        })
        assert.strictEqual(rejected.status, 200, rejected.text)
        const decided = (rejected.json as { data: Record<string, unknown> }).data
        assert.deepStrictEqual(
          [decided.decision, decided.reason_code, decided.reason_note, decided.decided_by],
          ["REJECTED", "accepted_risk", "Admin-only route.", f.member.userId]
        )
        assert.match(String(decided.decided_at), /^\d{4}-\d\d-\d\dT/)
        const twice = yield* decide(high?.id, { decision: "accept" })
        assert.deepStrictEqual([twice.status, errorCode(twice.json)], [409, "finding_already_decided"])
        assert.include(twice.text, "rejected already")
        const accepted = yield* decide(low?.id, { decision: "accept" })
        assert.strictEqual(accepted.status, 200, accepted.text)

        const scan = yield* request(`/api/v1/organizations/org-a/deep-scans/${scanId}`, {
          headers: { cookie: f.member.cookie }
        })
        const data = (scan.json as { data: Record<string, unknown> }).data
        assert.deepStrictEqual(
          [data.risk_level, data.decision_counts],
          ["LOW", { accepted: 1, pending: 0, rejected: 1 }]
        )
        const sql = yield* SqlClient.SqlClient
        const suppressions = yield* sql<{ fingerprint: string; reason_code: string }>`
          SELECT fingerprint, reason_code FROM deep_scan_suppressions WHERE organization_id = 'org-a'`
        assert.deepStrictEqual(suppressions, [{ fingerprint: String(high?.fingerprint), reason_code: "accepted_risk" }])
        const audits = yield* sql<{ action: string; target: string }>`
          SELECT action, target FROM audit_events
          WHERE organization_id = 'org-a' AND action LIKE 'deep_scan.finding.%' ORDER BY id`
        assert.deepStrictEqual(audits, [
          { action: "deep_scan.finding.reject", target: `deep_scan_finding:${String(high?.id)}` },
          { action: "deep_scan.finding.accept", target: `deep_scan_finding:${String(low?.id)}` }
        ])
      })
    )

    it.effect("bad decisions are 400, other organizations' and missing findings 404, no session 401; none writes", () =>
      Effect.gen(function* () {
        const { f, scanId, findings } = yield* scanWithFindings
        const id = String(findings[0]?.id)
        const path = `/api/v1/organizations/org-a/deep-scans/${scanId}/findings/${id}/decision`
        for (const body of [
          { decision: "reject" },
          { decision: "accept", reason: "false_positive" },
          { decision: "reject", reason: "because" },
          { decision: "maybe" },
          { decision: "reject", reason: "wont_fix", note: "n".repeat(2_001) },
          {}
        ]) {
          const bad = yield* request(path, post(f.member.cookie, body))
          assert.deepStrictEqual([bad.status, errorCode(bad.json)], [400, "invalid_body"], JSON.stringify(body))
        }
        const missing = yield* request(
          `/api/v1/organizations/org-a/deep-scans/${scanId}/findings/no-such-finding/decision`,
          post(f.member.cookie, { decision: "accept" })
        )
        assert.deepStrictEqual([missing.status, errorCode(missing.json)], [404, "not_found"])
        const otherScan = yield* request(
          `/api/v1/organizations/org-a/deep-scans/no-such-scan/findings/${id}/decision`,
          post(f.member.cookie, { decision: "accept" })
        )
        assert.strictEqual(otherScan.status, 404)
        const outsider = yield* request(path, post(f.outsider.cookie, { decision: "accept" }))
        assert.deepStrictEqual([outsider.status, errorCode(outsider.json)], [404, "not_found"])
        const crossOrg = yield* request(
          `/api/v1/organizations/org-b/deep-scans/${scanId}/findings/${id}/decision`,
          post(f.outsider.cookie, { decision: "accept" })
        )
        assert.strictEqual(crossOrg.status, 404)
        const crossList = yield* request(`/api/v1/organizations/org-b/deep-scans/${scanId}/findings`, {
          headers: { cookie: f.outsider.cookie }
        })
        assert.deepStrictEqual([crossList.status, errorCode(crossList.json)], [404, "not_found"])
        const anonymous = yield* request(path, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ decision: "accept" })
        })
        assert.strictEqual(anonymous.status, 401)
        const anonymousList = yield* request(`/api/v1/organizations/org-a/deep-scans/${scanId}/findings`)
        assert.strictEqual(anonymousList.status, 401)

        const sql = yield* SqlClient.SqlClient
        const pending = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM deep_scan_findings WHERE deep_scan_id = ${scanId} AND decision = 'PENDING'`
        assert.deepStrictEqual(pending, [{ n: 2 }])
        const suppressions = yield* sql`SELECT 1 FROM deep_scan_suppressions WHERE organization_id = 'org-a'`
        assert.strictEqual(suppressions.length, 0)
      })
    )
  })

  describe("schedules", () => {
    const schedulePath = (org: string, repositoryId: string) =>
      `/api/v1/organizations/${org}/repositories/${repositoryId}/deep-scan-schedule`
    const send = (cookie: string, method: string, body?: unknown) => ({
      method,
      headers: { cookie, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const resetSchedules = Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.andThen(sql`DELETE FROM deep_scan_schedules`, reset)
    )
    const admin = signIn("scan-admin", [["org-a", "ADMIN"]])

    it.effect(
      "an admin sets a repository's cron; members read it with its next occurrence; it is audited; removing it answers 204",
      () =>
        Effect.gen(function* () {
          const f = yield* fixture
          yield* resetSchedules
          const sql = yield* SqlClient.SqlClient
          const owner = yield* admin
          const set = yield* request(
            schedulePath("org-a", f.repo.id),
            send(owner.cookie, "PUT", { cron: "  30 2 * * 1 " })
          )
          assert.strictEqual(set.status, 200, set.text)
          const schedule = (set.json as { data: Record<string, unknown> }).data
          assert.deepStrictEqual(Object.keys(schedule).sort(), [
            "cron",
            "last_deep_scan_id",
            "last_error",
            "last_run_at",
            "last_run_id",
            "next_run_at",
            "repository_id",
            "updated_at"
          ])
          assert.strictEqual(schedule.cron, "30 2 * * 1")
          assert.strictEqual(schedule.repository_id, f.repo.id)
          const next = new Date(String(schedule.next_run_at))
          assert.deepStrictEqual([next.getUTCDay(), next.getUTCHours(), next.getUTCMinutes()], [1, 2, 30])
          assert.isTrue(next.getTime() > Date.now() && next.getTime() - Date.now() <= 7 * 86_400_000)
          assert.deepStrictEqual(
            [schedule.last_run_at, schedule.last_deep_scan_id, schedule.last_run_id, schedule.last_error],
            [null, null, null, null]
          )
          const read = yield* request(schedulePath("org-a", f.repo.id), send(f.member.cookie, "GET"))
          assert.deepStrictEqual((read.json as { data: unknown }).data, schedule)
          const [audited] = yield* sql<{ n: string }>`
            SELECT count(*)::text AS n FROM audit_events WHERE action = 'deep_scan.schedule.set'
              AND target = ${`repository:${f.repo.id}`}`
          assert.strictEqual(audited?.n, "1")
          const removed = yield* request(schedulePath("org-a", f.repo.id), send(owner.cookie, "DELETE"))
          assert.strictEqual(removed.status, 204)
          const gone = yield* request(schedulePath("org-a", f.repo.id), send(f.member.cookie, "GET"))
          assert.strictEqual(gone.status, 404)
          const again = yield* request(schedulePath("org-a", f.repo.id), send(owner.cookie, "DELETE"))
          assert.strictEqual(again.status, 404)
        })
    )

    it.effect(
      "answers 400 invalid_cron for what is not five cron fields, 401 without a session, 403 to a member, 404 across organizations, writing nothing",
      () =>
        Effect.gen(function* () {
          const f = yield* fixture
          yield* resetSchedules
          const sql = yield* SqlClient.SqlClient
          const owner = yield* admin
          for (const cron of ["every day at 2", "10 11 * *", "61 * * * *", "0 0 * * * *", "0 25 * * *"]) {
            const bad = yield* request(schedulePath("org-a", f.repo.id), send(owner.cookie, "PUT", { cron }))
            assert.strictEqual(bad.status, 400, cron)
            assert.strictEqual(errorCode(bad.json), "invalid_cron", cron)
          }
          for (const body of [{}, { cron: 5 }, { cron: "* *" }]) {
            const bad = yield* request(schedulePath("org-a", f.repo.id), send(owner.cookie, "PUT", body))
            assert.strictEqual(bad.status, 400, JSON.stringify(body))
            assert.strictEqual(errorCode(bad.json), "invalid_body")
          }
          const anonymous = yield* request(schedulePath("org-a", f.repo.id), {
            method: "PUT",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ cron: "0 3 * * *" })
          })
          assert.strictEqual(anonymous.status, 401)
          const member = yield* request(
            schedulePath("org-a", f.repo.id),
            send(f.member.cookie, "PUT", { cron: "0 3 * * *" })
          )
          assert.strictEqual(member.status, 403)
          for (const [cookie, target] of [
            [f.outsider.cookie, schedulePath("org-a", f.repo.id)],
            [owner.cookie, schedulePath("org-a", f.repoB.id)],
            [owner.cookie, schedulePath("org-b", f.repoB.id)],
            [owner.cookie, schedulePath("org-a", "no-such-repository")]
          ] as const) {
            const response = yield* request(target, send(cookie, "PUT", { cron: "0 3 * * *" }))
            assert.strictEqual(response.status, 404, target)
            assert.strictEqual(errorCode(response.json), "not_found")
          }
          const [rows] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM deep_scan_schedules`
          assert.strictEqual(rows?.n, "0")
        })
    )

    it.effect(
      "a due occurrence launches one scan at the default branch's head, however many runners look at once, and moves to the next; an unreachable repository records why",
      () =>
        Effect.gen(function* () {
          const f = yield* fixture
          yield* resetSchedules
          const sql = yield* SqlClient.SqlClient
          const owner = yield* admin
          for (const repositoryId of [f.repo.id, f.uninstalled.id]) {
            const set = yield* request(
              schedulePath("org-a", repositoryId),
              send(owner.cookie, "PUT", { cron: "0 4 * * *" })
            )
            assert.strictEqual(set.status, 200, set.text)
          }
          yield* sql`UPDATE deep_scan_schedules SET next_run_at = now() - interval '1 minute'`
          // Three runners' crons at once (and the cluster's own, should it tick): one scan per occurrence.
          yield* Effect.all([launchDueScans, launchDueScans, launchDueScans], { concurrency: 3 })
          const scans = yield* sql<{ id: string; run_id: string; head_sha: string; requested_by: string | null }>`
            SELECT id, run_id, head_sha, requested_by FROM deep_scans WHERE repository_id = ${f.repo.id}`
          assert.strictEqual(scans.length, 1)
          assert.deepStrictEqual([scans[0]?.head_sha, scans[0]?.requested_by], [HEAD_1, null])
          const [run] = yield* sql<{ workflow_type: string }>`
            SELECT workflow_type FROM workflow_runs WHERE id = ${scans[0]?.run_id ?? ""}`
          assert.strictEqual(run?.workflow_type, "deep_scan")
          const read = yield* request(schedulePath("org-a", f.repo.id), send(f.member.cookie, "GET"))
          const schedule = (read.json as { data: Record<string, string | null> }).data
          assert.strictEqual(schedule.last_deep_scan_id, scans[0]?.id)
          assert.strictEqual(schedule.last_run_id, scans[0]?.run_id)
          assert.isNull(schedule.last_error)
          assert.isTrue(Date.parse(schedule.next_run_at ?? "") > Date.now())
          assert.strictEqual(new Date(schedule.next_run_at ?? "").getUTCHours(), 4)
          assert.isTrue(Date.now() - Date.parse(schedule.last_run_at ?? "") < 60_000)

          const failed = yield* request(schedulePath("org-a", f.uninstalled.id), send(f.member.cookie, "GET"))
          const broken = (failed.json as { data: Record<string, string | null> }).data
          assert.isNull(broken.last_deep_scan_id)
          assert.isString(broken.last_error)
          assert.isTrue(Date.parse(broken.next_run_at ?? "") > Date.now(), "a broken occurrence does not repeat")
          const [none] = yield* sql<{ n: string }>`
            SELECT count(*)::text AS n FROM deep_scans WHERE repository_id = ${f.uninstalled.id}`
          assert.strictEqual(none?.n, "0")
          // Nothing is due now: another look launches nothing.
          assert.strictEqual(yield* launchDueScans, 0)
        })
    )
  })
})

import type { ReviewFinding } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { OrganizationsRepo } from "../../../src/features/identity/OrganizationsRepo.ts"
import { PullRequestsRepo } from "../../../src/features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { ReviewFindingsRepo } from "../../../src/features/reviews/ReviewFindingsRepo.ts"
import { type ChangedFile, coverageOf, planReview } from "../../../src/features/reviews/ReviewPlan.ts"
import { pathExclusion } from "../../../src/features/reviews/ReviewPolicy.ts"
import { layerTestServices } from "../../support/TestServices.ts"

const Services = layerTestServices

const added = (n: number) =>
  [`@@ -0,0 +1,${n} @@`, ...Array.from({ length: n }, (_, i) => `+code line ${i + 1}`)].join("\n")
const FILES: ReadonlyArray<ChangedFile> = [
  { path: "src/a.ts", status: "added", patch: added(20), additions: 20, deletions: 0 },
  { path: "src/b.ts", status: "added", patch: added(20), additions: 20, deletions: 0 },
  { path: "logo.png", status: "added", additions: 0, deletions: 0 }
]
const coverage = coverageOf(FILES, pathExclusion([]))

const finding = (title: string, path: string, line: number): ReviewFinding => ({
  path,
  start_line: line,
  end_line: line,
  side: "RIGHT",
  severity: "HIGH",
  category: "correctness",
  title,
  body: `${title}, explained.`
})

layer(Services, { excludeTestServices: true })("ReviewFindingsRepo", (it) => {
  it.effect("keeps findings stable across reviews: posted once, resolved when gone, dismissed for good", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const organizations = yield* OrganizationsRepo
      const repositories = yield* RepositoriesRepo
      const pullRequests = yield* PullRequestsRepo
      const findings = yield* ReviewFindingsRepo
      yield* organizations.ensure("rf-org")
      const repository = yield* repositories.upsert("rf-org", {
        githubRepositoryId: 1,
        owner: "acme",
        name: "app",
        defaultBranch: "main"
      })
      yield* pullRequests.upsert("rf-org", { repositoryId: repository.id, number: 4, title: "t", authorLogin: "a" })
      const pr = { organizationId: "rf-org", repositoryId: repository.id, number: 4 }
      const counts = Effect.map(
        sql<{ open_findings: number; resolved_findings: number }>`
          SELECT open_findings, resolved_findings FROM pull_requests WHERE repository_id = ${repository.id} AND number = 4`,
        (rows) => rows[0]
      )

      const first = planReview({
        output: {
          summary: "s",
          findings: [finding("one", "src/a.ts", 2), finding("two", "src/a.ts", 5), finding("three", "src/b.ts", 7)]
        },
        coverage,
        commentLimit: 10,
        known: yield* findings.known(pr),
        changedSincePrevious: new Set(FILES.map((file) => file.path))
      })
      yield* sql.withTransaction(
        findings.recordPlan(pr, { runId: "run-1", headSha: "a".repeat(40), summary: "first", plan: first })
      )
      yield* findings.recordPosted(pr, {
        runId: "run-1",
        githubReviewId: 900,
        comments: first.findings.map((f, i) => ({
          fingerprint: f.fingerprint,
          commentId: 1000 + i,
          threadId: `PRRT_${i}`
        }))
      })
      assert.deepStrictEqual(yield* counts, { open_findings: 3, resolved_findings: 0 })
      const [three] = first.findings.filter((f) => f.title === "three")

      // A human answers "not an issue" on finding three.
      const commentOfThree = 1000 + first.findings.findIndex((f) => f.title === "three")
      assert.isTrue(yield* findings.dismissByComment("rf-org", commentOfThree, "not an issue"))
      assert.isFalse(yield* findings.dismissByComment("rf-org", commentOfThree, "again"))
      assert.isFalse(yield* findings.dismissByComment("other-org", 1000, "not mine"))
      assert.deepStrictEqual(yield* counts, { open_findings: 2, resolved_findings: 0 })

      // Second push: src/a.ts changed; "two" is fixed, "four" is new, "three" is reported again.
      const second = planReview({
        output: {
          summary: "s",
          findings: [finding("one", "src/a.ts", 2), finding("four", "src/a.ts", 9), finding("three", "src/b.ts", 7)]
        },
        coverage,
        commentLimit: 10,
        known: yield* findings.known(pr),
        changedSincePrevious: new Set(["src/a.ts"])
      })
      assert.deepStrictEqual(
        second.findings.map((f) => [f.title, f.placement]),
        [
          ["one", "ALREADY_POSTED"],
          ["three", "DISMISSED"],
          ["four", "INLINE"]
        ]
      )
      yield* sql.withTransaction(
        findings.recordPlan(pr, { runId: "run-2", headSha: "b".repeat(40), summary: "second", plan: second })
      )
      const rows = yield* sql<{
        title: string
        state: string
        first_run_id: string
        last_run_id: string
        dismissed_reason: string | null
      }>`
        SELECT title, state, first_run_id, last_run_id, dismissed_reason FROM review_findings
        WHERE repository_id = ${repository.id} ORDER BY title`
      assert.deepStrictEqual(rows, [
        { title: "four", state: "OPEN", first_run_id: "run-2", last_run_id: "run-2", dismissed_reason: null },
        { title: "one", state: "OPEN", first_run_id: "run-1", last_run_id: "run-2", dismissed_reason: null },
        {
          title: "three",
          state: "DISMISSED",
          first_run_id: "run-1",
          last_run_id: "run-1",
          dismissed_reason: "not an issue"
        },
        { title: "two", state: "RESOLVED", first_run_id: "run-1", last_run_id: "run-2", dismissed_reason: null }
      ])
      assert.deepStrictEqual(yield* counts, { open_findings: 2, resolved_findings: 1 })
      assert.isDefined(three)

      // A later review reporting the resolved one again reopens it (a regression); the dismissed one stays closed.
      const third = planReview({
        output: { summary: "s", findings: [finding("two", "src/a.ts", 5), finding("three", "src/b.ts", 7)] },
        coverage,
        commentLimit: 10,
        known: yield* findings.known(pr),
        changedSincePrevious: new Set(["src/b.ts"])
      })
      yield* sql.withTransaction(
        findings.recordPlan(pr, { runId: "run-3", headSha: "c".repeat(40), summary: "third", plan: third })
      )
      const states = yield* sql<{ title: string; state: string }>`
        SELECT title, state FROM review_findings WHERE repository_id = ${repository.id} ORDER BY title`
      assert.deepStrictEqual(
        states.map((row) => [row.title, row.state]),
        [
          ["four", "OPEN"],
          ["one", "OPEN"],
          ["three", "DISMISSED"],
          ["two", "OPEN"]
        ]
      )
      const reviews = yield* sql<{ run_id: string; github_review_id: string | null; coverage: { skipped: unknown } }>`
        SELECT run_id, github_review_id::text AS github_review_id, coverage FROM pull_request_reviews
        WHERE repository_id = ${repository.id} ORDER BY run_id`
      assert.deepStrictEqual(
        reviews.map((row) => [row.run_id, row.github_review_id]),
        [
          ["run-1", "900"],
          ["run-2", null],
          ["run-3", null]
        ]
      )
      assert.deepStrictEqual(reviews[0]?.coverage.skipped, [{ path: "logo.png", reason: "BINARY" }])
    })
  )
})

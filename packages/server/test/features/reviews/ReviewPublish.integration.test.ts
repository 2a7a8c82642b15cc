/**
 * The review workflow's publish step and the delivery it records (`ReviewDelivery`, on the real
 * `bosun-effects` queue) against the fake GitHub through the real Octokit clients: one review with
 * inline comments on diff lines (outside-diff findings in the summary), never posted twice — not
 * when publish runs again, not when a delivery failed after GitHub had the review — and across a
 * push: a fixed finding resolved with its thread, a new one posted, an unchanged one not re-posted;
 * output off the contract posts nothing; the run's check run ends success, failure or neutral; a
 * GitHub that refuses ends the delivery at once with its words, replayable from the dead letters.
 */
import type { AttemptRun } from "@bosun/actors/attempt/AttemptPorts"
import { eventually, FakeGithub, LogCapture } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { PullRequestsRepo } from "../../../src/features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { reviewMarker } from "../../../src/features/reviews/ReviewDelivery.ts"
import { ReviewFindingsRepo } from "../../../src/features/reviews/ReviewFindingsRepo.ts"
import { REVIEW, reviewWorkflow } from "../../../src/features/reviews/ReviewWorkflow.ts"
import { Queues } from "../../../src/platform/storage/Queue.ts"
import {
  delivered,
  deliveryState,
  layerReviewPublishStack,
  publishAndDeliver,
  publishReview
} from "../../support/ReviewPublishStack.ts"

const ORG = "publish-org"
const REPO = "acme/shop"

const Publish = layerReviewPublishStack(ORG, REPO)

const sha = (c: string) => c.repeat(40)

/** A new file whose lines are `lines`. */
const newFile = (lines: ReadonlyArray<string>) =>
  [`@@ -0,0 +1,${lines.length} @@`, ...lines.map((line) => `+${line}`)].join("\n")

const FIRST = Array.from({ length: 20 }, (_, i) => `const v${i + 1} = input[${i + 1}]`)
/** The push: line 3 fixed, line 21 added; line 7 unchanged. */
const SECOND = [...FIRST.slice(0, 2), "const v3 = sanitize(input[3])", ...FIRST.slice(3), "eval(input[21])"]

const finding = (line: number, title: string, severity: "HIGH" | "MEDIUM" | "LOW" = "HIGH") => ({
  path: "src/handler.ts",
  start_line: line,
  end_line: line,
  side: "RIGHT" as const,
  severity,
  category: "security",
  title,
  body: `${title}: explained.`
})

const A = finding(3, "Unsanitized input reaches the query")
const B = finding(7, "Input index is not bounds-checked", "MEDIUM")
const C = finding(80, "The caller never checks the result", "LOW")
const D = finding(21, "eval of request input")
const E = finding(10, "Magic number in the input index", "LOW")

const setup = (number: number, head: string, lines: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    fake.setPull(REPO, {
      number,
      head: { sha: head, ref: `feature-${number}` },
      base: { sha: sha("0"), ref: "main" },
      title: `Feature ${number}`,
      files: [
        { filename: "src/handler.ts", status: "added", additions: lines.length, deletions: 0, patch: newFile(lines) }
      ]
    })
    const repository = yield* (yield* RepositoriesRepo).upsert(ORG, {
      githubRepositoryId: 55_501,
      owner: "acme",
      name: "shop",
      defaultBranch: "main"
    })
    yield* (yield* PullRequestsRepo).upsert(ORG, {
      repositoryId: repository.id,
      number,
      title: `Feature ${number}`,
      authorLogin: "dev"
    })
    return { fake, repositoryId: repository.id }
  })

const run = (runId: string, repositoryId: string, number: number, head: string): AttemptRun => ({
  organizationId: ORG,
  runId,
  attempt: 1,
  attemptId: `${runId}:1`,
  workflowType: REVIEW,
  repositoryId,
  headSha: head,
  baseSha: sha("0"),
  pullRequestNumber: number,
  inputSnapshot: {}
})

const publish = publishReview

/** How many requests of `method` to `path` GitHub got. */
const calls = (fake: FakeGithub["Service"], method: string, path: string) =>
  fake.requests.filter((request) => request.method === method && request.path === path).length

/** The check runs of `head` on the repository. */
const checksOn = (fake: FakeGithub["Service"], head: string) =>
  fake.checkRuns(REPO).filter((check) => check.head_sha === head)

const reviewStatus = (repositoryId: string, number: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ review_status: string }>`SELECT review_status FROM pull_requests
        WHERE organization_id = ${ORG} AND repository_id = ${repositoryId} AND number = ${number}`,
      (rows) => rows[0]?.review_status
    )
  )

const findingRows = (repositoryId: string, number: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{
      title: string
      state: string
      placement: string
      github_comment_id: string | null
      github_thread_id: string | null
    }>`SELECT title, state, placement, github_comment_id, github_thread_id FROM review_findings
       WHERE organization_id = ${ORG} AND repository_id = ${repositoryId} AND pull_request_number = ${number}
       ORDER BY title COLLATE "C"`
  )

layer(Publish, { excludeTestServices: true })("review publish", (it) => {
  describe("one review per run", () => {
    it.effect(
      "posts one COMMENT review: inline comments on diff lines by severity, outside-diff findings in the summary with the coverage line",
      () =>
        Effect.gen(function* () {
          const { fake, repositoryId } = yield* setup(1, sha("1"), FIRST)
          yield* publishAndDeliver(run("run-p1", repositoryId, 1, sha("1")), {
            summary: "Adds the handler.",
            findings: [B, A, C]
          })

          const reviews = fake.reviews(REPO, 1)
          assert.strictEqual(reviews.length, 1)
          assert.strictEqual(yield* reviewStatus(repositoryId, 1), "REVIEWED")
          const [review] = reviews
          assert.strictEqual(review?.commit_id, sha("1"))
          assert.strictEqual(review?.state, "COMMENTED")
          assert.include(review?.body ?? "", "Adds the handler.")
          assert.include(review?.body ?? "", "Reviewed 1 of 1 changed files.")
          assert.include(review?.body ?? "", "Findings on lines outside the diff")
          assert.include(review?.body ?? "", "`src/handler.ts:80` — The caller never checks the result")
          assert.include(review?.body ?? "", reviewMarker("run-p1"))
          assert.deepStrictEqual(
            review?.comments.map((comment) => ({ path: comment.path, line: comment.line, side: comment.side })),
            [
              { path: "src/handler.ts", line: 3, side: "RIGHT" },
              { path: "src/handler.ts", line: 7, side: "RIGHT" }
            ]
          )
          assert.include(review?.comments[0]?.body ?? "", "**HIGH** · security · Unsanitized input reaches the query")

          const rows = yield* findingRows(repositoryId, 1)
          assert.deepStrictEqual(
            rows.map((row) => ({
              title: row.title,
              state: row.state,
              placement: row.placement,
              commented: row.github_comment_id !== null,
              threaded: row.github_thread_id !== null
            })),
            [
              { title: B.title, state: "OPEN", placement: "INLINE", commented: true, threaded: true },
              { title: C.title, state: "OPEN", placement: "OUTSIDE_DIFF", commented: false, threaded: false },
              { title: A.title, state: "OPEN", placement: "INLINE", commented: true, threaded: true }
            ]
          )
          const counts = yield* Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql<{ open_findings: number; resolved_findings: number }>`
              SELECT open_findings, resolved_findings FROM pull_requests
              WHERE organization_id = ${ORG} AND repository_id = ${repositoryId} AND number = 1`
          )
          assert.deepStrictEqual(counts, [{ open_findings: 3, resolved_findings: 0 }])

          // The run's check run ends success on the head, saying what was posted and what was not reviewed.
          const [check] = checksOn(fake, sha("1"))
          assert.strictEqual(checksOn(fake, sha("1")).length, 1)
          assert.strictEqual(check?.name, "Bosun review")
          assert.strictEqual(check?.status, "completed")
          assert.strictEqual(check?.conclusion, "success")
          assert.strictEqual(check?.external_id, "bosun-review:run-p1")
          assert.strictEqual(check?.output.title, "Review posted")
          assert.include(
            check?.output.summary ?? "",
            "- Posted: 3 new findings (2 inline, 1 outside the diff, 0 over the comment limit)"
          )
          assert.include(check?.output.summary ?? "", "- Resolved by this push: 0")
          assert.include(check?.output.summary ?? "", "- Reviewed 1 of 1 changed files.")

          // Publish running again (a retried step) posts nothing more.
          yield* publishAndDeliver(run("run-p1", repositoryId, 1, sha("1")), {
            summary: "Adds the handler.",
            findings: [B, A, C]
          })
          assert.strictEqual(fake.reviews(REPO, 1).length, 1)
        })
    )

    it.effect(
      "a delivery that failed after GitHub took the review finds it on the next delivery and posts no second one",
      () =>
        Effect.gen(function* () {
          const { fake, repositoryId } = yield* setup(2, sha("2"), FIRST)
          // Past the call's own retries (three): the delivery fails, and the queue delivers it again.
          fake.failNext({ method: "GET", path: /\/pulls\/2\/reviews\/\d+\/comments$/, status: 502, times: 4 })

          yield* publishAndDeliver(run("run-p2", repositoryId, 2, sha("2")), { summary: "First try.", findings: [A] })
          assert.deepStrictEqual(yield* deliveryState("run-p2"), { done: true, dead: false })
          assert.strictEqual(fake.reviews(REPO, 2).length, 1, "one review, found by its marker on the second delivery")
          assert.strictEqual(calls(fake, "POST", "/api/v3/repos/acme/shop/pulls/2/reviews"), 1)
          const rows = yield* findingRows(repositoryId, 2)
          assert.strictEqual(rows.length, 1)
          assert.isNotNull(rows[0]?.github_comment_id, "the comment is matched to its finding on the retry")
        })
    )

    it.effect("output that does not match the contract fails the attempt, unretried, and posts nothing", () =>
      Effect.gen(function* () {
        const { fake, repositoryId } = yield* setup(3, sha("3"), FIRST)
        const missing = yield* Effect.flip(publish(run("run-p3", repositoryId, 3, sha("3")), { findings: [A] }))
        assert.strictEqual(missing.code, "review_output_invalid")
        assert.isFalse(missing.retryable)
        assert.include(missing.message, "summary")
        const reversed = yield* Effect.flip(
          publish(run("run-p3", repositoryId, 3, sha("3")), {
            summary: "s",
            findings: [{ ...A, start_line: 9, end_line: 2 }]
          })
        )
        assert.strictEqual(reversed.code, "review_output_invalid")
        const notJson = yield* Effect.flip(publish(run("run-p3", repositoryId, 3, sha("3")), "{ not json"))
        assert.strictEqual(notJson.code, "review_output_invalid")
        assert.strictEqual(fake.reviews(REPO, 3).length, 0)
        assert.deepStrictEqual(yield* findingRows(repositoryId, 3), [])
      })
    )

    it.effect(
      "a run whose pull request moved to a newer head posts nothing; its check run ends neutral naming the new head",
      () =>
        Effect.gen(function* () {
          const { fake, repositoryId } = yield* setup(4, sha("5"), FIRST)
          yield* publishAndDeliver(run("run-p4", repositoryId, 4, sha("4")), { summary: "Stale.", findings: [A] })
          assert.strictEqual(fake.reviews(REPO, 4).length, 0)
          assert.deepStrictEqual(yield* findingRows(repositoryId, 4), [])
          const [check] = yield* eventually(
            Effect.sync(() => checksOn(fake, sha("4"))),
            (found) => found.length > 0,
            Duration.seconds(20)
          )
          assert.strictEqual(check?.status, "completed")
          assert.strictEqual(check?.conclusion, "neutral")
          assert.strictEqual(check?.external_id, "bosun-review:run-p4")
          assert.strictEqual(check?.output.title, "Superseded by a newer push")
          assert.include(
            check?.output.summary ?? "",
            `\`${sha("5").slice(0, 12)}\` replaced \`${sha("4").slice(0, 12)}\``
          )
        })
    )

    it.effect(
      "GitHub answering the review POST 502, 502, then 201: the review is posted once, its check run success",
      () =>
        Effect.gen(function* () {
          const { fake, repositoryId } = yield* setup(8, sha("b"), FIRST)
          fake.failNext({ method: "POST", path: /\/pulls\/8\/reviews$/, status: 502, times: 2 })

          yield* publishAndDeliver(run("run-p8", repositoryId, 8, sha("b")), { summary: "Third time.", findings: [A] })

          assert.strictEqual(calls(fake, "POST", "/api/v3/repos/acme/shop/pulls/8/reviews"), 3)
          assert.strictEqual(fake.reviews(REPO, 8).length, 1)
          assert.strictEqual(yield* reviewStatus(repositoryId, 8), "REVIEWED")
          assert.strictEqual(checksOn(fake, sha("b"))[0]?.conclusion, "success")
        })
    )

    it.effect(
      "a rate limit longer than a call waits: the delivery waits as long as GitHub asked, and the next one posts the review once",
      () =>
        Effect.gen(function* () {
          const { fake, repositoryId } = yield* setup(10, sha("d"), FIRST)
          const capture = yield* LogCapture
          fake.failNext({
            method: "POST",
            path: /\/pulls\/10\/reviews$/,
            status: 429,
            headers: { "retry-after": "2" },
            message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
          })
          const started = Date.now()

          yield* publishAndDeliver(run("run-p10", repositoryId, 10, sha("d")), { summary: "Later.", findings: [A] })

          assert.isAtLeast(Date.now() - started, 2000, "the next delivery came after GitHub's Retry-After")
          assert.deepStrictEqual(yield* deliveryState("run-p10"), { done: true, dead: false })
          assert.strictEqual(calls(fake, "POST", "/api/v3/repos/acme/shop/pulls/10/reviews"), 2)
          assert.strictEqual(fake.reviews(REPO, 10).length, 1)
          const waits = (yield* capture.records).filter(
            (record) => record.msg === "review_delivery_failed" && record.run_id === "run-p10"
          )
          assert.deepStrictEqual(
            waits.map((record) => [record.level, record.http_status, record.retry_after_ms]),
            [["warn", 429, 2000]]
          )
        })
    )

    it.effect(
      "GitHub answering a GraphQL error ends the delivery at once: GitHub's words in the failed check run and one error line, the message dead-lettered, and its replay posts nothing twice",
      () =>
        Effect.gen(function* () {
          const { fake, repositoryId } = yield* setup(9, sha("c"), FIRST)
          const capture = yield* LogCapture
          const sql = yield* SqlClient.SqlClient
          const graphqlError = "Resource not accessible by integration"
          fake.failNext({
            method: "POST",
            path: /^\/api\/graphql$/,
            status: 200,
            body: { data: null, errors: [{ type: "FORBIDDEN", path: ["repository"], message: graphqlError }] }
          })

          yield* publishAndDeliver(run("run-p9", repositoryId, 9, sha("c")), { summary: "Refused.", findings: [A] })

          assert.deepStrictEqual(yield* deliveryState("run-p9"), { done: false, dead: true })
          const [check] = checksOn(fake, sha("c"))
          assert.strictEqual(check?.conclusion, "failure")
          assert.strictEqual(check?.external_id, "bosun-review:run-p9")
          assert.strictEqual(check?.output.title, "Review failed while publishing the review: GitHub refused it")
          assert.include(check?.output.summary ?? "", `- Error: GitHub GraphQL reviewThreads answered: ${graphqlError}`)
          assert.strictEqual(yield* reviewStatus(repositoryId, 9), "FAILED")
          const failures = (yield* capture.records).filter(
            (record) => record.msg === "review_delivery_failed" && record.run_id === "run-p9"
          )
          assert.deepStrictEqual(
            failures.map((record) => ({
              level: record.level,
              step: record.step,
              provider: record.provider,
              http_status: record.http_status,
              error: record.error,
              deliveries: record.deliveries
            })),
            [
              {
                level: "error",
                step: "publish",
                provider: "github",
                http_status: 200,
                error: `GitHub GraphQL reviewThreads answered: ${graphqlError}`,
                deliveries: 1
              }
            ],
            "one line, at error, on the first delivery"
          )
          assert.strictEqual(fake.reviews(REPO, 9).length, 1, "the review itself was posted before the thread query")

          // The operator replays the dead letter once GitHub answers: the review is found, not posted again.
          const replayed = yield* (yield* Queues).deadLetters.replay("bosun-effects")
          assert.isAtLeast(replayed, 1)
          yield* eventually(deliveryState("run-p9"), (state) => state?.done === true, Duration.seconds(20))
          yield* delivered("run-p9")
          assert.strictEqual(fake.reviews(REPO, 9).length, 1)
          assert.strictEqual(calls(fake, "POST", "/api/v3/repos/acme/shop/pulls/9/reviews"), 1)
          assert.strictEqual(checksOn(fake, sha("c")).length, 1)
          assert.strictEqual(checksOn(fake, sha("c"))[0]?.conclusion, "success")
          assert.deepStrictEqual(fake.checkRunStates(checksOn(fake, sha("c"))[0]?.id ?? 0), ["failure", "success"])
          assert.strictEqual(yield* reviewStatus(repositoryId, 9), "REVIEWED")
          const rows = yield* findingRows(repositoryId, 9)
          assert.isNotNull(rows[0]?.github_thread_id, "the thread is linked on the replay")
          const [effect] = yield* sql<{ status: string }>`
            SELECT status FROM provider_effects WHERE idempotency_key = 'github.review:run-p9'`
          assert.strictEqual(effect?.status, "SUCCEEDED")
        })
    )
  })

  describe("stable findings across pushes", () => {
    it.effect(
      "a push that fixes one finding and adds one: the fixed one resolved with its thread, the new one posted, the unchanged one not re-posted",
      () =>
        Effect.gen(function* () {
          const { fake, repositoryId } = yield* setup(5, sha("6"), FIRST)
          yield* publishAndDeliver(run("run-p5a", repositoryId, 5, sha("6")), { summary: "First.", findings: [A, B] })
          assert.strictEqual(fake.reviews(REPO, 5)[0]?.comments.length, 2)

          yield* setup(5, sha("7"), SECOND)
          fake.setCompare(REPO, sha("6"), sha("7"), ["src/handler.ts"])
          yield* publishAndDeliver(run("run-p5b", repositoryId, 5, sha("7")), { summary: "Second.", findings: [B, D] })

          const reviews = fake.reviews(REPO, 5)
          assert.strictEqual(reviews.length, 2)
          assert.deepStrictEqual(
            reviews[1]?.comments.map((comment) => comment.line),
            [21],
            "only the new finding is posted"
          )
          assert.include(reviews[1]?.body ?? "", "Resolved since the last review: 1 finding.")
          const aComment = reviews[0]?.comments.find((comment) => comment.line === 3)
          const threads = fake.threads(REPO, 5)
          const aThread = threads.find((thread) => thread.commentIds[0] === aComment?.id)
          assert.isTrue(aThread?.isResolved, "the fixed finding's thread is resolved")
          assert.deepStrictEqual(threads.filter((thread) => thread.isResolved).length, 1, "no other thread is resolved")

          const rows = yield* findingRows(repositoryId, 5)
          assert.deepStrictEqual(
            rows.map((row) => ({ title: row.title, state: row.state })),
            [
              { title: B.title, state: "OPEN" },
              { title: A.title, state: "RESOLVED" },
              { title: D.title, state: "OPEN" }
            ]
          )
        })
    )

    it.effect(
      "a review that failed for good gets one failed check run on its head saying the step, the code, the provider and its HTTP status",
      () =>
        Effect.gen(function* () {
          const { fake, repositoryId } = yield* setup(7, sha("a"), FIRST)
          const type = (yield* reviewWorkflow)[REVIEW]
          const report = type?.reportFailure
          if (report === undefined) return yield* Effect.die(new Error("the review type reports no failures"))
          const failed = {
            run: run("run-p7", repositoryId, 7, sha("a")),
            error: { code: "model_api_error", message: "APIError (HTTP 429): Rate limit reached for requests" },
            step: "execute" as const,
            attempts: 3,
            model: "gpt-test",
            provider: "OPENCODE"
          }
          // finish-attempt cut off after its report runs again: still one check run.
          yield* report(failed)
          yield* report(failed)
          const checks = yield* eventually(
            Effect.sync(() => fake.checkRuns(REPO).filter((check) => check.head_sha === sha("a"))),
            (found) => found.length > 0,
            Duration.seconds(20)
          )
          // Both outbox rows are worked before the count is final.
          const sql = yield* SqlClient.SqlClient
          yield* eventually(
            sql<{
              n: number
            }>`SELECT count(*)::int AS n FROM outbox WHERE kind = 'github.check_run' AND done_at IS NULL`,
            (rows) => rows[0]?.n === 0,
            Duration.seconds(20)
          )
          assert.strictEqual(fake.checkRuns(REPO).filter((check) => check.head_sha === sha("a")).length, 1)
          const [check] = checks
          assert.strictEqual(check?.name, "Bosun review")
          assert.strictEqual(check?.status, "completed")
          assert.strictEqual(check?.conclusion, "failure")
          assert.strictEqual(check?.external_id, "bosun-review:run-p7")
          assert.strictEqual(check?.output.title, "Review failed while running the agent: model_api_error (HTTP 429)")
          const summary = check?.output.summary ?? ""
          assert.include(summary, "failed at the **execute** step, running the agent, after 3 attempts")
          assert.include(summary, "- Error: `model_api_error` — APIError (HTTP 429): Rate limit reached for requests")
          assert.include(summary, "- Agent: OPENCODE (model gpt-test)")
          assert.include(summary, "- Provider HTTP status: 429")
          assert.include(summary, "comment `@bosun review` to retry")
          const [effect] = yield* sql<{ status: string; attempts: number }>`
            SELECT status, attempts FROM provider_effects WHERE idempotency_key = 'github.check_run:failed:run-p7'`
          assert.deepStrictEqual(effect, { status: "SUCCEEDED", attempts: 1 })
          assert.strictEqual(yield* reviewStatus(repositoryId, 7), "FAILED")
        })
    )

    it.effect("a finding a person answered stays closed: a later review that reports it again does not post it", () =>
      Effect.gen(function* () {
        const { fake, repositoryId } = yield* setup(6, sha("8"), FIRST)
        yield* publishAndDeliver(run("run-p6a", repositoryId, 6, sha("8")), { summary: "First.", findings: [E, B] })
        const posted = fake.reviews(REPO, 6)[0]?.comments.find((comment) => comment.line === 7)
        assert.isDefined(posted)
        const dismissed = yield* (yield* ReviewFindingsRepo).dismissByComment(
          ORG,
          posted?.id ?? 0,
          "dev replied: not an issue, the index is validated upstream"
        )
        assert.isTrue(dismissed)

        yield* setup(6, sha("9"), SECOND)
        fake.setCompare(REPO, sha("8"), sha("9"), ["src/handler.ts"])
        yield* publishAndDeliver(run("run-p6b", repositoryId, 6, sha("9")), { summary: "Second.", findings: [B, E] })

        assert.deepStrictEqual(
          fake.reviews(REPO, 6)[1]?.comments ?? [],
          [],
          "neither the dismissed nor the posted one again"
        )
        const rows = yield* findingRows(repositoryId, 6)
        assert.deepStrictEqual(
          rows.map((row) => ({ title: row.title, state: row.state })),
          [
            { title: B.title, state: "DISMISSED" },
            { title: E.title, state: "OPEN" }
          ]
        )
      })
    )
  })
})

/**
 * How GitHub `pull_request` deliveries queue reviews through the real webhook route, the
 * inbox consumer, review_policy and the Scheduler, with a fake GitHub and an App holding a real
 * RSA key: which actions queue one `review` run and job (keyed by the pull request as session and
 * batch), which are ignored and why, the max_changed_files notice posted once per head, and a
 * queued review superseded by a newer push. The Scheduler claims what is queued and its attempts
 * fail without an agent; only the columns a claim does not change are asserted on claimed runs.
 */
import { DEFAULT_CONFIGURATION, type ReviewPolicy } from "@bosun/domain"
import { eventually, FakeGithub } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../../../src/features/agentConnections/ConfigurationRepo.ts"
import { commentMarker } from "../../../src/outbound/github/GithubEffects.ts"
import { processed } from "../../support/GithubDeliveries.ts"
import { signIn } from "../../support/Identity.ts"
import { deliveries, installApp, layerServerWithFakeGithub, type Tenant } from "../../support/InstalledApp.ts"
import { request } from "../../support/TestServer.ts"

const SLUG = "bosun-review"
const HEAD = "a".repeat(40)
const BASE = "b".repeat(40)

const Server = layerServerWithFakeGithub

const tenant = (org: string, n: number): Tenant => ({
  org,
  account: { id: 70_000 + n, login: `acme-${n}` },
  installationId: 80_000 + n,
  githubRepositoryId: 90_000 + n,
  fullName: `acme-${n}/api`
})

const { send, sendNew } = deliveries("review-queueing")

/** The tenant's organization with the App installed on its repository; answers the repository's id. */
const setUp = (t: Tenant) => installApp(t, { slug: SLUG, clientId: "Iv1.review-queueing" }, sendNew)

interface PullRequestDelivery {
  readonly action: string
  readonly number: number
  readonly head?: string
  readonly base?: string
  readonly draft?: boolean
  readonly author?: string
  readonly changedFiles?: number
  readonly state?: "open" | "closed"
  readonly merged?: boolean
}

/** A `pull_request` webhook body as GitHub documents it. */
const pullRequest = (t: Tenant, pr: PullRequestDelivery) => {
  const author = pr.author ?? "dev-anna"
  const owner = { id: t.account.id, login: t.account.login, type: "Organization" }
  return JSON.stringify({
    action: pr.action,
    number: pr.number,
    pull_request: {
      id: 5_000_000 + pr.number,
      number: pr.number,
      title: `Change ${pr.number}`,
      state: pr.state ?? "open",
      draft: pr.draft ?? false,
      merged: pr.merged ?? false,
      changed_files: pr.changedFiles ?? 3,
      additions: 12,
      deletions: 4,
      user: { id: 4_000, login: author, type: author.endsWith("[bot]") ? "Bot" : "User" },
      head: { sha: pr.head ?? HEAD, ref: `feature-${pr.number}`, repo: { id: t.githubRepositoryId } },
      base: { sha: pr.base ?? BASE, ref: "main", repo: { id: t.githubRepositoryId } }
    },
    repository: {
      id: t.githubRepositoryId,
      name: "api",
      full_name: t.fullName,
      private: true,
      owner,
      default_branch: "main"
    },
    organization: { id: t.account.id, login: t.account.login },
    installation: { id: t.installationId },
    sender: { id: 4_000, login: author }
  })
}

interface ReviewRow {
  readonly run_id: string
  readonly workflow_type: string
  readonly repository_id: string | null
  readonly pull_request_number: number | null
  readonly head_sha: string | null
  readonly base_sha: string | null
  readonly input_snapshot: unknown
  readonly run_status: string
  readonly error_code: string | null
  readonly lane: string
  readonly session_key: string | null
  readonly batch_key: string | null
  readonly job_head_sha: string | null
  readonly job_status: string
  readonly attempt: number
}

/** The organization's runs with their jobs, oldest first; a run without a job fails the test. */
const runsOf = (org: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<ReviewRow>`
      SELECT r.id AS run_id, r.workflow_type, r.repository_id, r.pull_request_number, r.head_sha, r.base_sha,
             r.input_snapshot, r.status AS run_status, r.error_code, j.lane, j.session_key, j.batch_key,
             j.head_sha AS job_head_sha, j.status AS job_status, j.attempt
      FROM workflow_runs r JOIN jobs j ON j.run_id = r.id AND j.organization_id = r.organization_id
      WHERE r.organization_id = ${org}
      ORDER BY j.created_at, j.id`
    const [runs] = yield* sql<{
      n: number
    }>`SELECT count(*)::int AS n FROM workflow_runs WHERE organization_id = ${org}`
    assert.strictEqual(runs?.n, rows.length, "every run has its job")
    return rows
  })

/** The columns of a queued review that hold whatever the Scheduler did with it since. */
const reviewColumns = (row: ReviewRow | undefined) =>
  row === undefined
    ? undefined
    : {
        workflow_type: row.workflow_type,
        repository_id: row.repository_id,
        pull_request_number: row.pull_request_number,
        head_sha: row.head_sha,
        base_sha: row.base_sha,
        input_snapshot: row.input_snapshot,
        session_key: row.session_key,
        batch_key: row.batch_key,
        job_head_sha: row.job_head_sha
      }

const expectedReview = (
  repositoryId: string,
  pr: { number: number; head?: string; trigger: string; deliveryId: string }
) => ({
  workflow_type: "review",
  repository_id: repositoryId,
  pull_request_number: pr.number,
  head_sha: pr.head ?? HEAD,
  base_sha: BASE,
  input_snapshot: { trigger: pr.trigger, delivery_id: pr.deliveryId },
  session_key: `review:${repositoryId}:${pr.number}`,
  batch_key: `review:${repositoryId}:${pr.number}`,
  job_head_sha: pr.head ?? HEAD
})

/** The repository's own review_policy through `PUT .../configuration`, as an ADMIN sets it. */
const putReviewPolicy = (t: Tenant, repositoryId: string, policy: Partial<ReviewPolicy>) =>
  Effect.gen(function* () {
    const admin = yield* signIn(`admin-${t.org}`, [[t.org, "ADMIN"]])
    const { guidance: _guidance, ...defaults } = DEFAULT_CONFIGURATION.review_policy.review_policy
    const response = yield* request(`/api/v1/organizations/${t.org}/repositories/${repositoryId}/configuration`, {
      method: "PUT",
      headers: { cookie: admin.cookie, "content-type": "application/json" },
      body: JSON.stringify({
        agent_provider: DEFAULT_CONFIGURATION.agent.agent_provider,
        automatic_pr_description: DEFAULT_CONFIGURATION.agent.automatic_pr_description,
        issue_pull_request_mode: DEFAULT_CONFIGURATION.agent.issue_pull_request_mode,
        review_policy: { ...defaults, ...policy },
        sandbox_config: DEFAULT_CONFIGURATION.sandbox.sandbox_config,
        sandbox_provider: DEFAULT_CONFIGURATION.sandbox.sandbox_provider
      })
    })
    assert.strictEqual(response.status, 204, response.text)
  })

layer(Server, { excludeTestServices: true })("review queueing from pull_request deliveries", (it) => {
  it.effect(
    "an opened pull request queues one review run and job at its head and base, keyed by the pull request",
    () =>
      Effect.gen(function* () {
        const t = tenant("rq-opened", 1)
        const repositoryId = yield* setUp(t)

        const opened = yield* sendNew("pull_request", pullRequest(t, { action: "opened", number: 11 }))

        assert.isNull(yield* processed(opened))
        const runs = yield* runsOf(t.org)
        assert.strictEqual(runs.length, 1)
        assert.deepStrictEqual(
          reviewColumns(runs[0]),
          expectedReview(repositoryId, { number: 11, trigger: "opened", deliveryId: opened })
        )
        const sql = yield* SqlClient.SqlClient
        const [pr] = yield* sql<{ state: string; author_login: string | null; title: string }>`
          SELECT state, author_login, title FROM pull_requests
          WHERE organization_id = ${t.org} AND repository_id = ${repositoryId} AND number = 11`
        assert.deepStrictEqual(pr, { state: "OPEN", author_login: "dev-anna", title: "Change 11" })
      }),
    40_000
  )

  it.effect("the same delivery sent twice, before and after it was processed, queues one review", () =>
    Effect.gen(function* () {
      const t = tenant("rq-twice", 2)
      const repositoryId = yield* setUp(t)
      const body = pullRequest(t, { action: "opened", number: 21 })

      const first = yield* sendNew("pull_request", body)
      const again = yield* send("pull_request", body, first)
      assert.deepStrictEqual(again.answer, { accepted: true, duplicate: true })
      assert.isNull(yield* processed(first))
      const late = yield* send("pull_request", body, first)
      assert.deepStrictEqual(late.answer, { accepted: true, duplicate: true })

      const runs = yield* runsOf(t.org)
      assert.strictEqual(runs.length, 1)
      assert.deepStrictEqual(
        reviewColumns(runs[0]),
        expectedReview(repositoryId, { number: 21, trigger: "opened", deliveryId: first })
      )
    })
  )

  it.effect("a draft opened with review_drafts off queues nothing; ready_for_review then queues one review", () =>
    Effect.gen(function* () {
      const t = tenant("rq-draft", 3)
      const repositoryId = yield* setUp(t)

      const draft = yield* sendNew("pull_request", pullRequest(t, { action: "opened", number: 31, draft: true }))
      const reason = yield* processed(draft)
      assert.isTrue(reason?.startsWith("no review:"), String(reason))
      assert.strictEqual(reason, "no review: the pull request is a draft and review_drafts is off")
      assert.deepStrictEqual(yield* runsOf(t.org), [])

      const ready = yield* sendNew("pull_request", pullRequest(t, { action: "ready_for_review", number: 31 }))
      assert.isNull(yield* processed(ready))
      const runs = yield* runsOf(t.org)
      assert.strictEqual(runs.length, 1)
      assert.deepStrictEqual(
        reviewColumns(runs[0]),
        expectedReview(repositoryId, { number: 31, trigger: "ready_for_review", deliveryId: ready })
      )
    })
  )

  it.effect(
    "an author in the repository's excluded_authors (any case) queues nothing; another author's pull request does",
    () =>
      Effect.gen(function* () {
        const t = tenant("rq-excluded", 4)
        const repositoryId = yield* setUp(t)
        yield* putReviewPolicy(t, repositoryId, { excluded_authors: ["Renovate[bot]"] })

        const bot = yield* sendNew(
          "pull_request",
          pullRequest(t, { action: "opened", number: 41, author: "renovate[bot]" })
        )
        assert.strictEqual(yield* processed(bot), "no review: the author renovate[bot] is in excluded_authors")
        assert.deepStrictEqual(yield* runsOf(t.org), [])

        const human = yield* sendNew("pull_request", pullRequest(t, { action: "opened", number: 42 }))
        assert.isNull(yield* processed(human))
        const runs = yield* runsOf(t.org)
        assert.deepStrictEqual(runs.map(reviewColumns), [
          expectedReview(repositoryId, { number: 42, trigger: "opened", deliveryId: human })
        ])
      })
  )

  it.effect("a paused repository (enabled=false) queues nothing for an opened pull request", () =>
    Effect.gen(function* () {
      const t = tenant("rq-paused", 5)
      const repositoryId = yield* setUp(t)
      const admin = yield* signIn(`admin-${t.org}`, [[t.org, "ADMIN"]])
      const paused = yield* request(`/api/v1/organizations/${t.org}/repositories/${repositoryId}`, {
        method: "PATCH",
        headers: { cookie: admin.cookie, "content-type": "application/json" },
        body: JSON.stringify({ enabled: false })
      })
      assert.strictEqual(paused.status, 200, paused.text)
      assert.strictEqual((paused.json as { data: { enabled: boolean } }).data.enabled, false)

      const opened = yield* sendNew("pull_request", pullRequest(t, { action: "opened", number: 51 }))

      assert.strictEqual(yield* processed(opened), "no review: reviews are paused for this repository")
      assert.deepStrictEqual(yield* runsOf(t.org), [])
    })
  )

  it.effect("a push (synchronize) with review_on_push off queues nothing, and neither does closing", () =>
    Effect.gen(function* () {
      const t = tenant("rq-push-off", 6)
      const repositoryId = yield* setUp(t)
      yield* putReviewPolicy(t, repositoryId, { review_on_push: false })

      const pushed = yield* sendNew(
        "pull_request",
        pullRequest(t, { action: "synchronize", number: 61, head: "e".repeat(40) })
      )
      assert.strictEqual(yield* processed(pushed), "no review: review_on_push is off")
      const closed = yield* sendNew(
        "pull_request",
        pullRequest(t, { action: "closed", number: 61, head: "e".repeat(40), state: "closed" })
      )
      // A closed pull request is applied (its row follows it), not ignored, and not reviewed.
      assert.isNull(yield* processed(closed))

      assert.deepStrictEqual(yield* runsOf(t.org), [])
      const sql = yield* SqlClient.SqlClient
      const [pr] = yield* sql<{ state: string }>`
        SELECT state FROM pull_requests WHERE organization_id = ${t.org} AND repository_id = ${repositoryId}
          AND number = 61`
      assert.deepStrictEqual(pr, { state: "CLOSED" })
    })
  )

  it.effect(
    "a pull request over max_changed_files gets one notice comment per head instead of a review, however often it comes",
    () =>
      Effect.gen(function* () {
        const t = tenant("rq-too-large", 7)
        const repositoryId = yield* setUp(t)
        const fake = yield* FakeGithub
        const sql = yield* SqlClient.SqlClient
        fake.setPull(t.fullName, {
          number: 71,
          head: { sha: HEAD, ref: "feature-71" },
          base: { sha: BASE, ref: "main" },
          title: "Change 71",
          user: { login: "dev-anna", type: "User" }
        })
        yield* (yield* ConfigurationRepo).setOrganizationGroup(
          t.org,
          "review_policy",
          { review_policy: { max_changed_files: 2 } },
          null
        )
        // GitHub fails the first post, which Octokit does not repeat (GitHub may have made it): the
        // effect's message is delivered again, looks for the comment, and still posts once.
        const commentsPath = new RegExp(`^/api/v3/repos/${t.fullName}/issues/71/comments$`)
        fake.failNext({ method: "POST", path: commentsPath, status: 502 })

        const opened = yield* sendNew("pull_request", pullRequest(t, { action: "opened", number: 71, changedFiles: 5 }))

        assert.strictEqual(
          yield* processed(opened),
          "no review: 5 changed files are over max_changed_files (2); a notice was posted"
        )
        const key = `github.pr_comment:too_many_files:${repositoryId}:71:${HEAD}`
        const [comment, ...others] = yield* eventually(
          Effect.sync(() => fake.issueComments(t.fullName, 71)),
          (comments) => comments.length > 0
        )
        assert.deepStrictEqual(others, [])
        assert.strictEqual(
          comment?.body,
          "Bosun did not review this pull request: it changes 5 files, over this repository's limit of 2 " +
            "(review_policy.max_changed_files). Split it, or raise the limit and push again." +
            `\n\n${commentMarker(key)}`
        )
        assert.include(comment?.body ?? "", "<!-- bosun:effect:")
        assert.strictEqual(comment?.user.login, `${SLUG}[bot]`)

        // Another delivery for the same head: the same idempotency key, no second comment.
        const again = yield* sendNew(
          "pull_request",
          pullRequest(t, { action: "synchronize", number: 71, changedFiles: 5 })
        )
        assert.strictEqual(
          yield* processed(again),
          "no review: 5 changed files are over max_changed_files (2); a notice was posted"
        )
        const effects = yield* eventually(
          sql<{ done: boolean }>`
            SELECT done_at IS NOT NULL AS done FROM outbox
            WHERE queue = 'bosun-effects' AND kind = 'github.pr_comment' AND payload->>'organization_id' = ${t.org}`,
          (rows) => rows.length === 2 && rows.every((row) => row.done)
        )
        assert.strictEqual(effects.length, 2)
        assert.deepStrictEqual(
          fake.issueComments(t.fullName, 71).map((posted) => posted.id),
          [comment?.id]
        )
        const posts = fake.requests.filter((r) => r.method === "POST" && commentsPath.test(r.path))
        assert.strictEqual(posts.length, 2, "the failed post and the one that succeeded")
        const [effect, ...moreEffects] = yield* sql<{
          kind: string
          run_id: string | null
          status: string
          attempts: number
          result: unknown
        }>`
          SELECT kind, run_id, status, attempts, result FROM provider_effects WHERE organization_id = ${t.org}`
        assert.deepStrictEqual(moreEffects, [])
        assert.deepStrictEqual(effect, {
          kind: "github.pr_comment",
          run_id: null,
          status: "SUCCEEDED",
          attempts: 2,
          result: { comment_id: comment?.id }
        })
        assert.deepStrictEqual(yield* runsOf(t.org), [])

        // At the limit exactly, the pull request is reviewed.
        const atLimit = yield* sendNew(
          "pull_request",
          pullRequest(t, { action: "opened", number: 72, changedFiles: 2 })
        )
        assert.isNull(yield* processed(atLimit))
        assert.deepStrictEqual((yield* runsOf(t.org)).map(reviewColumns), [
          expectedReview(repositoryId, { number: 72, trigger: "opened", deliveryId: atLimit })
        ])
        assert.deepStrictEqual(fake.issueComments(t.fullName, 72), [])
      }),
    40_000
  )

  it.effect(
    "two deliveries for the same over-limit head arriving together still post one notice",
    () =>
      Effect.gen(function* () {
        const t = tenant("rq-notice-race", 10)
        yield* setUp(t)
        const fake = yield* FakeGithub
        const sql = yield* SqlClient.SqlClient
        yield* (yield* ConfigurationRepo).setOrganizationGroup(
          t.org,
          "review_policy",
          { review_policy: { max_changed_files: 2 } },
          null
        )
        // Twenty pull requests, each with two deliveries at once (GitHub sends an `opened` and a
        // `synchronize` close together, or a delivery is retried): both notices share one key.
        const numbers = Array.from({ length: 20 }, (_, i) => 100 + i)
        for (const number of numbers) {
          fake.setPull(t.fullName, {
            number,
            head: { sha: HEAD, ref: `feature-${number}` },
            base: { sha: BASE, ref: "main" }
          })
        }
        yield* Effect.forEach(
          numbers,
          (number) =>
            Effect.all(
              [
                sendNew("pull_request", pullRequest(t, { action: "opened", number, changedFiles: 5 })),
                sendNew("pull_request", pullRequest(t, { action: "synchronize", number, changedFiles: 5 }))
              ],
              { concurrency: 2 }
            ),
          { concurrency: "unbounded" }
        )
        yield* eventually(
          sql<{ done: boolean }>`
          SELECT done_at IS NOT NULL AS done FROM outbox
          WHERE queue = 'bosun-effects' AND kind = 'github.pr_comment' AND payload->>'organization_id' = ${t.org}`,
          (rows) => rows.length === 2 * numbers.length && rows.every((row) => row.done),
          Duration.seconds(30)
        )
        assert.deepStrictEqual(yield* runsOf(t.org), [])
        const [effects] = yield* sql<{ n: number; succeeded: number }>`
        SELECT count(*)::int AS n, count(*) FILTER (WHERE status = 'SUCCEEDED')::int AS succeeded
        FROM provider_effects WHERE organization_id = ${t.org}`
        assert.deepStrictEqual(effects, { n: numbers.length, succeeded: numbers.length })
        // Two outbox rows with one idempotency key are handled at once by the bosun-effects consumer
        // (concurrency 8): the effect's row lock (GithubEffects) lets one of them post.
        const counts = numbers.map((number) => [number, fake.issueComments(t.fullName, number).length] as const)
        assert.deepStrictEqual(
          counts.filter(([, comments]) => comments !== 1),
          [],
          "notices whose two deliveries were handled at once are posted once ([pull request, comments])"
        )
      }),
    60_000
  )

  it.effect(
    "two pushes while a review of the pull request runs: the older queued review is superseded, only the newer is claimed",
    () =>
      Effect.gen(function* () {
        const t = tenant("rq-superseded", 8)
        const repositoryId = yield* setUp(t)
        const sql = yield* SqlClient.SqlClient
        const key = `review:${repositoryId}:81`
        // A review of the pull request is running (its workflow started, its heartbeat fresh for the
        // 30 s lease): the session holds every later review of it in the queue, so that the
        // Scheduler cannot claim the first push's review before the second push arrives.
        const [running] = yield* sql<{ run_id: string }>`
          WITH run AS (
            INSERT INTO workflow_runs (organization_id, repository_id, workflow_type, status, head_sha, base_sha,
                                       pull_request_number, started_at)
            VALUES (${t.org}, ${repositoryId}, 'review', 'RUNNING', ${HEAD}, ${BASE}, 81, now())
            RETURNING id
          )
          INSERT INTO jobs (run_id, organization_id, lane, session_key, batch_key, head_sha, status, attempt,
                            workflow_started)
          SELECT run.id, ${t.org}, 'AGENT', ${key}, ${key}, ${HEAD}, 'RUNNING', 1, true FROM run
          RETURNING run_id`
        assert.isDefined(running)
        const runningId = running?.run_id ?? ""
        yield* sql`
          INSERT INTO workflow_attempts (id, run_id, attempt, status, started_at, heartbeat_at)
          VALUES (${`${runningId}:1`}, ${runningId}, 1, 'RUNNING', now(), now())`
        const older = "1".repeat(40)
        const newer = "2".repeat(40)

        const first = yield* sendNew("pull_request", pullRequest(t, { action: "synchronize", number: 81, head: older }))
        assert.isNull(yield* processed(first))
        const second = yield* sendNew(
          "pull_request",
          pullRequest(t, { action: "synchronize", number: 81, head: newer })
        )
        assert.isNull(yield* processed(second))

        // The wake-up after the second push runs a pass: the batch gate supersedes the older one.
        const gated = yield* eventually(runsOf(t.org), (rows) => rows[1]?.job_status === "SUPERSEDED")
        assert.deepStrictEqual(
          gated.map((row) => [row.run_id === runningId, row.job_head_sha, row.job_status, row.attempt]),
          [
            [true, HEAD, "RUNNING", 1],
            [false, older, "SUPERSEDED", 0],
            [false, newer, "QUEUED", 0]
          ]
        )
        assert.deepStrictEqual([gated[1]?.run_status, gated[1]?.error_code], ["CANCELLED", "superseded"])
        assert.deepStrictEqual(gated.slice(1).map(reviewColumns), [
          expectedReview(repositoryId, { number: 81, head: older, trigger: "synchronize", deliveryId: first }),
          expectedReview(repositoryId, { number: 81, head: newer, trigger: "synchronize", deliveryId: second })
        ])

        // The running review ends: the newer review is claimed, the superseded one never is.
        yield* sql`
          UPDATE workflow_attempts SET status = 'SUCCEEDED', finished_at = now()
          WHERE id = ${`${runningId}:1`}`
        const claimed = yield* eventually(runsOf(t.org), (rows) => (rows[2]?.attempt ?? 0) >= 1)
        assert.deepStrictEqual(
          claimed.map((row) => [row.job_head_sha, row.attempt >= 1]),
          [
            [HEAD, true],
            [older, false],
            [newer, true]
          ]
        )
        assert.strictEqual(claimed[1]?.attempt, 0)
        assert.deepStrictEqual([claimed[0]?.job_status, claimed[1]?.job_status], ["SUCCEEDED", "SUPERSEDED"])
      }),
    40_000
  )

  it.effect("a review is queued on the REVIEW lane, so that reviews are not stuck behind agent work", () =>
    Effect.gen(function* () {
      const t = tenant("rq-lane", 9)
      yield* setUp(t)

      const opened = yield* sendNew("pull_request", pullRequest(t, { action: "opened", number: 91 }))

      assert.isNull(yield* processed(opened))
      const runs = yield* runsOf(t.org)
      assert.strictEqual(runs.length, 1)
      // Reviews have their own lane's slots (BOSUN_LANE_REVIEW_CONCURRENCY), not the agent lane's.
      assert.strictEqual(runs[0]?.lane, "REVIEW", "reviews are not stuck behind agent work")
    })
  )
})

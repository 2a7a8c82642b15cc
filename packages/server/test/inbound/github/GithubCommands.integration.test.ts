/**
 * `@<app slug>` commands in pull-request comments, pull requests closing, and pushes to the default
 * branch, through the real webhook route, the inbox consumer, the Scheduler and a fake
 * GitHub with an App holding a real RSA key: who may give `review`, `pause` and `resume`, what each
 * does to jobs, the repository and the pull request's review status, the one comment each delivery
 * posts, what is ignored and why, and the default branch's recorded head.
 *
 * A review that is to stay QUEUED is held behind a running review of the same pull request (its
 * session): otherwise the Scheduler claims it and its attempt fails without an agent.
 */
import { DEFAULT_CONFIGURATION, type ReviewPolicy } from "@bosun/domain"
import { eventually, FakeGithub } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { commentMarker } from "../../../src/outbound/github/GithubEffects.ts"
import { processed } from "../../support/GithubDeliveries.ts"
import { signIn } from "../../support/Identity.ts"
import { deliveries, installApp, layerServerWithFakeGithub, type Tenant } from "../../support/InstalledApp.ts"
import { request } from "../../support/TestServer.ts"

const SLUG = "bosun-review"
/** The head a pull request's events carried; GitHub's current head (`fake.setPull`) is HEAD_NOW. */
const HEAD = "a".repeat(40)
const HEAD_NOW = "c".repeat(40)
const BASE = "b".repeat(40)

const Server = layerServerWithFakeGithub

const tenant = (org: string, n: number): Tenant => ({
  org,
  account: { id: 170_000 + n, login: `cmd-${n}` },
  installationId: 180_000 + n,
  githubRepositoryId: 190_000 + n,
  fullName: `cmd-${n}/api`
})

const { send, sendNew } = deliveries("github-commands")

/** The tenant's organization with the App installed on its repository; answers the repository's id. */
const setUp = (t: Tenant) => installApp(t, { slug: SLUG, clientId: "Iv1.github-commands" }, sendNew)

/** Pull request `number` as GitHub has it now: open, at HEAD_NOW. */
const openOnGithub = (t: Tenant, number: number) =>
  Effect.map(FakeGithub, (fake) =>
    fake.setPull(t.fullName, {
      number,
      head: { sha: HEAD_NOW, ref: `feature-${number}` },
      base: { sha: BASE, ref: "main" },
      title: `Change ${number}`,
      user: { login: "dev-anna", type: "User" }
    })
  )

const eventRepository = (t: Tenant) => ({
  id: t.githubRepositoryId,
  name: "api",
  full_name: t.fullName,
  private: true,
  owner: { id: t.account.id, login: t.account.login, type: "Organization" },
  default_branch: "main"
})

interface CommentDelivery {
  readonly number: number
  readonly body: string
  readonly association?: string
  readonly login?: string
  readonly bot?: boolean
  /** A comment on a plain issue (no `issue.pull_request`). */
  readonly onIssue?: boolean
}

let commentIds = 0
/** An `issue_comment` created webhook body as GitHub documents it. */
const issueComment = (t: Tenant, c: CommentDelivery) => {
  const login = c.login ?? "dev-bob"
  const user = { id: 6_000, login, type: c.bot === true ? "Bot" : "User" }
  return JSON.stringify({
    action: "created",
    issue: {
      id: 3_000_000 + c.number,
      number: c.number,
      title: `Change ${c.number}`,
      state: "open",
      user: { id: 4_000, login: "dev-anna", type: "User" },
      author_association: "MEMBER",
      ...(c.onIssue === true
        ? {}
        : {
            pull_request: {
              url: `https://api.github.com/repos/${t.fullName}/pulls/${c.number}`,
              html_url: `https://github.com/${t.fullName}/pull/${c.number}`,
              merged_at: null
            }
          })
    },
    comment: {
      id: 8_000_000 + commentIds++,
      body: c.body,
      user,
      author_association: c.association ?? "MEMBER",
      created_at: "2026-03-01T10:00:00Z"
    },
    repository: eventRepository(t),
    organization: { id: t.account.id, login: t.account.login },
    installation: { id: t.installationId },
    sender: user
  })
}

/** A `pull_request` webhook body. */
const pullRequest = (
  t: Tenant,
  pr: { action: string; number: number; state?: "open" | "closed"; merged?: boolean; draft?: boolean }
) =>
  JSON.stringify({
    action: pr.action,
    number: pr.number,
    pull_request: {
      id: 5_000_000 + pr.number,
      number: pr.number,
      title: `Change ${pr.number}`,
      state: pr.state ?? "open",
      draft: pr.draft ?? false,
      merged: pr.merged ?? false,
      changed_files: 3,
      user: { id: 4_000, login: "dev-anna", type: "User" },
      head: { sha: HEAD, ref: `feature-${pr.number}` },
      base: { sha: BASE, ref: "main" }
    },
    repository: eventRepository(t),
    organization: { id: t.account.id, login: t.account.login },
    installation: { id: t.installationId },
    sender: { id: 4_000, login: "dev-anna" }
  })

/** A `push` webhook body; `pushedAt` is GitHub's epoch seconds. */
const push = (
  t: Tenant,
  p: { ref: string; after: string; deleted?: boolean; pushedAt?: number; githubRepositoryId?: number; name?: string }
) =>
  JSON.stringify({
    ref: p.ref,
    before: "0".repeat(40),
    after: p.after,
    created: false,
    deleted: p.deleted ?? false,
    forced: false,
    base_ref: null,
    compare: `https://github.com/${t.fullName}/compare/0000000...${p.after.slice(0, 7)}`,
    commits: [],
    head_commit: null,
    pusher: { name: "dev-anna", email: "anna@example.com" },
    repository: {
      ...eventRepository(t),
      id: p.githubRepositoryId ?? t.githubRepositoryId,
      name: p.name ?? "api",
      full_name: `${t.account.login}/${p.name ?? "api"}`,
      owner: { name: t.account.login, email: null, login: t.account.login, id: t.account.id },
      master_branch: "main",
      pushed_at: p.pushedAt ?? 1_772_000_000
    },
    organization: { id: t.account.id, login: t.account.login },
    installation: { id: t.installationId },
    sender: { id: 4_000, login: "dev-anna" }
  })

interface JobRow {
  readonly run_id: string
  readonly workflow_type: string
  readonly pull_request_number: number | null
  readonly head_sha: string | null
  readonly base_sha: string | null
  readonly input_snapshot: unknown
  readonly run_status: string
  readonly error_code: string | null
  readonly lane: string
  readonly session_key: string | null
  readonly batch_key: string | null
  readonly job_status: string
  readonly cancel_requested: boolean
}

/** The organization's runs with their jobs, oldest first. */
const jobsOf = (org: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<JobRow>`
      SELECT r.id AS run_id, r.workflow_type, r.pull_request_number, r.head_sha, r.base_sha, r.input_snapshot,
             r.status AS run_status, r.error_code, j.lane, j.session_key, j.batch_key, j.status AS job_status,
             j.cancel_requested_at IS NOT NULL AS cancel_requested
      FROM workflow_runs r JOIN jobs j ON j.run_id = r.id AND j.organization_id = r.organization_id
      WHERE r.organization_id = ${org}
      ORDER BY j.created_at, j.id`
  })

/**
 * A review of the pull request running (its attempt's heartbeat fresh for the 30 s lease): the
 * session holds every later review of it QUEUED. Answers the running run's id.
 */
const holdReviews = (t: Tenant, repositoryId: string, number: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const key = `review:${repositoryId}:${number}`
    const [running] = yield* sql<{ run_id: string }>`
      WITH run AS (
        INSERT INTO workflow_runs (organization_id, repository_id, workflow_type, status, head_sha, base_sha,
                                   pull_request_number, started_at)
        VALUES (${t.org}, ${repositoryId}, 'review', 'RUNNING', ${BASE}, ${BASE}, ${number}, now())
        RETURNING id
      )
      INSERT INTO jobs (run_id, organization_id, lane, session_key, batch_key, head_sha, status, attempt,
                        workflow_started)
      SELECT run.id, ${t.org}, 'REVIEW', ${key}, ${key}, ${BASE}, 'RUNNING', 1, true FROM run
      RETURNING run_id`
    const runId = running?.run_id ?? ""
    yield* sql`
      INSERT INTO workflow_attempts (id, run_id, attempt, status, started_at, heartbeat_at)
      VALUES (${`${runId}:1`}, ${runId}, 1, 'RUNNING', now(), now())`
    return runId
  })

const pullRequestRow = (t: Tenant, repositoryId: string, number: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ state: string; review_status: string; title: string }>`
      SELECT state, review_status, title FROM pull_requests
      WHERE organization_id = ${t.org} AND repository_id = ${repositoryId} AND number = ${number}`
    return row
  })

const repositoryRow = (t: Tenant, repositoryId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{
      enabled: boolean
      default_branch: string
      default_branch_sha: string | null
      default_branch_pushed_at: Date | null
    }>`
      SELECT enabled, default_branch, default_branch_sha, default_branch_pushed_at FROM repositories
      WHERE organization_id = ${t.org} AND id = ${repositoryId}`
    return row
  })

/** The `github.pr_comment` effects the organization's deliveries wrote, oldest first. */
const commentEffects = (t: Tenant) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ number: number; idempotency_key: string; done: boolean }>`
      SELECT (payload->>'number')::int AS number, payload->>'idempotency_key' AS idempotency_key,
             done_at IS NOT NULL AS done
      FROM outbox
      WHERE queue = 'bosun-effects' AND kind = 'github.pr_comment' AND payload->>'organization_id' = ${t.org}
      ORDER BY id`
  })

/** The comments on the pull request once `count` are posted, each body without its idempotency marker. */
const postedComments = (t: Tenant, number: number, count: number) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    const comments = yield* eventually(
      Effect.sync(() => fake.issueComments(t.fullName, number)),
      (all) => all.length >= count
    )
    return comments.map((comment) => ({ login: comment.user.login, body: comment.body }))
  })

const commandKey = (deliveryId: string) => `github.pr_comment:command:${deliveryId}`

const withMarker = (body: string, deliveryId: string) => `${body}\n\n${commentMarker(commandKey(deliveryId))}`

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

const PAUSED_NOTICE =
  "Bosun's reviews are paused for this repository, so this pull request was not reviewed. Comment `@bosun-review resume` to resume them."

layer(Server, { excludeTestServices: true })(
  "@slug commands, closing pull requests and default-branch pushes",
  (it) => {
    it.effect(
      "`@slug review` by a member queues one review at the head GitHub has now, even with review_on_* off, and posts nothing",
      () =>
        Effect.gen(function* () {
          const t = tenant("cmd-review", 1)
          const repositoryId = yield* setUp(t)
          yield* putReviewPolicy(t, repositoryId, { review_on_push: false, review_on_open: false })
          yield* openOnGithub(t, 11)
          const running = yield* holdReviews(t, repositoryId, 11)

          const asked = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 11, body: "Looks better now.\n\n@Bosun-Review REVIEW please", login: "dev-bob" })
          )

          assert.isNull(yield* processed(asked))
          const key = `review:${repositoryId}:11`
          const jobs = yield* jobsOf(t.org)
          assert.deepStrictEqual(
            jobs.filter((job) => job.run_id !== running).map(({ run_id: _, ...job }) => job),
            [
              {
                workflow_type: "review",
                pull_request_number: 11,
                head_sha: HEAD_NOW,
                base_sha: BASE,
                input_snapshot: { trigger: "command", delivery_id: asked, requested_by: "dev-bob" },
                run_status: "QUEUED",
                error_code: null,
                lane: "REVIEW",
                session_key: key,
                batch_key: key,
                job_status: "QUEUED",
                cancel_requested: false
              }
            ]
          )
          assert.deepStrictEqual(yield* pullRequestRow(t, repositoryId, 11), {
            state: "OPEN",
            review_status: "QUEUED",
            title: "Change 11"
          })
          assert.deepStrictEqual(yield* commentEffects(t), [])
        }),
      40_000
    )

    it.effect(
      "a command from someone without write access (CONTRIBUTOR, NONE) is refused in a comment and changes nothing",
      () =>
        Effect.gen(function* () {
          const t = tenant("cmd-refused", 2)
          const repositoryId = yield* setUp(t)
          yield* openOnGithub(t, 21)

          const contributor = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 21, body: "@bosun-review review", association: "CONTRIBUTOR", login: "drive-by" })
          )
          assert.strictEqual(
            yield* processed(contributor),
            "drive-by (CONTRIBUTOR) may not give @bosun-review review; a refusal was posted"
          )
          const stranger = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 21, body: "@bosun-review pause", association: "NONE", login: "stranger" })
          )
          assert.strictEqual(
            yield* processed(stranger),
            "stranger (NONE) may not give @bosun-review pause; a refusal was posted"
          )

          assert.deepStrictEqual(yield* jobsOf(t.org), [])
          assert.strictEqual((yield* repositoryRow(t, repositoryId))?.enabled, true)
          assert.deepStrictEqual(yield* postedComments(t, 21, 2), [
            {
              login: `${SLUG}[bot]`,
              body: withMarker(
                "@drive-by, only the repository's owners, organization members and collaborators can give `@bosun-review` commands (GitHub lists you as CONTRIBUTOR).",
                contributor
              )
            },
            {
              login: `${SLUG}[bot]`,
              body: withMarker(
                "@stranger, only the repository's owners, organization members and collaborators can give `@bosun-review` commands (GitHub lists you as NONE).",
                stranger
              )
            }
          ])
        }),
      40_000
    )

    it.effect(
      "`@slug review` of a pull request over max_changed_files posts the notice instead, queues nothing and marks SKIPPED",
      () =>
        Effect.gen(function* () {
          const t = tenant("cmd-review-large", 16)
          const repositoryId = yield* setUp(t)
          yield* openOnGithub(t, 161)
          const fake = yield* FakeGithub
          fake.setPull(t.fullName, {
            number: 161,
            files: Array.from({ length: 4 }, (_, i) => ({
              filename: `src/f${i}.ts`,
              status: "added",
              additions: 1,
              deletions: 0
            }))
          })
          yield* putReviewPolicy(t, repositoryId, { max_changed_files: 3 })

          const asked = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 161, body: "@bosun-review review", association: "MEMBER" })
          )

          assert.strictEqual(
            yield* processed(asked),
            "no review: 4 changed files are over max_changed_files (3); a notice was posted"
          )
          assert.deepStrictEqual(yield* jobsOf(t.org), [])
          assert.strictEqual((yield* pullRequestRow(t, repositoryId, 161))?.review_status, "SKIPPED")
          const [notice] = yield* postedComments(t, 161, 1)
          assert.strictEqual(notice?.login, `${SLUG}[bot]`)
          assert.include(notice?.body ?? "", "it changes 4 files, over this repository's limit of 3")
        })
    )

    it.effect("`@slug review` on a paused repository says how to resume, queues nothing and marks SKIPPED", () =>
      Effect.gen(function* () {
        const t = tenant("cmd-review-paused", 3)
        const repositoryId = yield* setUp(t)
        yield* openOnGithub(t, 31)
        yield* (yield* RepositoriesRepo).setEnabled(t.org, repositoryId, false)

        const asked = yield* sendNew(
          "issue_comment",
          issueComment(t, { number: 31, body: "@bosun-review review", association: "OWNER" })
        )

        assert.strictEqual(
          yield* processed(asked),
          "no review: reviews are paused for this repository; a notice was posted"
        )
        assert.deepStrictEqual(yield* jobsOf(t.org), [])
        assert.deepStrictEqual(yield* pullRequestRow(t, repositoryId, 31), {
          state: "OPEN",
          review_status: "SKIPPED",
          title: "Change 31"
        })
        assert.deepStrictEqual(yield* postedComments(t, 31, 1), [
          { login: `${SLUG}[bot]`, body: withMarker(PAUSED_NOTICE, asked) }
        ])
      })
    )

    it.effect(
      "`@slug pause` pauses the repository with a confirmation; a push to the pull request then is not reviewed and is SKIPPED",
      () =>
        Effect.gen(function* () {
          const t = tenant("cmd-pause", 4)
          const repositoryId = yield* setUp(t)
          yield* openOnGithub(t, 41)

          const paused = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 41, body: "Too noisy today. @bosun-review pause", association: "COLLABORATOR" })
          )
          assert.isNull(yield* processed(paused))
          assert.strictEqual((yield* repositoryRow(t, repositoryId))?.enabled, false)

          const pushed = yield* sendNew("pull_request", pullRequest(t, { action: "synchronize", number: 41 }))
          assert.strictEqual(yield* processed(pushed), "no review: reviews are paused for this repository")
          assert.deepStrictEqual(yield* jobsOf(t.org), [])
          assert.deepStrictEqual(yield* pullRequestRow(t, repositoryId, 41), {
            state: "OPEN",
            review_status: "SKIPPED",
            title: "Change 41"
          })
          assert.deepStrictEqual(yield* postedComments(t, 41, 1), [
            {
              login: `${SLUG}[bot]`,
              body: withMarker(
                "Bosun paused its reviews of this repository, as @dev-bob asked. Comment `@bosun-review resume` to resume them.",
                paused
              )
            }
          ])
        }),
      40_000
    )

    it.effect(
      "`@slug resume` enables a paused repository again with a confirmation, and pull requests are reviewed",
      () =>
        Effect.gen(function* () {
          const t = tenant("cmd-resume", 5)
          const repositoryId = yield* setUp(t)
          yield* openOnGithub(t, 51)
          yield* (yield* RepositoriesRepo).setEnabled(t.org, repositoryId, false)

          const resumed = yield* sendNew("issue_comment", issueComment(t, { number: 51, body: "@bosun-review Resume" }))
          assert.isNull(yield* processed(resumed))
          assert.strictEqual((yield* repositoryRow(t, repositoryId))?.enabled, true)
          assert.deepStrictEqual(yield* postedComments(t, 51, 1), [
            {
              login: `${SLUG}[bot]`,
              body: withMarker("Bosun resumed its reviews of this repository, as @dev-bob asked.", resumed)
            }
          ])

          const opened = yield* sendNew("pull_request", pullRequest(t, { action: "opened", number: 52 }))
          assert.isNull(yield* processed(opened))
          assert.deepStrictEqual(
            (yield* jobsOf(t.org)).map((job) => [job.pull_request_number, job.head_sha, job.session_key]),
            [[52, HEAD, `review:${repositoryId}:52`]]
          )
        })
    )

    it.effect("a bot's comment, Bosun's own included, gives no command", () =>
      Effect.gen(function* () {
        const t = tenant("cmd-bot", 6)
        const repositoryId = yield* setUp(t)
        yield* openOnGithub(t, 61)

        const other = yield* sendNew(
          "issue_comment",
          issueComment(t, { number: 61, body: "@bosun-review pause", login: "helper[bot]", bot: true })
        )
        assert.strictEqual(yield* processed(other), "a bot's comment gives no command")
        const own = yield* sendNew(
          "issue_comment",
          issueComment(t, {
            number: 61,
            body: PAUSED_NOTICE,
            login: `${SLUG}[bot]`,
            bot: true,
            association: "NONE"
          })
        )
        assert.strictEqual(yield* processed(own), "a bot's comment gives no command")

        assert.strictEqual((yield* repositoryRow(t, repositoryId))?.enabled, true)
        assert.deepStrictEqual(yield* commentEffects(t), [])
        assert.deepStrictEqual(yield* jobsOf(t.org), [])
      })
    )

    it.effect(
      "a quoted (or fenced) command is not read; a comment without a mention is ignored with the reason",
      () =>
        Effect.gen(function* () {
          const t = tenant("cmd-quoted", 7)
          const repositoryId = yield* setUp(t)
          yield* openOnGithub(t, 71)

          const quoted = yield* sendNew(
            "issue_comment",
            issueComment(t, {
              number: 71,
              body: "> @bosun-review pause\n\nWhy did you pause it?\n\n```\n@bosun-review pause\n```"
            })
          )
          assert.strictEqual(yield* processed(quoted), "the comment does not mention @bosun-review with a command")
          const plain = yield* sendNew("issue_comment", issueComment(t, { number: 71, body: "LGTM, merging" }))
          assert.strictEqual(yield* processed(plain), "the comment does not mention @bosun-review with a command")
          const email = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 71, body: "mail ops@bosun-review pause if it breaks" })
          )
          assert.strictEqual(yield* processed(email), "the comment does not mention @bosun-review with a command")

          // Quoting an earlier command and giving another: the one outside the quote counts.
          const answered = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 71, body: "> @bosun-review resume\n\nNo: @bosun-review pause" })
          )
          assert.isNull(yield* processed(answered))
          assert.strictEqual((yield* repositoryRow(t, repositoryId))?.enabled, false)
          assert.deepStrictEqual(
            (yield* commentEffects(t)).map((effect) => effect.idempotency_key),
            [commandKey(answered)]
          )
        }),
      40_000
    )

    it.effect("an unknown command, or a mention without one, gets the list of commands", () =>
      Effect.gen(function* () {
        const t = tenant("cmd-unknown", 8)
        const repositoryId = yield* setUp(t)
        yield* openOnGithub(t, 81)

        const unknown = yield* sendNew(
          "issue_comment",
          issueComment(t, { number: 81, body: "@bosun-review deploy now" })
        )
        assert.strictEqual(yield* processed(unknown), "@bosun-review deploy is no command; the commands were posted")
        const bare = yield* sendNew("issue_comment", issueComment(t, { number: 81, body: "thanks @bosun-review!" }))
        assert.strictEqual(yield* processed(bare), "@bosun-review without a command; the commands were posted")

        const commands =
          "`@bosun-review review` reviews this pull request now, `@bosun-review pause` pauses Bosun's reviews of this repository, `@bosun-review resume` resumes them, `@bosun-review remember <convention>` proposes a convention for Bosun's reviews."
        assert.deepStrictEqual(yield* postedComments(t, 81, 2), [
          {
            login: `${SLUG}[bot]`,
            body: withMarker(`Bosun does not know the command \`deploy\`. ${commands}`, unknown)
          },
          {
            login: `${SLUG}[bot]`,
            body: withMarker(`Bosun needs a command after \`@bosun-review\`. ${commands}`, bare)
          }
        ])
        assert.deepStrictEqual(yield* jobsOf(t.org), [])
        assert.strictEqual((yield* repositoryRow(t, repositoryId))?.enabled, true)
      })
    )

    it.effect("the same command delivery sent twice queues one review and posts one comment", () =>
      Effect.gen(function* () {
        const t = tenant("cmd-twice", 9)
        const repositoryId = yield* setUp(t)
        yield* openOnGithub(t, 91)
        yield* holdReviews(t, repositoryId, 91)

        const reviewBody = issueComment(t, { number: 91, body: "@bosun-review review" })
        const review = yield* sendNew("issue_comment", reviewBody)
        assert.deepStrictEqual((yield* send("issue_comment", reviewBody, review)).answer, {
          accepted: true,
          duplicate: true
        })
        assert.isNull(yield* processed(review))
        assert.deepStrictEqual((yield* send("issue_comment", reviewBody, review)).answer, {
          accepted: true,
          duplicate: true
        })

        const pauseBody = issueComment(t, { number: 91, body: "@bosun-review pause" })
        const pause = yield* sendNew("issue_comment", pauseBody)
        assert.deepStrictEqual((yield* send("issue_comment", pauseBody, pause)).answer, {
          accepted: true,
          duplicate: true
        })
        assert.isNull(yield* processed(pause))

        const queued = (yield* jobsOf(t.org)).filter((job) => job.job_status === "QUEUED")
        assert.deepStrictEqual(
          queued.map((job) => [job.head_sha, job.input_snapshot]),
          [[HEAD_NOW, { trigger: "command", delivery_id: review, requested_by: "dev-bob" }]]
        )
        const effects = yield* eventually(commentEffects(t), (rows) => rows.every((row) => row.done))
        assert.deepStrictEqual(effects, [{ number: 91, idempotency_key: commandKey(pause), done: true }])
        const fake = yield* FakeGithub
        assert.strictEqual(fake.issueComments(t.fullName, 91).length, 1)
      })
    )

    it.effect("`@slug review` while GitHub fails is retried until GitHub answers, then queues one review", () =>
      Effect.gen(function* () {
        const t = tenant("cmd-github-down", 10)
        const repositoryId = yield* setUp(t)
        yield* openOnGithub(t, 101)
        yield* holdReviews(t, repositoryId, 101)
        const fake = yield* FakeGithub
        const pullPath = new RegExp(`^/api/v3/repos/${t.fullName}/pulls/101$`)
        fake.failNext({ method: "GET", path: pullPath, status: 502, times: 2 })

        const asked = yield* sendNew("issue_comment", issueComment(t, { number: 101, body: "@bosun-review review" }))

        assert.isNull(yield* processed(asked))
        const queued = (yield* jobsOf(t.org)).filter((job) => job.job_status === "QUEUED")
        assert.deepStrictEqual(
          queued.map((job) => [job.pull_request_number, job.head_sha]),
          [[101, HEAD_NOW]]
        )
        const calls = fake.requests.filter((r) => r.method === "GET" && pullPath.test(r.path))
        assert.strictEqual(calls.length, 3, "two failed calls and the one that answered")
      })
    )

    it.effect(
      "an @slug mention on an issue by a member makes it a work item with its intake run; a contributor is refused; later comments are its follow-ups",
      () =>
        Effect.gen(function* () {
          const t = tenant("cmd-issue", 11)
          const repositoryId = yield* setUp(t)
          const sql = yield* SqlClient.SqlClient
          const body = "@bosun-review please fix the flaky export"

          const refused = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 111, body, onIssue: true, association: "CONTRIBUTOR", login: "drive-by" })
          )
          assert.strictEqual(
            yield* processed(refused),
            "drive-by (CONTRIBUTOR) may not give Bosun work; a refusal was posted"
          )
          assert.deepStrictEqual(
            (yield* commentEffects(t)).map((effect) => effect.number),
            [111]
          )

          const asked = yield* sendNew("issue_comment", issueComment(t, { number: 111, body, onIssue: true }))
          assert.isNull(yield* processed(asked))
          const sessionKey = `github:${t.fullName}:111`
          const items = yield* sql<{
            kind: string
            source: string
            title: string
            summary: string | null
            requested_by_login: string | null
            primary_repository_id: string | null
            session_key: string | null
          }>`
            SELECT kind, source, title, summary, requested_by_login, primary_repository_id, session_key
            FROM work_items WHERE organization_id = ${t.org}`
          assert.deepStrictEqual(items, [
            {
              kind: "TASK",
              source: "SCM",
              title: "#111: Change 111",
              summary: "please fix the flaky export",
              requested_by_login: "dev-bob",
              primary_repository_id: repositoryId,
              session_key: sessionKey
            }
          ])
          const intakes = () =>
            Effect.map(jobsOf(t.org), (jobs) =>
              jobs.filter((job) => job.workflow_type === "work_item_intake").map((job) => [job.lane, job.session_key])
            )
          assert.deepStrictEqual(yield* intakes(), [["AGENT", sessionKey]])

          const followUp = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 111, body: "It fails on Mondays only.", onIssue: true, login: "dev-carol" })
          )
          assert.isNull(yield* processed(followUp))
          const conversation = yield* sql<{ author: string | null; body: string }>`
            SELECT author, body FROM work_item_messages WHERE organization_id = ${t.org} ORDER BY id`
          assert.deepStrictEqual(conversation, [{ author: "dev-carol", body: "It fails on Mondays only." }])
          assert.deepStrictEqual(yield* intakes(), [
            ["AGENT", sessionKey],
            ["AGENT", sessionKey]
          ])

          const bot = yield* sendNew(
            "issue_comment",
            issueComment(t, {
              number: 111,
              body: "Working on it.",
              onIssue: true,
              login: "bosun-review[bot]",
              bot: true
            })
          )
          assert.strictEqual(yield* processed(bot), "a bot's comment on an issue")
          const unmentioned = yield* sendNew(
            "issue_comment",
            issueComment(t, { number: 112, body: "Any update?", onIssue: true })
          )
          assert.strictEqual(yield* processed(unmentioned), "a comment on an issue that does not mention the App")
          assert.strictEqual(
            (yield* sql<{ id: string }>`SELECT id FROM work_items WHERE organization_id = ${t.org}`).length,
            1
          )
        })
    )

    it.effect(
      "closing a pull request cancels its queued review and asks its running one to stop; the pull request is SKIPPED",
      () =>
        Effect.gen(function* () {
          const t = tenant("cmd-closed", 12)
          const repositoryId = yield* setUp(t)
          const running = yield* holdReviews(t, repositoryId, 121)
          const opened = yield* sendNew("pull_request", pullRequest(t, { action: "opened", number: 121 }))
          assert.isNull(yield* processed(opened))
          assert.strictEqual((yield* pullRequestRow(t, repositoryId, 121))?.review_status, "QUEUED")

          const closed = yield* sendNew(
            "pull_request",
            pullRequest(t, { action: "closed", number: 121, state: "closed", merged: true })
          )
          assert.isNull(yield* processed(closed))

          // The wake-up after the commit runs a pass, which drops the queued job.
          const jobs = yield* eventually(jobsOf(t.org), (rows) => rows[1]?.job_status === "CANCELLED")
          assert.deepStrictEqual(
            jobs.map((job) => ({
              running: job.run_id === running,
              head_sha: job.head_sha,
              job_status: job.job_status,
              cancel_requested: job.cancel_requested,
              run_status: job.run_status,
              error_code: job.error_code
            })),
            [
              {
                running: true,
                head_sha: BASE,
                job_status: "RUNNING",
                cancel_requested: true,
                run_status: "RUNNING",
                error_code: null
              },
              {
                running: false,
                head_sha: HEAD,
                job_status: "CANCELLED",
                cancel_requested: true,
                run_status: "CANCELLED",
                error_code: "cancelled"
              }
            ]
          )
          assert.deepStrictEqual(yield* pullRequestRow(t, repositoryId, 121), {
            state: "MERGED",
            review_status: "SKIPPED",
            title: "Change 121"
          })
        }),
      40_000
    )

    it.effect("converted to draft with review_drafts off, a queued review is cancelled and a running one is not", () =>
      Effect.gen(function* () {
        const t = tenant("cmd-draft", 13)
        const repositoryId = yield* setUp(t)
        const running = yield* holdReviews(t, repositoryId, 131)
        const opened = yield* sendNew("pull_request", pullRequest(t, { action: "opened", number: 131 }))
        assert.isNull(yield* processed(opened))

        const drafted = yield* sendNew(
          "pull_request",
          pullRequest(t, { action: "converted_to_draft", number: 131, draft: true })
        )
        assert.isNull(yield* processed(drafted))

        const jobs = yield* eventually(jobsOf(t.org), (rows) => rows[1]?.job_status === "CANCELLED")
        assert.deepStrictEqual(
          jobs.map((job) => [job.run_id === running, job.job_status, job.cancel_requested]),
          [
            [true, "RUNNING", false],
            [false, "CANCELLED", true]
          ]
        )
        assert.strictEqual((yield* pullRequestRow(t, repositoryId, 131))?.review_status, "SKIPPED")
      })
    )

    it.effect(
      "a push to the default branch records its head; other branches, tags, deletions and older pushes change nothing",
      () =>
        Effect.gen(function* () {
          const t = tenant("cmd-push", 14)
          const repositoryId = yield* setUp(t)
          const head = "d".repeat(40)

          const pushed = yield* sendNew(
            "push",
            push(t, { ref: "refs/heads/main", after: head, pushedAt: 1_772_000_100 })
          )
          assert.isNull(yield* processed(pushed))
          const recorded = {
            enabled: true,
            default_branch: "main",
            default_branch_sha: head,
            default_branch_pushed_at: new Date(1_772_000_100_000)
          }
          assert.deepStrictEqual(yield* repositoryRow(t, repositoryId), recorded)

          const feature = yield* sendNew("push", push(t, { ref: "refs/heads/feature-1", after: "e".repeat(40) }))
          assert.strictEqual(
            yield* processed(feature),
            "a push to refs/heads/feature-1, not to the default branch main"
          )
          const tag = yield* sendNew("push", push(t, { ref: "refs/tags/v1.0.0", after: "e".repeat(40) }))
          assert.strictEqual(yield* processed(tag), "a push to refs/tags/v1.0.0, not to the default branch main")
          const deleted = yield* sendNew(
            "push",
            push(t, { ref: "refs/heads/main", after: "0".repeat(40), deleted: true, pushedAt: 1_772_000_200 })
          )
          assert.strictEqual(yield* processed(deleted), "the push deleted the default branch main")
          const older = yield* sendNew(
            "push",
            push(t, { ref: "refs/heads/main", after: "f".repeat(40), pushedAt: 1_772_000_050 })
          )
          assert.strictEqual(yield* processed(older), "a newer push to main is already recorded")

          assert.deepStrictEqual(yield* repositoryRow(t, repositoryId), recorded)
        }),
      40_000
    )

    it.effect("a push to the default branch of a repository the organization does not have yet records it first", () =>
      Effect.gen(function* () {
        const t = tenant("cmd-push-new", 15)
        yield* setUp(t)
        const sql = yield* SqlClient.SqlClient
        const head = "9".repeat(40)

        const pushed = yield* sendNew(
          "push",
          push(t, { ref: "refs/heads/main", after: head, githubRepositoryId: 290_015, name: "web" })
        )

        assert.isNull(yield* processed(pushed))
        const [repository] = yield* sql<{
          owner: string
          name: string
          default_branch: string
          default_branch_sha: string | null
        }>`
        SELECT owner, name, default_branch, default_branch_sha FROM repositories
        WHERE organization_id = ${t.org} AND github_repository_id = 290015`
        assert.deepStrictEqual(repository, {
          owner: t.account.login,
          name: "web",
          default_branch: "main",
          default_branch_sha: head
        })
      })
    )
  }
)

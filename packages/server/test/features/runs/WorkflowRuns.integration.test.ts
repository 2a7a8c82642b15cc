/**
 * `GET .../workflow-runs/{run_id}` and `GET .../workflow-runs` over real HTTP
 * (docs/interface.md: Organization endpoints, Resources "Workflow run", "Workflow attempt"): the
 * run and its attempts field by field; the list newest first, filtered by repository and pull
 * request, capped at page_size; 401, 404 across organizations, 400 for an over-long id or a bad
 * query value.
 */
import type { WorkflowRun } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { insertAttempt, insertRun } from "../../support/RunRows.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

const listRuns = (cookie: string, org: string, query = "") =>
  Effect.map(
    request(`/api/v1/organizations/${org}/workflow-runs${query === "" ? "" : `?${query}`}`, { headers: { cookie } }),
    (response) => {
      assert.strictEqual(response.status, 200, response.text)
      return (response.json as { data: ReadonlyArray<WorkflowRun> }).data
    }
  )

/** Pins a run's created_at, so the order under test does not hang on the clock. */
const createdAt = (runId: string, at: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`UPDATE workflow_runs SET created_at = ${at}::timestamptz WHERE id = ${runId}`
  })

/** Two repositories and five runs of `org` at pinned times (two at one instant); one run of another organization. */
const listFixture = (org: string) =>
  Effect.gen(function* () {
    const repositories = yield* RepositoriesRepo
    const member = yield* signIn(`${org}-member`, [[org, "MEMBER"]])
    yield* signIn(`${org}-outsider`, [[`${org}-other`, "MEMBER"]])
    const app = yield* repositories.upsert(org, {
      githubRepositoryId: 11,
      owner: "acme",
      name: "app",
      defaultBranch: "main"
    })
    const lib = yield* repositories.upsert(org, {
      githubRepositoryId: 12,
      owner: "acme",
      name: "lib",
      defaultBranch: "main"
    })
    const foreignRepository = yield* repositories.upsert(`${org}-other`, {
      githubRepositoryId: 13,
      owner: "acme",
      name: "app",
      defaultBranch: "main"
    })
    const appPr7 = yield* insertRun(org, {
      workflowType: "PULL_REQUEST_REVIEW",
      repositoryId: app.id,
      headSha: "c".repeat(40),
      baseSha: "d".repeat(40),
      pullRequestNumber: 7,
      inputSnapshot: { trigger: "synchronize" }
    })
    const appPr8 = yield* insertRun(org, {
      workflowType: "PULL_REQUEST_REVIEW",
      repositoryId: app.id,
      pullRequestNumber: 8
    })
    const libPr7 = yield* insertRun(org, {
      workflowType: "PULL_REQUEST_REVIEW",
      repositoryId: lib.id,
      pullRequestNumber: 7
    })
    const tiedA = yield* insertRun(org, { workflowType: "DEEP_SCAN", repositoryId: app.id })
    const tiedB = yield* insertRun(org, { workflowType: "DEEP_SCAN", repositoryId: null })
    const foreign = yield* insertRun(`${org}-other`, {
      workflowType: "PULL_REQUEST_REVIEW",
      repositoryId: foreignRepository.id,
      pullRequestNumber: 7
    })
    yield* createdAt(appPr7.id, "2024-03-01T10:00:01Z")
    yield* createdAt(libPr7.id, "2024-03-01T10:00:02Z")
    yield* createdAt(appPr8.id, "2024-03-01T10:00:03Z")
    yield* createdAt(tiedA.id, "2024-03-01T10:00:04Z")
    yield* createdAt(tiedB.id, "2024-03-01T10:00:04Z")
    yield* createdAt(foreign.id, "2024-03-01T10:00:05Z")
    // Same instant: the larger id first.
    const tied = [tiedA.id, tiedB.id].sort().reverse()
    return { member, app, lib, foreignRepository, appPr7, appPr8, libPr7, tiedA, tied, foreign }
  })

layer(layerTestServer(), { excludeTestServices: true })("workflow runs", (it) => {
  it.effect("returns the run and its attempts in attempt order, every field of the spec's resources", () =>
    Effect.gen(function* () {
      const repositories = yield* RepositoriesRepo
      const member = yield* signIn("run-reader", [["run-org", "MEMBER"]])
      const repository = yield* repositories.upsert("run-org", {
        githubRepositoryId: 5,
        owner: "acme",
        name: "runs",
        defaultBranch: "main"
      })
      const run = yield* insertRun("run-org", {
        workflowType: "PULL_REQUEST_REVIEW",
        repositoryId: repository.id,
        headSha: "a".repeat(40),
        baseSha: "b".repeat(40),
        pullRequestNumber: 42,
        inputSnapshot: { trigger: "opened" }
      })
      yield* insertAttempt(run.id, 2, { workerId: "worker-b", sandboxProvider: "EXTERNAL_RUNTIME" })
      yield* insertAttempt(run.id, 1, { workerId: "worker-a" })
      const response = yield* request(`/api/v1/organizations/run-org/workflow-runs/${run.id}`, {
        headers: { cookie: member.cookie }
      })
      assert.strictEqual(response.status, 200)
      const body = response.json as {
        data: { run: Record<string, unknown>; attempts: ReadonlyArray<Record<string, unknown>> }
      }
      assert.deepStrictEqual(Object.keys(body.data).sort(), ["attempts", "run"])
      assert.deepStrictEqual(
        { ...body.data.run, created_at: "t", updated_at: "t" },
        {
          base_sha: "b".repeat(40),
          created_at: "t",
          current_phase: null,
          error_code: null,
          error_message: null,
          finished_at: null,
          head_sha: "a".repeat(40),
          id: run.id,
          input_snapshot: { trigger: "opened" },
          model: null,
          organization_id: "run-org",
          provider: null,
          pull_request_number: 42,
          repository_id: repository.id,
          sandbox_id: null,
          sandbox_provider: null,
          started_at: null,
          status: "RECEIVED",
          updated_at: "t",
          usage: {},
          workflow_type: "PULL_REQUEST_REVIEW"
        }
      )
      const attemptFields = { sandbox_id: null, exit_reason: null, retryable: false, finished_at: null }
      assert.deepStrictEqual(
        body.data.attempts.map((attempt) => ({ ...attempt, started_at: typeof attempt.started_at === "string" })),
        [
          { id: `${run.id}:1`, attempt: 1, worker_id: "worker-a", sandbox_provider: null, ...attemptFields },
          {
            id: `${run.id}:2`,
            attempt: 2,
            worker_id: "worker-b",
            sandbox_provider: "EXTERNAL_RUNTIME",
            ...attemptFields
          }
        ].map((attempt) => ({ ...attempt, started_at: true }))
      )
      const first = body.data.attempts[0] ?? {}
      assert.deepStrictEqual(Object.keys(first).sort(), [
        "attempt",
        "exit_reason",
        "finished_at",
        "id",
        "retryable",
        "sandbox_id",
        "sandbox_provider",
        "started_at",
        "worker_id"
      ])
    })
  )

  it.effect("answers 401 without a session, 404 for another organization's run or a stranger, 400 for a long id", () =>
    Effect.gen(function* () {
      const member = yield* signIn("run-member-2", [["run-org-2", "MEMBER"]])
      const stranger = yield* signIn("run-stranger", [["run-org-3", "ADMIN"]])
      const run = yield* insertRun("run-org-2", { workflowType: "DEEP_SCAN", repositoryId: null })
      const foreign = yield* insertRun("run-org-3", { workflowType: "DEEP_SCAN", repositoryId: null })
      const path = `/api/v1/organizations/run-org-2/workflow-runs/${run.id}`
      assert.strictEqual((yield* request(path)).status, 401)
      for (const [cookie, target] of [
        [stranger.cookie, path],
        [member.cookie, `/api/v1/organizations/run-org-2/workflow-runs/${foreign.id}`],
        [member.cookie, `/api/v1/organizations/run-org-3/workflow-runs/${foreign.id}`],
        [member.cookie, "/api/v1/organizations/run-org-2/workflow-runs/unknown-run"]
      ] as const) {
        const response = yield* request(target, { headers: { cookie } })
        assert.strictEqual(response.status, 404, target)
        assert.strictEqual(errorCode(response.json), "not_found")
      }
      const long = yield* request(`/api/v1/organizations/run-org-2/workflow-runs/${"r".repeat(129)}`, {
        headers: { cookie: member.cookie }
      })
      assert.strictEqual(long.status, 400)
      assert.strictEqual(errorCode(long.json), "invalid_path_parameter")
    })
  )

  it.effect(
    "lists the organization's runs newest first (created_at, then id), each with every field of the spec's resource",
    () =>
      Effect.gen(function* () {
        const f = yield* listFixture("list-org")
        const data = yield* listRuns(f.member.cookie, "list-org")
        assert.deepStrictEqual(
          data.map((run) => run.id),
          [...f.tied, f.appPr8.id, f.libPr7.id, f.appPr7.id]
        )
        const oldest = data.at(-1)
        assert.deepStrictEqual(
          { ...oldest, updated_at: "t" },
          {
            base_sha: "d".repeat(40),
            created_at: "2024-03-01T10:00:01.000Z",
            current_phase: null,
            error_code: null,
            error_message: null,
            finished_at: null,
            head_sha: "c".repeat(40),
            id: f.appPr7.id,
            input_snapshot: { trigger: "synchronize" },
            model: null,
            organization_id: "list-org",
            provider: null,
            pull_request_number: 7,
            repository_id: f.app.id,
            sandbox_id: null,
            sandbox_provider: null,
            started_at: null,
            status: "RECEIVED",
            updated_at: "t",
            usage: {},
            workflow_type: "PULL_REQUEST_REVIEW"
          }
        )
        // The list's runs are the single-run endpoint's, byte for byte.
        for (const run of data) {
          const single = yield* request(`/api/v1/organizations/list-org/workflow-runs/${run.id}`, {
            headers: { cookie: f.member.cookie }
          })
          assert.deepStrictEqual((single.json as { data: { run: WorkflowRun } }).data.run, run)
        }
        assert.isFalse(data.some((run) => run.id === f.foreign.id))
      })
  )

  it.effect("filters by repository_id and by pull_request_number, both combined, never across organizations", () =>
    Effect.gen(function* () {
      const f = yield* listFixture("filter-org")
      const ids = (query: string) =>
        Effect.map(listRuns(f.member.cookie, "filter-org", query), (data) => data.map((run) => run.id))
      assert.deepStrictEqual(yield* ids(`repository_id=${f.app.id}`), [f.tiedA.id, f.appPr8.id, f.appPr7.id])
      assert.deepStrictEqual(yield* ids("pull_request_number=7"), [f.libPr7.id, f.appPr7.id])
      assert.deepStrictEqual(yield* ids(`repository_id=${f.app.id}&pull_request_number=7`), [f.appPr7.id])
      assert.deepStrictEqual(yield* ids(`repository_id=${f.lib.id}&pull_request_number=8`), [])
      assert.deepStrictEqual(yield* ids("pull_request_number=9"), [])
      // Another organization's repository holds runs, but none of this organization's.
      assert.deepStrictEqual(yield* ids(`repository_id=${f.foreignRepository.id}`), [])
      assert.deepStrictEqual(yield* ids("repository_id=no-such-repository"), [])
    })
  )

  it.effect("caps the list at page_size, 25 runs by default and up to 100, keeping the newest", () =>
    Effect.gen(function* () {
      const member = yield* signIn("run-pager", [["page-org", "MEMBER"]])
      const created: Array<string> = []
      for (let i = 0; i < 27; i++) {
        const run = yield* insertRun("page-org", { workflowType: "PULL_REQUEST_REVIEW", repositoryId: null })
        yield* createdAt(run.id, new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString())
        created.push(run.id)
      }
      const newestFirst = [...created].reverse()
      const ids = (query: string) =>
        Effect.map(listRuns(member.cookie, "page-org", query), (data) => data.map((run) => run.id))
      assert.deepStrictEqual(yield* ids(""), newestFirst.slice(0, 25))
      assert.deepStrictEqual(yield* ids("page_size=1"), newestFirst.slice(0, 1))
      assert.deepStrictEqual(yield* ids("page_size=3"), newestFirst.slice(0, 3))
      assert.deepStrictEqual(yield* ids("page_size=100"), newestFirst)
    })
  )

  it.effect(
    "the list answers 401 without a session, 404 to a non-member or for an unknown organization, 400 for each bad parameter",
    () =>
      Effect.gen(function* () {
        const member = yield* signIn("run-list-guard", [["list-guard-org", "MEMBER"]])
        const stranger = yield* signIn("run-list-stranger", [["list-guard-other", "ADMIN"]])
        const path = "/api/v1/organizations/list-guard-org/workflow-runs"
        const anonymous = yield* request(path)
        assert.strictEqual(anonymous.status, 401)
        assert.strictEqual(errorCode(anonymous.json), "session_required")
        for (const [cookie, target] of [
          [stranger.cookie, path],
          [member.cookie, "/api/v1/organizations/list-guard-other/workflow-runs"],
          [member.cookie, "/api/v1/organizations/no-such-org/workflow-runs"]
        ] as const) {
          const response = yield* request(target, { headers: { cookie } })
          assert.strictEqual(response.status, 404, target)
          assert.strictEqual(errorCode(response.json), "not_found")
        }
        for (const [query, field] of [
          ["page_size=0", "page_size"],
          ["page_size=101", "page_size"],
          ["page_size=x", "page_size"],
          ["page_size=2.5", "page_size"],
          ["pull_request_number=0", "pull_request_number"],
          ["pull_request_number=-1", "pull_request_number"],
          ["pull_request_number=x", "pull_request_number"],
          ["pull_request_number=1.5", "pull_request_number"],
          // Beyond the column's integer range: refused before the database sees it.
          ["pull_request_number=2147483648", "pull_request_number"],
          [`repository_id=${"r".repeat(129)}`, "repository_id"],
          ["repository_id=", "repository_id"]
        ] as const) {
          const response = yield* request(`${path}?${query}`, { headers: { cookie: member.cookie } })
          assert.strictEqual(response.status, 400, query)
          assert.strictEqual(errorCode(response.json), "invalid_query_parameter", query)
          assert.include((response.json as { error: { message: string } }).error.message, `query parameter "${field}"`)
        }
        const long = yield* request(`/api/v1/organizations/${"o".repeat(129)}/workflow-runs`, {
          headers: { cookie: member.cookie }
        })
        assert.strictEqual(long.status, 400)
        assert.strictEqual(errorCode(long.json), "invalid_path_parameter")
        assert.deepStrictEqual(yield* listRuns(member.cookie, "list-guard-org", "page_size=100"), [])
      })
  )
})

/**
 * `GET .../workflow-runs/{run_id}` over real HTTP (spec: Organization endpoints, Resources
 * "Workflow run", "Workflow attempt"): the run and its attempts field by field, 401, 404 across
 * organizations, 400 for an over-long id.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { RepositoriesRepo } from "../../src/persistence/RepositoriesRepo.ts"
import { WorkflowRunsRepo } from "../../src/persistence/WorkflowRunsRepo.ts"
import { errorCode, signIn } from "../support/Identity.ts"
import { layerTestServer, request } from "../support/TestServer.ts"

layer(layerTestServer(), { excludeTestServices: true })("workflow runs", (it) => {
  it.effect("returns the run and its attempts in attempt order, every field of the spec's resources", () =>
    Effect.gen(function* () {
      const runs = yield* WorkflowRunsRepo
      const repositories = yield* RepositoriesRepo
      const member = yield* signIn("run-reader", [["run-org", "MEMBER"]])
      const repository = yield* repositories.upsert("run-org", {
        githubRepositoryId: 5,
        owner: "acme",
        name: "runs",
        defaultBranch: "main"
      })
      const run = yield* runs.create("run-org", {
        workflowType: "PULL_REQUEST_REVIEW",
        repositoryId: repository.id,
        headSha: "a".repeat(40),
        baseSha: "b".repeat(40),
        pullRequestNumber: 42,
        inputSnapshot: { trigger: "opened" }
      })
      const second = yield* runs.addAttempt(run.id, 2, { workerId: "worker-b", sandboxProvider: "EXTERNAL_RUNTIME" })
      const first = yield* runs.addAttempt(run.id, 1, { workerId: "worker-a" })
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
      assert.deepStrictEqual(body.data.attempts, [first, second])
      assert.strictEqual(first.id, `${run.id}:1`)
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
      const runs = yield* WorkflowRunsRepo
      const member = yield* signIn("run-member-2", [["run-org-2", "MEMBER"]])
      const stranger = yield* signIn("run-stranger", [["run-org-3", "ADMIN"]])
      const run = yield* runs.create("run-org-2", { workflowType: "DEEP_SCAN", repositoryId: null })
      const foreign = yield* runs.create("run-org-3", { workflowType: "DEEP_SCAN", repositoryId: null })
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
})

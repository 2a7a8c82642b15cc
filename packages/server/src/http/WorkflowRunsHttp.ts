/**
 * `GET .../workflow-runs/{run_id}` (spec: Organization endpoints): the run and its attempts; and
 * `GET .../workflow-runs?repository_id&pull_request_number&page_size` (issue 5): the runs newest
 * first, the filters combined, `page_size` 1..100 (default 25). Members only.
 */
import { BosunApi, DEFAULT_PAGE_SIZE, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { WorkflowRunsRepo } from "../persistence/WorkflowRunsRepo.ts"
import { group } from "./ApiGroup.ts"
import { OrgAccess } from "./OrgAccess.ts"

export const WorkflowRunsHttp = group(
  BosunApi,
  "workflowRuns",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const runs = yield* WorkflowRunsRepo
    return handlers
      .handle("list", ({ params, query }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const data = yield* runs.list(params.organization_id, {
            repositoryId: query.repository_id,
            pullRequestNumber: query.pull_request_number,
            limit: query.page_size ?? DEFAULT_PAGE_SIZE
          })
          return { data }
        })
      )
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const found = yield* runs.find(params.organization_id, params.run_id)
          if (Option.isNone(found)) {
            return yield* NotFound.fromCode(ErrorCodes.notFound, "No workflow run has this id in this organization")
          }
          return { data: { attempts: found.value.attempts, run: found.value.run } }
        })
      )
  })
)

/**
 * `GET /api/v1/organizations/{organization_id}/workflow-runs/{run_id}` (spec: Organization
 * endpoints): the run and its attempts; and
 * `GET .../workflow-runs?repository_id&pull_request_number&page_size` (issue 5, for the
 * dashboard): the runs newest first, the filters combined, `page_size` 1..100 (default 25). Both
 * for members of the organization.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { BadRequest, NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { PageSize } from "../PullRequest.ts"
import { WorkflowRun, WorkflowRunDetail } from "../WorkflowRun.ts"
import { SessionAuth } from "./Auth.ts"

/**
 * A pull-request number as the query string carries it: a positive integer that fits the
 * column (`integer`), so a huge number is a 400, not a database error.
 */
export const PullRequestNumberQuery = Schema.NumberFromString.check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1, maximum: 2_147_483_647 })
)

export class WorkflowRunsApi extends HttpApiGroup.make("workflowRuns")
  .add(
    HttpApiEndpoint.get("list", "/organizations/:organization_id/workflow-runs", {
      params: { organization_id: PathId },
      query: {
        repository_id: Schema.optional(PathId),
        pull_request_number: Schema.optional(PullRequestNumberQuery),
        page_size: Schema.optional(PageSize)
      },
      success: Schema.Struct({ data: Schema.Array(WorkflowRun) }),
      error: [NotFound, BadRequest]
    }),
    HttpApiEndpoint.get("get", "/organizations/:organization_id/workflow-runs/:run_id", {
      params: { organization_id: PathId, run_id: PathId },
      success: Schema.Struct({ data: WorkflowRunDetail }),
      error: NotFound
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

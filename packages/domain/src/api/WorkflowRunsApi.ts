/**
 * `GET /api/v1/organizations/{organization_id}/workflow-runs/{run_id}` (spec: Organization
 * endpoints): the run and its attempts, for members of the organization.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { WorkflowRunDetail } from "../WorkflowRun.ts"
import { SessionAuth } from "./Auth.ts"

export class WorkflowRunsApi extends HttpApiGroup.make("workflowRuns")
  .add(
    HttpApiEndpoint.get("get", "/organizations/:organization_id/workflow-runs/:run_id", {
      params: { organization_id: PathId, run_id: PathId },
      success: Schema.Struct({ data: WorkflowRunDetail }),
      error: NotFound
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

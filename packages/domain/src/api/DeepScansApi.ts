/**
 * `GET /api/v1/organizations/{organization_id}/deep-scans?repository_id&page_size` and
 * `POST /api/v1/organizations/{organization_id}/deep-scans {repository_id}` (spec: Organization
 * endpoints). The list is newest first, `page_size` 1..100 (default 20). A launch answers 202
 * with the scan's id: the scan runs later, as a workflow run of type `deep_scan`.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { BadGateway, BadRequest, Conflict, NotFound } from "../ApiError.ts"
import { DeepScan, DeepScanLaunch } from "../DeepScan.ts"
import { PathId } from "../Ids.ts"
import { PageSize } from "../PullRequest.ts"
import { SessionAuth } from "./Auth.ts"

export class DeepScansApi extends HttpApiGroup.make("deepScans")
  .add(
    HttpApiEndpoint.get("list", "/organizations/:organization_id/deep-scans", {
      params: { organization_id: PathId },
      query: { repository_id: Schema.optional(PathId), page_size: Schema.optional(PageSize) },
      success: Schema.Struct({ data: Schema.Array(DeepScan) }),
      error: [NotFound, BadRequest]
    }),
    HttpApiEndpoint.get("get", "/organizations/:organization_id/deep-scans/:deep_scan_id", {
      params: { organization_id: PathId, deep_scan_id: PathId },
      success: Schema.Struct({ data: DeepScan }),
      error: NotFound
    }),
    HttpApiEndpoint.post("launch", "/organizations/:organization_id/deep-scans", {
      params: { organization_id: PathId },
      payload: DeepScanLaunch,
      success: Schema.Struct({ data: Schema.Struct({ id: Schema.String }) }).pipe(HttpApiSchema.status(202)),
      error: [NotFound, BadRequest, Conflict, BadGateway]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

/**
 * `GET /api/v1/organizations/{organization_id}/deep-scans?repository_id&page_size` and
 * `POST /api/v1/organizations/{organization_id}/deep-scans {repository_id}`
 * (docs/interface.md: Organization endpoints). The list is newest first, `page_size` 1..100
 * (default 20). A launch answers 202 with the scan's id: the scan runs later, as a workflow run of
 * type `deep_scan`.
 *
 * Triage: `GET .../deep-scans/{id}/findings` lists a scan's findings worst first, with
 * their verification and proof; `POST .../findings/{finding_id}/decision` accepts or rejects a
 * pending one (a rejection names its reason and suppresses the finding's fingerprint in the
 * repository's later scans); deciding twice is a 409 `finding_already_decided`.
 * `POST .../deep-scans/{id}/fix` makes the scan's one fix work item from its accepted findings
 * and queues the run that opens the pull request (202 `{work_item_id, created}`; again: the same
 * item, `created: false`); a scan with no accepted finding is a 409 `no_accepted_findings`.
 *
 * Schedules: `GET | PUT | DELETE .../repositories/{repository_id}/deep-scan-schedule`
 * read (members), set `{cron}` (ADMIN; 400 `invalid_cron` for an expression that is not five
 * cron fields) and remove (ADMIN; 204) a repository's recurring deep scan.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { BadGateway, BadRequest, Conflict, Forbidden, NotFound } from "../ApiError.ts"
import { DeepScan, DeepScanLaunch, DeepScanSchedule, DeepScanScheduleInput } from "../DeepScan.ts"
import { DeepScanFinding, FindingDecisionInput } from "../DeepScanRun.ts"
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
    HttpApiEndpoint.get("findings", "/organizations/:organization_id/deep-scans/:deep_scan_id/findings", {
      params: { organization_id: PathId, deep_scan_id: PathId },
      success: Schema.Struct({ data: Schema.Array(DeepScanFinding) }),
      error: NotFound
    }),
    HttpApiEndpoint.post(
      "decideFinding",
      "/organizations/:organization_id/deep-scans/:deep_scan_id/findings/:finding_id/decision",
      {
        params: { organization_id: PathId, deep_scan_id: PathId, finding_id: PathId },
        payload: FindingDecisionInput,
        success: Schema.Struct({ data: DeepScanFinding }),
        error: [NotFound, BadRequest, Conflict]
      }
    ),
    HttpApiEndpoint.post("fix", "/organizations/:organization_id/deep-scans/:deep_scan_id/fix", {
      params: { organization_id: PathId, deep_scan_id: PathId },
      success: Schema.Struct({
        data: Schema.Struct({ work_item_id: Schema.String, created: Schema.Boolean })
      }).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Conflict]
    }),
    HttpApiEndpoint.post("launch", "/organizations/:organization_id/deep-scans", {
      params: { organization_id: PathId },
      payload: DeepScanLaunch,
      success: Schema.Struct({ data: Schema.Struct({ id: Schema.String }) }).pipe(HttpApiSchema.status(202)),
      error: [NotFound, BadRequest, Conflict, BadGateway]
    }),
    HttpApiEndpoint.get("schedule", "/organizations/:organization_id/repositories/:repository_id/deep-scan-schedule", {
      params: { organization_id: PathId, repository_id: PathId },
      success: Schema.Struct({ data: DeepScanSchedule }),
      error: NotFound
    }),
    HttpApiEndpoint.put(
      "setSchedule",
      "/organizations/:organization_id/repositories/:repository_id/deep-scan-schedule",
      {
        params: { organization_id: PathId, repository_id: PathId },
        payload: DeepScanScheduleInput,
        success: Schema.Struct({ data: DeepScanSchedule }),
        error: [NotFound, BadRequest, Forbidden]
      }
    ),
    HttpApiEndpoint.delete(
      "removeSchedule",
      "/organizations/:organization_id/repositories/:repository_id/deep-scan-schedule",
      {
        params: { organization_id: PathId, repository_id: PathId },
        success: HttpApiSchema.NoContent,
        error: [NotFound, Forbidden]
      }
    )
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

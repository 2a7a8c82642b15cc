/**
 * Work items of an organization (docs/interface.md: Organization endpoints): `POST
 * .../work-items/{work_item_id}/actions` `{action}` (members; 409 `action_not_available` unless
 * the item lists the action), plus the list and single reads for the dashboard.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Conflict, NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { WorkItem, WorkItemActionRequest } from "../WorkItem.ts"
import { SessionAuth } from "./Auth.ts"

const params = { organization_id: PathId, work_item_id: PathId }

export class WorkItemsApi extends HttpApiGroup.make("workItems")
  .add(
    HttpApiEndpoint.get("list", "/organizations/:organization_id/work-items", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: Schema.Array(WorkItem) }),
      error: NotFound
    }),
    HttpApiEndpoint.get("get", "/organizations/:organization_id/work-items/:work_item_id", {
      params,
      success: Schema.Struct({ data: WorkItem }),
      error: NotFound
    }),
    HttpApiEndpoint.post("act", "/organizations/:organization_id/work-items/:work_item_id/actions", {
      params,
      payload: WorkItemActionRequest,
      success: Schema.Struct({ data: WorkItem }),
      error: [NotFound, Conflict]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

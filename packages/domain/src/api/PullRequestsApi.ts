/**
 * `GET /api/v1/organizations/{organization_id}/pull-requests?state&search&cursor&page_size`
 * (docs/interface.md: Organization endpoints): `{data: [Pull-request list item], meta: {next_cursor,
 * previous_cursor}}`. Bad values of any parameter, an unknown cursor included, are 400.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { BadRequest, NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { PageSize, PullRequestPage, PullRequestState } from "../PullRequest.ts"
import { SessionAuth } from "./Auth.ts"

export class PullRequestsApi extends HttpApiGroup.make("pullRequests")
  .add(
    HttpApiEndpoint.get("list", "/organizations/:organization_id/pull-requests", {
      params: { organization_id: PathId },
      query: {
        state: Schema.optional(PullRequestState),
        search: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))),
        cursor: Schema.optional(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(512))),
        page_size: Schema.optional(PageSize)
      },
      success: PullRequestPage,
      error: [NotFound, BadRequest]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

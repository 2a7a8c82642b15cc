/**
 * `GET .../pull-requests` (docs/interface.md: Organization endpoints): members page through the
 * organization's pull requests; a cursor that does not decode is 400 `invalid_cursor`.
 */
import { BadRequest, BosunApi, DEFAULT_PAGE_SIZE, ErrorCodes } from "@bosun/domain"
import { Effect, Option } from "effect"
import { decodeCursor } from "../../platform/db/PageCursor.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { PullRequestsRepo } from "./PullRequestsRepo.ts"

export const PullRequestsHttp = group(
  BosunApi,
  "pullRequests",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const pullRequests = yield* PullRequestsRepo
    return handlers.handle("list", ({ params, query }) =>
      Effect.gen(function* () {
        yield* access.member(params.organization_id)
        const cursor = query.cursor === undefined ? Option.none() : decodeCursor(query.cursor)
        if (query.cursor !== undefined && Option.isNone(cursor)) {
          return yield* BadRequest.fromCode(
            ErrorCodes.invalidCursor,
            'Invalid query parameter "cursor": use a cursor from a previous page'
          )
        }
        return yield* pullRequests.list(params.organization_id, {
          state: query.state,
          search: query.search,
          cursor: Option.getOrUndefined(cursor),
          pageSize: query.page_size ?? DEFAULT_PAGE_SIZE
        })
      })
    )
  })
)

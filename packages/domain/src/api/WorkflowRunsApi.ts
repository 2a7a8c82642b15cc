/**
 * `GET /api/v1/organizations/{organization_id}/workflow-runs/{run_id}`
 * (docs/interface.md: Organization endpoints): the run and its attempts; and `GET
 * .../workflow-runs?repository_id&pull_request_number&page_size` (for the dashboard): the runs
 * newest first, the filters combined, `page_size` 1..100 (default 25); and
 * `GET .../workflow-runs/{run_id}/events/stream` (docs/interface.md: Events 1): the run's events as
 * Server-Sent Events — `id:` is the event's sequence number, `Last-Event-ID` (or `?after=`) resumes
 * after it, and after about 55 s the stream ends with `event: reconnect`. A client that does not
 * ask for `text/event-stream` and gives `?after=` gets the events after that sequence as JSON (the
 * polling fallback). All for members of the organization.
 */
import { Schema } from "effect"
import { Sse } from "effect/encoding"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { BadRequest, NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { WorkflowEvent } from "../Jobs.ts"
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

/** A sequence number as the query string or `Last-Event-ID` carries it. */
export const EventSeqQuery = Schema.NumberFromString.check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })
)

/** The polling fallback's answer: the events after `after`, oldest first, at most a page. */
export const WorkflowEventsPage = Schema.Struct({
  data: Schema.Array(WorkflowEvent),
  meta: Schema.Struct({ last_seq: Schema.Int })
})

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
    }),
    HttpApiEndpoint.get("events", "/organizations/:organization_id/workflow-runs/:run_id/events/stream", {
      params: { organization_id: PathId, run_id: PathId },
      query: { after: Schema.optional(EventSeqQuery) },
      headers: { "last-event-id": Schema.optional(EventSeqQuery) },
      success: [HttpApiSchema.StreamSse({ events: Sse.EventEncoded }), WorkflowEventsPage],
      error: [NotFound, BadRequest]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

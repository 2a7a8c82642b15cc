/**
 * Per-request identity shared between the outermost HTTP middleware, the JSON logger and whatever runs inside the
 * request (auth middleware, handlers): the request id, and the opaque `org_id`/`user_id` that the
 * `http_request` log line carries for authenticated organization members (docs/interface.md: Events 6).
 */
import { Context } from "effect"

export interface RequestContextShape {
  readonly requestId: string
  /** Set by authentication once it knows who is calling; read when the log line is written. */
  orgId: string | undefined
  userId: string | undefined
}

export class RequestContext extends Context.Service<RequestContext, RequestContextShape>()(
  "bosun/server/http/RequestContext"
) {}

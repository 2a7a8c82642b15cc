/**
 * The outermost middleware every request passes through, matched route or not (spec: Errors 1-3,
 * Events 6, Health endpoints). In order, it:
 * - picks the request id (an inbound `X-Request-ID` matching the spec's pattern, else a new one)
 *   and sets it on every response;
 * - holds `/api/*` behind the migration gate;
 * - turns whatever failed into the `{"error": {"code", "message"}}` envelope: unmatched routes
 *   404, unreadable bodies 400, defects 500 with a generic message (the stack goes to the
 *   `http_request_failed` log line only);
 * - writes exactly one `http_request` JSON line with the matched route template.
 * It logs no header values and no bodies.
 */

import { randomUUID } from "node:crypto"
import { ErrorCodes, RequestIdPattern, type ServiceUnavailable } from "@bosun/domain"
import { Cause, Effect, type Types } from "effect"
import { HttpRouter, HttpServerError, HttpServerRequest, HttpServerRespondable, HttpServerResponse } from "effect/http"
import { Migrator } from "../persistence/Migrator.ts"
import { RequestContext } from "./RequestContext.ts"

const REQUEST_ID_HEADER = "x-request-id"

export const resolveRequestId = (inbound: string | undefined): string =>
  inbound !== undefined && RequestIdPattern.test(inbound) ? inbound : randomUUID()

export const errorResponse = (status: number, code: string, message: string) =>
  HttpServerResponse.jsonUnsafe({ error: { code, message } }, { status })

const isApiPath = (url: string) => url === "/api" || url.startsWith("/api/") || url.startsWith("/api?")

/** The edge's ray id and, from its suffix, the data-center code (`<id>-<COLO>`), when supplied. */
const edgeIds = (headers: Readonly<Record<string, string | undefined>>) => {
  const ray = headers["cf-ray"]?.slice(0, 128)
  if (ray === undefined || ray === "") return { cf_ray: null, colo: null }
  const dash = ray.lastIndexOf("-")
  return { cf_ray: ray, colo: dash > 0 ? ray.slice(dash + 1) : null }
}

interface Outcome {
  readonly response: HttpServerResponse.HttpServerResponse
  /** Present when the failure was unexpected: logged as `http_request_failed`. */
  readonly defect?: Cause.Cause<unknown>
}

const statusText: Record<number, string> = {
  400: "bad_request",
  401: "unauthorized",
  403: "forbidden",
  404: ErrorCodes.notFound,
  405: ErrorCodes.methodNotAllowed,
  408: "request_timeout",
  409: "conflict",
  413: "payload_too_large",
  415: "unsupported_media_type",
  422: "unprocessable_entity",
  429: "too_many_requests",
  503: "service_unavailable"
}

const internal = (cause: Cause.Cause<unknown>): Outcome => ({
  response: errorResponse(500, ErrorCodes.internal, "Internal server error"),
  defect: cause
})

/** Maps a failed request to the envelope; only unexpected failures carry a defect to log. */
const outcomeOf = (cause: Cause.Cause<unknown>): Effect.Effect<Outcome> => {
  if (Cause.hasInterruptsOnly(cause)) {
    return Effect.succeed({ response: HttpServerResponse.empty({ status: 499 }) })
  }
  const failure = cause.reasons.find(Cause.isFailReason)
  if (failure === undefined) return Effect.succeed(internal(cause))
  const error = failure.error
  if (HttpServerError.isHttpServerError(error)) {
    switch (error.reason._tag) {
      case "RouteNotFound":
        return Effect.succeed({
          response: errorResponse(404, ErrorCodes.routeNotFound, "No route matches this method and path")
        })
      case "RequestParseError":
        return Effect.succeed({
          response: errorResponse(400, ErrorCodes.invalidBody, "The request body could not be read")
        })
      default:
        return Effect.succeed(internal(cause))
    }
  }
  if (HttpServerRespondable.isRespondable(error)) {
    // A library error that knows its status (e.g. an HttpApiError): keep the status, use our envelope.
    return Effect.map(HttpServerRespondable.toResponse(error), (response) =>
      response.status >= 500
        ? internal(cause)
        : {
            response: errorResponse(
              response.status,
              statusText[response.status] ?? "request_failed",
              "The request could not be processed"
            )
          }
    )
  }
  return Effect.succeed(internal(cause))
}

const stackOf = (cause: Cause.Cause<unknown>): string => {
  const defect = cause.reasons.find(Cause.isDieReason)
  if (defect && defect.defect instanceof Error && defect.defect.stack) return defect.defect.stack
  return Cause.pretty(cause)
}

const envelopeResponse = (
  status: number,
  error: { readonly error: { readonly code: string; readonly message: string } }
) => errorResponse(status, error.error.code, error.error.message)

/** The pipeline as a global router middleware; needs the `Migrator` for the `/api/*` gate. */
export const RequestPipelineLayer = HttpRouter.middleware(
  Effect.gen(function* () {
    const migrator = yield* Migrator
    const gateClosed = (closed: ServiceUnavailable) =>
      Effect.succeed(HttpServerResponse.setHeader(envelopeResponse(503, closed), "Retry-After", "5"))
    return (
      httpEffect
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const started = performance.now()
        const requestId = resolveRequestId(request.headers[REQUEST_ID_HEADER])
        const context: RequestContext["Service"] = { requestId, orgId: undefined, userId: undefined }
        const handled = isApiPath(request.url)
          ? Effect.matchEffect(migrator.gate, { onFailure: gateClosed, onSuccess: () => httpEffect })
          : httpEffect

        // The router puts the matched route into the fiber's context for the rest of the request;
        // read it right after the handler, before any enclosing combinator restores the context.
        let route: string | null = null
        const captureRoute = Effect.map(Effect.serviceOption(HttpRouter.RouteContext), (matched) => {
          if (matched._tag === "Some") route = matched.value.route.path
        })
        const { defect, response } = yield* handled.pipe(
          Effect.onExit(() => captureRoute),
          Effect.provideService(RequestContext, context),
          Effect.annotateLogs({ request_id: requestId }),
          Effect.matchCauseEffect({
            onSuccess: (response) => Effect.succeed<Outcome>({ response }),
            onFailure: outcomeOf
          })
        )
        const common = { request_id: requestId, method: request.method, route }
        if (defect !== undefined) {
          yield* Effect.logError("http_request_failed").pipe(Effect.annotateLogs({ ...common, stack: stackOf(defect) }))
        }
        yield* Effect.logInfo("http_request").pipe(
          Effect.annotateLogs({
            ...common,
            ...edgeIds(request.headers),
            status: response.status,
            duration_ms: Math.round((performance.now() - started) * 100) / 100,
            ...(context.orgId === undefined ? {} : { org_id: context.orgId }),
            ...(context.userId === undefined ? {} : { user_id: context.userId })
          })
        )
        return HttpServerResponse.setHeader(response, "X-Request-ID", requestId)
      })
  }),
  { global: true }
)

/**
 * The outermost middleware every request passes through, matched route or not
 * (docs/interface.md: Errors 1-3, Events 6, Health endpoints). In order, it:
 * - picks the request id (an inbound `X-Request-ID` matching `RequestIdPattern`, else a new one)
 *   and sets it on every response, with `X-Content-Type-Options: nosniff` and
 *   `X-Frame-Options: DENY`;
 * - refuses a NUL character in the URL with a 400 (Postgres cannot store one);
 * - refuses a body larger than `BOSUN_MAX_BODY_BYTES` with a 413: at once when `Content-Length`
 *   says so, and while reading a body sent without it (the body stops being read at the limit);
 * - holds `/api/*` behind the migration gate;
 * - turns whatever failed into the `{"error": {"code", "message"}}` envelope: unmatched routes
 *   404, unreadable bodies 400, defects 500 with a generic message (the stack goes to the
 *   `http_request_failed` log line only), and an error status a library answered in its own
 *   format (e.g. a 415 in text/plain) into the envelope, its headers kept;
 * - writes exactly one `http_request` JSON line with the matched route template, and records the
 *   request's latency in `bosun_http_request_duration_seconds` under that template.
 * It logs no header values and no bodies.
 */

import { randomBytes } from "node:crypto"
import { ErrorCodes, RequestIdPattern, type ServiceUnavailable } from "@bosun/domain"
import { LogOutput } from "@bosun/platform/JsonLogger"
import { RequestContext, type RequestContextShape } from "@bosun/platform/RequestContext"
import { ByteSize, Cause, Context, Effect, Tracer, type Types } from "effect"
import {
  HttpIncomingMessage,
  HttpRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerRespondable,
  HttpServerResponse
} from "effect/http"
import { AppConfig } from "../config/AppConfig.ts"
import { Migrator } from "../db/Migrator.ts"
import { recordHttpRequest } from "../observability/Metrics.ts"

const REQUEST_ID_HEADER = "x-request-id"

/**
 * Generated ids are this process's random 64-bit prefix and a counter: unique across processes
 * for all practical purposes, and far cheaper per request than a UUID.
 */
const processPrefix = randomBytes(8).toString("hex")
let counter = 0

export const resolveRequestId = (inbound: string | undefined): string =>
  inbound !== undefined && RequestIdPattern.test(inbound) ? inbound : `${processPrefix}-${(counter++).toString(36)}`

export const errorResponse = (status: number, code: string, message: string) =>
  HttpServerResponse.jsonUnsafe({ error: { code, message } }, { status })

/**
 * Whether a request is for `/api/*` as the router will see it: the router ignores case, collapses
 * repeated slashes and decodes `%xx`, so the check does too (else `//api/...` or `/%61pi/...`
 * would reach a handler past a closed gate).
 */
const routerPath = (url: string): string => {
  const end = url.search(/[?#]/)
  let path = end === -1 ? url : url.slice(0, end)
  try {
    path = decodeURIComponent(path)
  } catch {
    // Undecodable escapes: judge the raw text.
  }
  return path.replace(/\/+/g, "/").toLowerCase()
}

export const isApiPath = (url: string): boolean => {
  const normalized = routerPath(url)
  return normalized === "/api" || normalized.startsWith("/api/")
}

/** The webhook routes, whose bodies may be as large as their senders send (`webhookMaxBodyBytes`). */
const WEBHOOK_PATHS: ReadonlySet<string> = new Set([
  "/api/v1/github/webhooks",
  "/api/v1/linear/webhooks",
  "/api/v1/slack/events"
])

export const isWebhookPath = (url: string): boolean => WEBHOOK_PATHS.has(routerPath(url).replace(/\/$/, ""))

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

const statusMessage: Record<number, string> = {
  405: "This method is not allowed on this path",
  413: "The request body is too large",
  415: "The request body must be JSON (Content-Type: application/json)"
}

/**
 * A library answered an error status without our envelope (e.g. the `HttpApi` payload decoder's
 * 415 in text/plain for a body that is not JSON): the client gets the envelope all the same.
 */
const withEnvelope = (response: HttpServerResponse.HttpServerResponse): HttpServerResponse.HttpServerResponse => {
  if (response.status < 400 || response.status === 499) return response
  const contentType = response.body._tag === "Empty" ? undefined : response.body.contentType
  if (contentType?.includes("json")) return response
  // Keep what the library said in headers (Accept-Encoding on a 415, Allow, Retry-After, ...).
  const { "content-type": _type, "content-length": _length, ...headers } = response.headers
  return HttpServerResponse.setHeaders(
    errorResponse(
      response.status,
      statusText[response.status] ?? "request_failed",
      statusMessage[response.status] ?? "The request could not be processed"
    ),
    headers
  )
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
  // HttpApiBuilder reads a JSON body with `orDie`: a body that could not be read arrives as a defect.
  const unreadBody = cause.reasons.find(
    (reason) => Cause.isDieReason(reason) && HttpServerError.isHttpServerError(reason.defect)
  )
  if (failure === undefined && unreadBody === undefined) return Effect.succeed(internal(cause))
  const error =
    failure !== undefined
      ? failure.error
      : unreadBody !== undefined && Cause.isDieReason(unreadBody)
        ? unreadBody.defect
        : undefined
  if (HttpServerError.isHttpServerError(error)) {
    switch (error.reason._tag) {
      case "RouteNotFound":
        return Effect.succeed({
          response: errorResponse(404, ErrorCodes.routeNotFound, "No route matches this method and path")
        })
      case "RequestParseError":
        return Effect.succeed({
          response:
            error.reason.reason === "BodyTooLarge"
              ? errorResponse(413, ErrorCodes.payloadTooLarge, "The request body is larger than the limit")
              : errorResponse(400, ErrorCodes.invalidBody, "The request body could not be read")
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

/**
 * The stack of an `Error` defect. Anything else is named by its tag or constructor only: a
 * plain object handed to `Effect.die` may hold request data, and it must not reach the log.
 */
const stackOf = (cause: Cause.Cause<unknown>): string => {
  const reason = cause.reasons.find(Cause.isDieReason)
  if (reason === undefined) return "a failure without a defect (see the status)"
  const defect = reason.defect
  if (defect instanceof Error) return defect.stack ?? `${defect.name}: ${defect.message}`
  if (typeof defect === "object" && defect !== null) {
    const tag = (defect as { readonly _tag?: unknown })._tag
    return `non-Error defect: ${typeof tag === "string" ? tag : (defect.constructor?.name ?? "object")}`
  }
  return `non-Error defect of type ${typeof defect}`
}

const envelopeResponse = (
  status: number,
  error: { readonly error: { readonly code: string; readonly message: string } }
) => errorResponse(status, error.error.code, error.error.message)

/**
 * The pipeline as a global router middleware; needs the `Migrator` (the `/api/*` gate) and the
 * log output. It runs on every request, so it is written for speed: one fiber-context read for
 * the route, a plain object for the request context, the log line written directly.
 */
export const RequestPipelineLayer = HttpRouter.middleware(
  Effect.gen(function* () {
    const migrator = yield* Migrator
    const output = yield* LogOutput
    const { maxBodyBytes, webhookMaxBodyBytes } = yield* AppConfig
    // Webhook senders decide their bodies' size (GitHub: up to 25 MB); everything else gets the API limit.
    const limits = {
      api: { bytes: maxBodyBytes, size: ByteSize.bytes(BigInt(maxBodyBytes)) },
      webhook: { bytes: webhookMaxBodyBytes, size: ByteSize.bytes(BigInt(webhookMaxBodyBytes)) }
    }
    const limitFor = (url: string) => (isWebhookPath(url) ? limits.webhook : limits.api)
    const tooLarge = (bytes: number) =>
      errorResponse(413, ErrorCodes.payloadTooLarge, `The request body is larger than ${bytes} bytes`)
    const gateClosed = (closed: ServiceUnavailable) =>
      Effect.succeed(HttpServerResponse.setHeader(envelopeResponse(503, closed), "Retry-After", "5"))

    return (
      httpEffect
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
      Effect.withFiber((fiber) => {
        const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
        const started = performance.now()
        // Each read of `request.headers` copies Node's headers: read them once.
        const headers = request.headers
        const requestId = resolveRequestId(headers[REQUEST_ID_HEADER])
        const context: RequestContextShape = { requestId, orgId: undefined, userId: undefined }

        const finish = (outcome: Outcome) =>
          Effect.withFiber((inner) => {
            // The router put the matched route into the fiber's context for the rest of the
            // request; it is still there until the enclosing provideService restores the context.
            const matched = Context.getOrUndefined(inner.context, HttpRouter.RouteContext)
            const route = matched === undefined ? null : matched.route.path
            if (outcome.defect !== undefined) {
              output.write("error", "http_request_failed", {
                request_id: requestId,
                method: request.method,
                route,
                stack: stackOf(outcome.defect)
              })
            }
            const edge = edgeIds(headers)
            const elapsed = performance.now() - started
            recordHttpRequest(request.method, route, outcome.response.status, elapsed / 1000, inner.context)
            // The server span the HTTP layer opened for this request: the correlation ids on it (Events 7).
            const span = Context.getOrUndefined(inner.context, Tracer.ParentSpan)
            if (span !== undefined && span._tag === "Span" && span.sampled) {
              span.attribute("bosun.request_id", requestId)
              if (route !== null) span.attribute("http.route", route)
              if (context.orgId !== undefined) span.attribute("bosun.org_id", context.orgId)
              if (context.userId !== undefined) span.attribute("bosun.user_id", context.userId)
            }
            const fields: Record<string, unknown> = {
              request_id: requestId,
              cf_ray: edge.cf_ray,
              method: request.method,
              route,
              status: outcome.response.status,
              duration_ms: Math.round(elapsed * 100) / 100,
              colo: edge.colo
            }
            if (context.orgId !== undefined) fields.org_id = context.orgId
            if (context.userId !== undefined) fields.user_id = context.userId
            output.write("info", "http_request", fields)
            // No answer is to be sniffed into another type or framed; the dashboard adds its policy.
            return Effect.succeed(
              HttpServerResponse.setHeaders(outcome.response, {
                "X-Request-ID": requestId,
                "X-Content-Type-Options": "nosniff",
                "X-Frame-Options": "DENY"
              })
            )
          })

        // Postgres cannot store a NUL character: refuse it in the URL before it reaches a query.
        const nul = request.url.indexOf("%00")
        if (nul !== -1) {
          const query = request.url.indexOf("?")
          const inQuery = query !== -1 && query < nul
          return Effect.provideService(
            finish({
              response: errorResponse(
                400,
                inQuery ? ErrorCodes.invalidQuery : ErrorCodes.invalidParams,
                `Invalid ${inQuery ? "query parameter" : "path"}: NUL characters are not accepted`
              )
            }),
            RequestContext,
            context
          )
        }
        const limit = limitFor(request.url)
        const declaredLength = headers["content-length"]
        if (declaredLength !== undefined && Number(declaredLength) > limit.bytes) {
          return Effect.provideService(finish({ response: tooLarge(limit.bytes) }), RequestContext, context)
        }
        // Once open the gate never closes, so the path is only inspected while it is shut.
        const handled =
          !migrator.isOpen() && isApiPath(request.url)
            ? Effect.matchEffect(migrator.gate, { onFailure: gateClosed, onSuccess: () => httpEffect })
            : httpEffect
        const answered = Effect.provideService(
          Effect.matchCauseEffect(handled, {
            onSuccess: (response) => finish({ response: withEnvelope(response) }),
            onFailure: (cause) => Effect.flatMap(outcomeOf(cause), finish)
          }),
          RequestContext,
          context
        )
        // A body without Content-Length (chunked) is cut off where it passes the limit. Provided
        // around `finish` too: a provideService restores the fiber's context when its effect
        // ends, and `finish` still reads the route the router put there.
        return request.method === "GET" || request.method === "HEAD"
          ? answered
          : Effect.provideService(answered, HttpIncomingMessage.MaxBodySize, limit.size)
      })
  }),
  { global: true }
)

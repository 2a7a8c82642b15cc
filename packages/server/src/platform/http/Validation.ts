/**
 * Request validation failures as the 400 envelope (docs/interface.md: Errors; issue: "code naming
 * the failure and message naming the field"). Effect's default is a 400 with an empty body.
 *
 * The message names each offending field by where it was found (`path parameter "memory_id"`,
 * `query parameter "page_size"`, `body field "enabled"`) and what was expected; it never echoes
 * the submitted value, which may be a credential. A response that fails to encode is our bug:
 * it stays a 500 and is reported as a defect.
 *
 * Before any handler runs, the body of an endpoint that takes JSON is checked whatever its
 * `Content-Type` (`JsonText`): a NUL character or a lone surrogate in a string, or nesting deeper
 * than `API_BODY_MAX_DEPTH`, is a 400 `invalid_body` (Postgres could not store such a value, and
 * without this check it would end as a 500). A body sent without `Content-Type` is a 415 (the
 * decoder would read it as JSON). Webhook routes read their raw bodies themselves and check them
 * after their signature.
 */
import { BadRequest, ErrorCodes, RequestValidation } from "@bosun/domain"
import { Effect, Layer } from "effect"
import { HttpMethod, HttpServerRequest } from "effect/http"
import { type HttpApiEndpoint, HttpApiError } from "effect/http-api"
import type { unhandled } from "effect/Types"
import { API_BODY_MAX_DEPTH, describeJsonTextProblem, jsonTextProblem } from "./JsonText.ts"
import { errorResponse, isWebhookPath } from "./RequestPipeline.ts"
import { issueLines } from "./SchemaIssues.ts"

const slots = {
  Params: { code: ErrorCodes.invalidParams, noun: "path parameter" },
  Query: { code: ErrorCodes.invalidQuery, noun: "query parameter" },
  Headers: { code: ErrorCodes.invalidHeaders, noun: "header" },
  Payload: { code: ErrorCodes.invalidBody, noun: "body field" }
} as const

export const describeSchemaError = (error: HttpApiError.HttpApiSchemaError): BadRequest => {
  const slot = slots[error.kind as keyof typeof slots] ?? slots.Payload
  const parts = issueLines(error.cause.issue).map(({ message, path }) => {
    const where =
      path.length === 0 ? (error.kind === "Payload" ? "body" : slot.noun) : `${slot.noun} "${path.join(".")}"`
    return `${where}: ${message}`
  })
  return BadRequest.fromCode(slot.code, parts.length > 0 ? `Invalid ${parts.join("; ")}` : `Invalid ${slot.noun}`)
}

const unsupportedMediaType = errorResponse(
  415,
  ErrorCodes.unsupportedMediaType,
  "The request body must be JSON (Content-Type: application/json)"
)

/**
 * The check of a JSON endpoint's body: a 415 response for a body without `Content-Type`, a
 * `BadRequest` for bad JSON text, else nothing. An unreadable body is left to the decoder's own 400.
 */
const checkJsonBody = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (!HttpMethod.hasBody(request.method) || isWebhookPath(request.url)) return undefined
  const text = yield* Effect.orElseSucceed(request.text, () => "")
  if (text === "") return undefined
  if (request.headers["content-type"] === undefined) return unsupportedMediaType
  const problem = jsonTextProblem(text, API_BODY_MAX_DEPTH)
  if (problem === undefined) return undefined
  return yield* BadRequest.fromCode(
    ErrorCodes.invalidBody,
    `Invalid body: ${describeJsonTextProblem(problem, API_BODY_MAX_DEPTH)}`
  )
})

/** Whether the endpoint decodes a JSON body (decided once per endpoint, when its route is built). */
const takesJson = (endpoint: HttpApiEndpoint.Top) => endpoint.payload.has("application/json")

export const RequestValidationLayer = Layer.succeed(RequestValidation)((httpEffect, { endpoint }) => {
  const validated = Effect.catch(
    httpEffect,
    (error): Effect.Effect<never, BadRequest | unhandled> =>
      HttpApiError.HttpApiSchemaError.is(error)
        ? error.kind === "Body" || error.kind === "ResponseHeaders"
          ? Effect.die(error)
          : Effect.fail(describeSchemaError(error))
        : Effect.fail(error)
  )
  return takesJson(endpoint)
    ? Effect.flatMap(checkJsonBody, (refused) => (refused === undefined ? validated : Effect.succeed(refused)))
    : validated
})

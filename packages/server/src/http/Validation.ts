/**
 * Request validation failures as the 400 envelope (spec: Errors; issue: "code naming the failure
 * and message naming the field"). Effect's default is a 400 with an empty body.
 *
 * The message names each offending field by where it was found (`path parameter "memory_id"`,
 * `query parameter "page_size"`, `body field "enabled"`) and what was expected; it never echoes
 * the submitted value, which may be a credential. A response that fails to encode is our bug:
 * it stays a 500 and is reported as a defect.
 */
import { BadRequest, ErrorCodes, RequestValidation } from "@bosun/domain"
import { Effect } from "effect"
import { type HttpApiError, HttpApiMiddleware } from "effect/http-api"
import { issueLines } from "../SchemaIssues.ts"

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

export const RequestValidationLayer = HttpApiMiddleware.layerSchemaErrorTransform(RequestValidation, (error) =>
  error.kind === "Body" || error.kind === "ResponseHeaders"
    ? Effect.die(error)
    : Effect.fail(describeSchemaError(error))
)

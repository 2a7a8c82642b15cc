/**
 * Request validation failures as the 400 envelope (spec: Errors; issue: "code naming the failure
 * and message naming the field"). Effect's default is a 400 with an empty body.
 *
 * The message names each offending field by where it was found (`path parameter "memory_id"`,
 * `query parameter "page_size"`, `body field "enabled"`) and what was expected; it never echoes
 * the submitted value, which may be a credential. A response that fails to encode is our bug:
 * it stays a 500 and is reported as a defect.
 *
 * A JSON body holding the escape `\u0000` is refused as 400 `invalid_body` before any handler
 * runs: Postgres `text` and `jsonb` cannot hold NUL, so such a value could never be stored, and
 * without this check it would end as a 500 from the database (or a half-done write).
 */
import { BadRequest, ErrorCodes, RequestValidation } from "@bosun/domain"
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiError } from "effect/http-api"
import type { unhandled } from "effect/Types"
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

/** `\u0000` as an escape, not preceded by an escaping backslash (`\\u0000` is text, not NUL). */
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/

/** Whether a JSON text holds a NUL character in some string. */
export const holdsNul = (json: string): boolean => NUL_ESCAPE.test(json)

const nulRefused = BadRequest.fromCode(
  ErrorCodes.invalidBody,
  "Invalid body: a string holds a NUL character (\\u0000), which Bosun cannot store"
)

/** Refuses a JSON body with a NUL; an unreadable body is left to the decoder's own 400. */
const refuseNul = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (!(request.headers["content-type"] ?? "").toLowerCase().includes("json")) return
  const text = yield* Effect.orElseSucceed(request.text, () => "")
  if (holdsNul(text)) return yield* nulRefused
})

export const RequestValidationLayer = Layer.succeed(RequestValidation)((httpEffect) =>
  Effect.andThen(
    refuseNul,
    Effect.catch(
      httpEffect,
      (error): Effect.Effect<never, BadRequest | unhandled> =>
        HttpApiError.HttpApiSchemaError.is(error)
          ? error.kind === "Body" || error.kind === "ResponseHeaders"
            ? Effect.die(error)
            : Effect.fail(describeSchemaError(error))
          : Effect.fail(error)
    )
  )
)

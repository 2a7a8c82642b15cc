/**
 * The raw body of a webhook (GitHub's, Linear's): signatures are over the exact bytes, so these
 * routes read text themselves. Over the webhook limit (`BOSUN_WEBHOOK_MAX_BODY_BYTES`): 413;
 * unreadable: 400. Either way as the error response, ready to answer. `refuseBadPayload` is the
 * check of a payload's JSON text (`JsonText`, nesting up to `WEBHOOK_MAX_DEPTH`); a route runs it
 * once the signature has verified, so a forged request is still refused as unsigned (401).
 */
import { ErrorCodes } from "@bosun/domain"
import { Effect, Result } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import { describeJsonTextProblem, jsonTextProblem, WEBHOOK_MAX_DEPTH } from "./JsonText.ts"
import { errorResponse } from "./RequestPipeline.ts"

export const readWebhookBody = (
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<Result.Result<string, HttpServerResponse.HttpServerResponse>> =>
  Effect.map(Effect.result(request.text), (read) =>
    Result.isSuccess(read)
      ? Result.succeed(read.success)
      : Result.fail(
          read.failure.reason._tag === "RequestParseError" && read.failure.reason.reason === "BodyTooLarge"
            ? errorResponse(413, ErrorCodes.payloadTooLarge, "The request body is larger than the webhook limit")
            : errorResponse(400, ErrorCodes.invalidBody, "The request body could not be read")
        )
  )

/** The 400 for a payload holding a NUL, a lone surrogate or nesting past the limit; undefined when fine. */
export const refuseBadPayload = (json: string): HttpServerResponse.HttpServerResponse | undefined => {
  const problem = jsonTextProblem(json, WEBHOOK_MAX_DEPTH)
  return problem === undefined
    ? undefined
    : errorResponse(400, ErrorCodes.invalidBody, `Invalid body: ${describeJsonTextProblem(problem, WEBHOOK_MAX_DEPTH)}`)
}

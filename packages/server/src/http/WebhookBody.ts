/**
 * The raw body of a webhook (GitHub's, Linear's): signatures are over the exact bytes, so these
 * routes read text themselves. Over the webhook limit (`BOSUN_WEBHOOK_MAX_BODY_BYTES`): 413;
 * unreadable: 400. Either way as the error response, ready to answer.
 */
import { ErrorCodes } from "@bosun/domain"
import { Effect, Result } from "effect"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
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

/**
 * How a failed API call reaches a screen: the API's own `{error:{code,message}}` and its error
 * class (`Unauthorized`, `NotFound`, …), or why there was no answer. Shared by the client
 * (`client.ts`) and the first screen's early answers (`earlyAnswers.ts`).
 */
import {
  BadGateway,
  BadRequest,
  Conflict,
  ErrorBody,
  Forbidden,
  NotFound,
  ServiceUnavailable,
  Unauthorized
} from "@bosun/domain/ApiError"
import { Schema, SchemaAST } from "effect"

/** What a failed call says: the API's code and message, or why there was no answer. */
export class ApiFailure extends Error {
  readonly code: string
  /** The contract's error class (`Unauthorized`, `NotFound`, …), or "" when there was no API answer. */
  readonly kind: string
  constructor(code: string, message: string, kind = "") {
    super(message)
    this.code = code
    this.kind = kind
  }
}

export const noAnswer = () => new ApiFailure("network", "Bosun did not answer; check that the server is up.")

export const unexpected = (error: unknown) =>
  new ApiFailure("unexpected", error instanceof Error ? error.message : "Bosun answered something unexpected.")

const Envelope = Schema.Struct({ error: ErrorBody })
const decodeEnvelope = Schema.decodeUnknownOption(Envelope)

/** The contract's error classes by the HTTP status each is sent with. */
const kindByStatus = new Map(
  [BadRequest, Unauthorized, Forbidden, NotFound, Conflict, BadGateway, ServiceUnavailable].map((error) => {
    const { httpApiStatus, identifier } = SchemaAST.resolve(error.ast) ?? {}
    return [httpApiStatus, String(identifier)] as const
  })
)

/** The failure an error response of `status` carries in `body`, read with the contract's envelope. */
export const failureOfResponse = (status: number, body: unknown): ApiFailure => {
  const envelope = decodeEnvelope(body)
  return envelope._tag === "Some"
    ? new ApiFailure(envelope.value.error.code, envelope.value.error.message, kindByStatus.get(status) ?? "")
    : unexpected(new Error(`Bosun answered ${status} without its error envelope.`))
}

/** The message to show for any rejection of a call. */
export const messageOf = (error: unknown): string =>
  error instanceof ApiFailure ? error.message : error instanceof Error ? error.message : String(error)

/** A 401: no session, or one that expired — the sign-in page's cue. */
export const isUnauthorized = (error: unknown): boolean => error instanceof ApiFailure && error.kind === "Unauthorized"

/** A 404, which the API also answers for another organization's resources. */
export const isNotFound = (error: unknown): boolean => error instanceof ApiFailure && error.kind === "NotFound"

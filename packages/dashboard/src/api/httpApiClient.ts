/**
 * The typed client: `HttpApiClient` over the domain's whole `BosunApi`, so every
 * path, query, payload and response is the contract's own Schema and cannot drift from what the
 * server serves. Loaded by `client.ts` on the first call, outside the first screen's bundle
 * (budget: bench/README.md "Dashboard budget"). Same origin, so the browser sends the `bosun_session`
 * cookie itself.
 */
import { BosunApi } from "@bosun/domain/api/Api"
import { Cause, type Effect, Exit, Layer, ManagedRuntime } from "effect"
import { FetchHttpClient } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { takeEarly } from "./earlyResponses.ts"
import { ApiFailure, noAnswer, unexpected } from "./failure.ts"

/**
 * The transport: `fetch`, except that a GET `early.ts` already started and nothing has taken
 * yet takes that response instead of asking again.
 */
const fetchTakingEarly: typeof globalThis.fetch = (input, init) => {
  const url = input instanceof Request ? input.url : String(input)
  const early = (init?.method ?? "GET") === "GET" ? takeEarly(url) : undefined
  return early === undefined ? globalThis.fetch(input, init) : early.catch(() => globalThis.fetch(input, init))
}

const runtime = ManagedRuntime.make(
  Layer.merge(FetchHttpClient.layer, Layer.succeed(FetchHttpClient.Fetch, fetchTakingEarly))
)

const clientEffect = HttpApiClient.make(BosunApi, { baseUrl: window.location.origin })

export type Client = Effect.Success<typeof clientEffect>

const client = runtime.runPromise(clientEffect)

const envelopeOf = (error: unknown): { code: string; message: string } | undefined => {
  if (typeof error !== "object" || error === null || !("error" in error)) return undefined
  const body = (error as { error: unknown }).error
  if (typeof body !== "object" || body === null) return undefined
  const { code, message } = body as { code?: unknown; message?: unknown }
  return typeof code === "string" && typeof message === "string" ? { code, message } : undefined
}

const failureOf = (cause: Cause.Cause<unknown>): ApiFailure => {
  const error = Cause.squash(cause)
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : ""
  const envelope = envelopeOf(error)
  if (envelope !== undefined) return new ApiFailure(envelope.code, envelope.message, tag)
  return tag === "HttpClientError" ? noAnswer() : unexpected(error)
}

/** Runs one request with the client; rejects with an `ApiFailure`. */
export const run = async <A, E>(request: (client: Client) => Effect.Effect<A, E>): Promise<A> => {
  const exit = await runtime.runPromiseExit(request(await client))
  if (Exit.isSuccess(exit)) return exit.value
  throw failureOf(exit.cause)
}

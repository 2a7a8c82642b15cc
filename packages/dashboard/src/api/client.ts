/**
 * The dashboard's one way to the API (issue 11): clients derived from the domain's `BosunApi`
 * by `HttpApiClient`, so every path, query, payload and response is the contract's own Schema
 * and cannot drift from what the server serves. Same origin, so the browser sends the
 * `bosun_session` cookie itself. `call` runs one request and turns its failure into an
 * `ApiFailure` carrying the API's own `{error:{code,message}}`, which screens show as is.
 *
 * The first screen (the shell and the pull-request list) uses `callFirst`, a client of just the
 * contract's identity and pull-request groups, so its bundle carries only their Schemas; `call`
 * loads the whole contract with the first screen that needs it (budget: README, Dashboard).
 */
import { IdentityApi } from "@bosun/domain/api/IdentityApi"
import { RequestValidation } from "@bosun/domain/api/Middleware"
import { PullRequestsApi } from "@bosun/domain/api/PullRequestsApi"
import { Cause, Effect, Exit, Layer, ManagedRuntime } from "effect"
import { FetchHttpClient } from "effect/http"
import { HttpApi, HttpApiClient } from "effect/http-api"
import { takeEarly } from "./earlyResponses.ts"

const baseUrl = window.location.origin

/**
 * The transport: `fetch`, except that a GET `early.ts` already started (the first screen's `/me`
 * and list, asked while this bundle loaded) takes that response instead of asking again.
 */
const fetchTakingEarly: typeof globalThis.fetch = (input, init) => {
  const url = input instanceof Request ? input.url : String(input)
  const early = (init?.method ?? "GET") === "GET" ? takeEarly(url) : undefined
  return early === undefined ? globalThis.fetch(input, init) : early.catch(() => globalThis.fetch(input, init))
}

const runtime = ManagedRuntime.make(
  Layer.merge(FetchHttpClient.layer, Layer.succeed(FetchHttpClient.Fetch, fetchTakingEarly))
)

/** The groups of `BosunApi` the first screen calls, as the contract declares them. */
const FirstScreenApi = HttpApi.make("bosun").add(IdentityApi).add(PullRequestsApi).middleware(RequestValidation)

const firstClientEffect = HttpApiClient.make(FirstScreenApi, { baseUrl })

const wholeClientEffect = Effect.promise(() => import("@bosun/domain/api/Api")).pipe(
  Effect.flatMap(({ BosunApi }) => HttpApiClient.make(BosunApi, { baseUrl }))
)

export type FirstScreenClient = Effect.Success<typeof firstClientEffect>
export type Client = Effect.Success<typeof wholeClientEffect>

let firstClient: Promise<FirstScreenClient> | undefined
let client: Promise<Client> | undefined

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
  if (tag === "HttpClientError") return new ApiFailure("network", "Bosun did not answer; check that the server is up.")
  return new ApiFailure("unexpected", error instanceof Error ? error.message : "Bosun answered something unexpected.")
}

const run = async <A, E>(effect: Effect.Effect<A, E>): Promise<A> => {
  const exit = await runtime.runPromiseExit(effect)
  if (Exit.isSuccess(exit)) return exit.value
  throw failureOf(exit.cause)
}

/** Runs one API call; rejects with an `ApiFailure`. */
export const call = async <A, E>(request: (client: Client) => Effect.Effect<A, E>): Promise<A> => {
  client ??= runtime.runPromise(wholeClientEffect)
  return run(request(await client))
}

/** `call` for the first screen's groups (identity, pull requests), without loading the whole contract. */
export const callFirst = async <A, E>(request: (client: FirstScreenClient) => Effect.Effect<A, E>): Promise<A> => {
  firstClient ??= runtime.runPromise(firstClientEffect)
  return run(request(await firstClient))
}

/** The message to show for any rejection of `call`. */
export const messageOf = (error: unknown): string =>
  error instanceof ApiFailure ? error.message : error instanceof Error ? error.message : String(error)

/** A 401: no session, or one that expired — the sign-in page's cue. */
export const isUnauthorized = (error: unknown): boolean => error instanceof ApiFailure && error.kind === "Unauthorized"

/** A 404, which the API also answers for another organization's resources. */
export const isNotFound = (error: unknown): boolean => error instanceof ApiFailure && error.kind === "NotFound"

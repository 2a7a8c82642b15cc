/**
 * The runtime protocol over HTTP (docs/interface.md: Agent runtime protocol; Authentication 6;
 * Versioning 2). Routes:
 *
 * | method and path | answers |
 * | --- | --- |
 * | `GET /healthz` | `RuntimeHealth`, no token needed |
 * | `POST /v1/runs` | 201 `RunState` for a new run, 200 for the same request again, 409 for another request under the same ids, 429 when full |
 * | `GET /v1/runs/{id}/events?after=N` | NDJSON: the stored events after N, then live ones, a heartbeat line every period; ends after `run.finished` |
 * | `GET /v1/runs/{id}/result` | `RunState`: `status: RUNNING` while it runs, final once it has ended |
 * | `GET /v1/runs/{id}/files/{path}` | a file of the run (`changes.diff`, `outputs/...`, `artifacts/...`), streamed |
 * | `DELETE /v1/runs/{id}` | cancels (SIGTERM, SIGKILL after the grace period) and answers the final `RunState` |
 * | `POST /v1/tools/agent-auth/fetch` | makes one sign-in request for the control plane (`AgentAuthFetch` → `AgentAuthFetchResult`) to an allowed origin; 403 for any other |
 *
 * `{id}` is the attempt id. Every `/v1` request needs `Authorization: Bearer <token>` (401
 * otherwise, compared in constant time) and `X-Bosun-Protocol: 1.x` (missing or malformed: 400;
 * another major: 426). Errors use the control plane's envelope `{"error": {"code", "message"}}`.
 */
import { createHash, timingSafeEqual } from "node:crypto"
import {
  AgentAuthFetch,
  type AgentAuthFetchResult,
  RUNTIME_PROTOCOL_HEADER,
  RUNTIME_PROTOCOL_VERSION,
  RunRequest,
  type RunState,
  RuntimeHealth,
  RuntimeId
} from "@bosun/domain"
import { Effect, Layer, Option, Redacted, Schema, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Runs } from "./Runs.ts"
import { RuntimeConfig, type RuntimeSettings } from "./RuntimeConfig.ts"
import { Toolchain } from "./Toolchain.ts"

const envelope = (status: number, code: string, message: string, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe({ error: { code, message } }, { status, ...(headers ? { headers } : {}) })

const MAJOR = RUNTIME_PROTOCOL_VERSION.split(".")[0]

const digest = (value: string) => createHash("sha256").update(value).digest()

const decodeRequest = Schema.decodeUnknownEffect(RunRequest)
const isRuntimeId = Schema.is(RuntimeId)
const After = Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(0))
const decodeAfter = Schema.decodeUnknownOption(After)

const decodeAuthFetch = Schema.decodeUnknownEffect(AgentAuthFetch)

/** Headers that belong to one hop, never forwarded either way. */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length"
])
const AUTH_FETCH_TIMEOUT_MS = 15_000
const AUTH_FETCH_MAX_BYTES = 1_048_576

const stateResponse = (state: RunState, status = 200) => HttpServerResponse.jsonUnsafe(state, { status })

/** The 400 message for a run request: which field, what was expected; never the value sent. */
const describeIssue = (error: Schema.SchemaError) => {
  const text = String(error.message).split("\n").slice(0, 6).join("; ")
  return `Invalid run request: ${text}`
}

/**
 * The token and protocol checks of every `/v1` route; the handler runs only when both pass.
 * `expected` is the digest of the whole `Authorization` header the runtime accepts.
 */
const guardedBy =
  (expected: Buffer) =>
  <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const authorization = request.headers.authorization ?? ""
      if (!timingSafeEqual(digest(authorization), expected)) {
        return Effect.succeed(
          envelope(401, "unauthorized", "A valid Authorization: Bearer token is required", {
            "www-authenticate": "Bearer"
          })
        )
      }
      const version = request.headers[RUNTIME_PROTOCOL_HEADER]
      const match = version === undefined ? null : /^(\d+)\.(\d+)$/.exec(version)
      if (match === null) {
        return Effect.succeed(
          envelope(400, "protocol_version_required", `X-Bosun-Protocol: ${RUNTIME_PROTOCOL_VERSION} is required`)
        )
      }
      if (match[1] !== MAJOR) {
        return Effect.succeed(
          envelope(
            426,
            "protocol_version_unsupported",
            `This runtime speaks protocol ${RUNTIME_PROTOCOL_VERSION}; ${version} is not compatible`,
            { [RUNTIME_PROTOCOL_HEADER]: RUNTIME_PROTOCOL_VERSION }
          )
        )
      }
      return handler
    })

const unknownRun = (id: string) => envelope(404, "run_not_found", `No run has the id ${id}`)

/** `POST /v1/runs`: decodes the request and starts the run, or answers why not. */
const startRun = (runs: Runs["Service"]) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* Effect.option(request.json)
    if (Option.isNone(body)) return envelope(400, "invalid_body", "The body is not JSON")
    const decoded = yield* Effect.result(decodeRequest(body.value, { onExcessProperty: "error" }))
    if (decoded._tag === "Failure") return envelope(400, "invalid_body", describeIssue(decoded.failure))
    const started = yield* Effect.result(runs.start(decoded.success))
    if (started._tag === "Success") return stateResponse(started.success.state, started.success.created ? 201 : 200)
    const error = started.failure
    switch (error._tag) {
      case "RunConflict":
        return envelope(409, "run_conflict", error.message)
      case "TooManyRuns":
        return envelope(429, "too_many_runs", `This runtime runs at most ${error.maxRuns} runs at once`, {
          "retry-after": "5"
        })
      case "UnknownAgent":
        return envelope(422, "agent_unavailable", error.message)
    }
  })

/** `GET /v1/runs/{id}/events`: the run's NDJSON tail after `after`. */
const runEvents = (runs: Runs["Service"], id: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const afterText = new URL(request.url, "http://runtime").searchParams.get("after") ?? "0"
    const after = decodeAfter(afterText)
    if (Option.isNone(after)) {
      return envelope(400, "invalid_query_parameter", 'Invalid query parameter "after": a sequence number ≥ 0')
    }
    const tail = yield* runs.tail(id, after.value)
    if (Option.isNone(tail)) return unknownRun(id)
    return HttpServerResponse.stream(Stream.encodeText(tail.value), {
      contentType: "application/x-ndjson",
      headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
    })
  })

/** `GET /v1/runs/{id}/files/{path}`: a file of the run, streamed. */
const runFile = (runs: Runs["Service"], id: string) =>
  Effect.gen(function* () {
    const params = yield* HttpRouter.params
    const filePath = params["*"] ?? ""
    const found = yield* runs.file(id, filePath)
    if (Option.isNone(found)) {
      return envelope(404, "file_not_found", `Run ${id} has no file ${JSON.stringify(filePath)}`)
    }
    return yield* HttpServerResponse.file(found.value.absolute, {
      contentType: found.value.meta.content_type,
      headers: { "x-content-sha256": found.value.meta.sha256 }
    }).pipe(Effect.orDie)
  })

/** Makes the sign-in request, without following redirects, and reads its whole answer; hop-by-hop headers stay out. */
const relayAuthFetch = (call: AgentAuthFetch, target: URL) => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(call.headers ?? {})) {
    if (!HOP_BY_HOP.has(name.toLowerCase())) headers[name] = value
  }
  return Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(target, {
        method: call.method,
        headers,
        redirect: "manual",
        signal: AbortSignal.any([signal, AbortSignal.timeout(AUTH_FETCH_TIMEOUT_MS)]),
        ...(call.body === undefined ? {} : { body: call.body })
      })
      const bytes = new Uint8Array(await response.arrayBuffer())
      const kept: Record<string, string> = {}
      response.headers.forEach((value, name) => {
        if (!HOP_BY_HOP.has(name)) kept[name] = value
      })
      return { status: response.status, headers: kept, bytes }
    },
    catch: (cause) => cause
  })
}

/** `POST /v1/tools/agent-auth/fetch`: one sign-in request for the control plane, to an allowed origin only. */
const agentAuthFetch = (config: RuntimeSettings) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* Effect.option(request.json)
    if (Option.isNone(body)) return envelope(400, "invalid_body", "The body is not JSON")
    const decoded = yield* Effect.result(decodeAuthFetch(body.value, { onExcessProperty: "error" }))
    if (decoded._tag === "Failure") return envelope(400, "invalid_body", describeIssue(decoded.failure))
    const call = decoded.success
    const target = new URL(call.url)
    if (!config.agentAuthOrigins.has(target.origin)) {
      return envelope(
        403,
        "origin_not_allowed",
        `${target.origin} is not an agent sign-in origin this runtime may reach`
      )
    }
    const answered = yield* relayAuthFetch(call, target).pipe(Effect.result)
    if (answered._tag === "Failure") {
      return envelope(502, "agent_auth_unreachable", `${target.origin} could not be reached from the runtime`)
    }
    if (answered.success.bytes.length > AUTH_FETCH_MAX_BYTES) {
      return envelope(502, "agent_auth_answer_too_large", `${target.origin} answered more than 1 MiB`)
    }
    const result: AgentAuthFetchResult = {
      status: answered.success.status,
      headers: answered.success.headers,
      body: new TextDecoder().decode(answered.success.bytes)
    }
    return HttpServerResponse.jsonUnsafe(result)
  })

export const RuntimeRoutes = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* RuntimeConfig
    const runs = yield* Runs
    const toolchain = yield* Toolchain
    const guarded = guardedBy(digest(`Bearer ${Redacted.value(config.token)}`))

    const attemptId = Effect.map(HttpRouter.params, (params) => params.id ?? "")
    const badId = envelope(400, "invalid_path_parameter", 'Invalid path parameter "id"')
    const withRun = <R>(handle: (id: string) => Effect.Effect<HttpServerResponse.HttpServerResponse, never, R>) =>
      guarded(Effect.flatMap(attemptId, (id) => (isRuntimeId(id) ? handle(id) : Effect.succeed(badId))))

    const health = Effect.sync(() =>
      HttpServerResponse.jsonUnsafe(
        RuntimeHealth.make({
          status: "ok",
          protocol_version: RUNTIME_PROTOCOL_VERSION,
          toolchain: toolchain.profile,
          active_runs: runs.activeCount(),
          max_runs: runs.maxRuns
        })
      )
    )
    const result = withRun((id) =>
      Effect.map(runs.state(id), (state) => (Option.isSome(state) ? stateResponse(state.value) : unknownRun(id)))
    )
    const cancel = withRun((id) =>
      Effect.map(runs.cancel(id), (state) => (Option.isSome(state) ? stateResponse(state.value) : unknownRun(id)))
    )

    return HttpRouter.addAll([
      HttpRouter.route("POST", "/v1/tools/agent-auth/fetch", guarded(agentAuthFetch(config))),
      HttpRouter.route("GET", "/healthz", health),
      HttpRouter.route("POST", "/v1/runs", guarded(startRun(runs))),
      HttpRouter.route(
        "GET",
        "/v1/runs/:id/events",
        withRun((id) => runEvents(runs, id))
      ),
      HttpRouter.route("GET", "/v1/runs/:id/result", result),
      HttpRouter.route(
        "GET",
        "/v1/runs/:id/files/*",
        withRun((id) => runFile(runs, id))
      ),
      HttpRouter.route("DELETE", "/v1/runs/:id", cancel)
    ])
  })
)

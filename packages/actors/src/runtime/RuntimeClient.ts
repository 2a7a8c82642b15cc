/**
 * The control plane's client of the agent runtime protocol: one client (undici) speaking it to any
 * provider. Every sandbox provider ends in a runtime reached at some URL with some token; the
 * execute step talks to it only through this.
 *
 * - Every request carries the bearer token and `X-Bosun-Protocol`.
 * - Connection failures (refused, reset, timed out: a runtime still starting, a sandbox whose
 *   preview URL is not routed yet) are retried with backoff; HTTP answers are not, except that
 *   `POST /v1/runs` is idempotent by its ids, so it is retried on connection failures too.
 * - `events` follows a run's tail to `run.finished`, resuming with `after=` the last sequence
 *   number it delivered whenever the connection drops: no gap, no duplicate.
 * - Answers are decoded with the domain's protocol schemas; the runtime's error envelope becomes
 *   a `RuntimeError` whose `reason` says what the caller can do about it.
 */
import {
  RUNTIME_PROTOCOL_HEADER,
  RUNTIME_PROTOCOL_VERSION,
  RunEvent,
  RunHeartbeat,
  type RunRequest,
  RunState,
  RuntimeHealth
} from "@bosun/domain"
import { Context, Data, Duration, Effect, Layer, Queue, Redacted, Schedule, Schema, Stream } from "effect"
import { Agent, type Dispatcher, request } from "undici"

export class RuntimeError extends Data.TaggedError("RuntimeError")<{
  /**
   * Unauthorized: the token was refused; ProtocolMismatch: 426; Conflict: 409 (another request
   * under these ids); Busy: 429 (try later); NotFound: no such run or file; Invalid: 400/422 (the
   * request or the agent is wrong: do not retry); Unavailable: the runtime could not be reached
   * or failed (retryable).
   */
  readonly reason: "Unauthorized" | "ProtocolMismatch" | "Conflict" | "Busy" | "NotFound" | "Invalid" | "Unavailable"
  readonly status: number | null
  readonly message: string
}> {}

export interface RuntimeEndpoint {
  readonly baseUrl: URL
  readonly token: Redacted.Redacted<string>
  /**
   * Headers a provider's gateway needs in front of the runtime (HOSTED_SANDBOX: the preview
   * token), sent with every request and, like the token, never logged.
   */
  readonly headers?: Readonly<Record<string, Redacted.Redacted<string>>>
}

export type TailLine = RunEvent | typeof RunHeartbeat.Type

const decodeState = Schema.decodeUnknownEffect(RunState)
const decodeHealth = Schema.decodeUnknownEffect(RuntimeHealth)
const decodeLine = Schema.decodeUnknownSync(Schema.Union([RunEvent, RunHeartbeat]))

const codeOf = (cause: unknown): string | undefined => {
  if (typeof cause !== "object" || cause === null) return undefined
  const code = (cause as { code?: unknown }).code
  if (typeof code === "string") return code
  return codeOf((cause as { cause?: unknown }).cause)
}

const unreachable = (cause: unknown) =>
  new RuntimeError({
    reason: "Unavailable",
    status: null,
    message: `The runtime could not be reached (${codeOf(cause) ?? "connection failed"})`
  })

const reasonOf = (status: number): RuntimeError["reason"] =>
  status === 401 || status === 403
    ? "Unauthorized"
    : status === 426
      ? "ProtocolMismatch"
      : status === 409
        ? "Conflict"
        : status === 429
          ? "Busy"
          : status === 404
            ? "NotFound"
            : status === 400 || status === 422
              ? "Invalid"
              : "Unavailable"

/** The runtime's envelope message, or the status when the body is not one. */
const errorOf = (status: number, body: string) => {
  const parsed = Schema.decodeUnknownOption(
    Schema.fromJsonString(Schema.Struct({ error: Schema.Struct({ code: Schema.String, message: Schema.String }) }))
  )(body)
  return new RuntimeError({
    reason: reasonOf(status),
    status,
    message: parsed._tag === "Some" ? `${parsed.value.error.code}: ${parsed.value.error.message}` : `HTTP ${status}`
  })
}

export interface RuntimeClientOptions {
  /** Connection retries: the first waits `retryBase`, each next one twice as long (default 100 ms, 6 times: ≈ 6 s). */
  readonly retryBase?: Duration.Duration
  readonly retryTimes?: number
}

export interface RuntimeConnection {
  readonly health: Effect.Effect<typeof RuntimeHealth.Type, RuntimeError>
  readonly start: (
    run: RunRequest
  ) => Effect.Effect<{ readonly state: RunState; readonly created: boolean }, RuntimeError>
  readonly result: (attemptId: string) => Effect.Effect<RunState, RuntimeError>
  readonly cancel: (attemptId: string) => Effect.Effect<RunState, RuntimeError>
  /** The run's events after `after`, live, to `run.finished`, heartbeats included. */
  readonly events: (attemptId: string, after: number) => Stream.Stream<TailLine, RuntimeError>
  /** A file of an ended run (`changes.diff`, `outputs/...`, `artifacts/...`), whole. */
  readonly file: (attemptId: string, path: string) => Effect.Effect<Uint8Array, RuntimeError>
}

export class RuntimeClient extends Context.Service<
  RuntimeClient,
  { readonly connect: (endpoint: RuntimeEndpoint, options?: RuntimeClientOptions) => RuntimeConnection }
>()("bosun/actors/RuntimeClient") {
  /** One keep-alive connection pool for every runtime this process talks to, closed with the layer. */
  static readonly layer = Layer.effect(
    RuntimeClient,
    Effect.gen(function* () {
      const dispatcher = yield* Effect.acquireRelease(
        Effect.sync(() => new Agent({ keepAliveTimeout: 10_000, connect: { timeout: 5_000 } })),
        (agent) => Effect.promise(() => agent.close())
      )
      return RuntimeClient.of({ connect: (endpoint, options) => connection(dispatcher, endpoint, options) })
    })
  )
}

/** How a connection reaches its runtime: the pool, the request URL and headers, the retry of connection failures. */
interface Wire {
  readonly dispatcher: Dispatcher
  readonly url: (path: string) => URL
  readonly headers: () => Record<string, string>
  readonly retry: { readonly schedule: Schedule.Schedule<Duration.Duration>; readonly times: number }
}

/** Where a tail is: the last sequence number delivered, and whether the run's end was. */
interface TailCursor {
  last: number
  finished: boolean
}

/**
 * Reads one events answer line by line to its end, or to `run.finished`: heartbeats are
 * delivered as they come, events only after `cursor.last`, which each moves on.
 */
const deliverTail = async (body: AsyncIterable<Uint8Array>, cursor: TailCursor, deliver: (line: TailLine) => void) => {
  let buffered = ""
  const decoder = new TextDecoder()
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true })
    let newline = buffered.indexOf("\n")
    while (newline !== -1) {
      const line = decodeLine(JSON.parse(buffered.slice(0, newline)))
      buffered = buffered.slice(newline + 1)
      newline = buffered.indexOf("\n")
      if (line.type === "heartbeat") {
        deliver(line)
        continue
      }
      const event = line as RunEvent
      if (event.seq <= cursor.last) continue
      cursor.last = event.seq
      deliver(event)
      if (event.type === "run.finished") {
        cursor.finished = true
        return
      }
    }
  }
}

const tailEvents = (wire: Wire, attemptId: string, after: number): Stream.Stream<TailLine, RuntimeError> =>
  Stream.callback<TailLine, RuntimeError>((queue) =>
    Effect.gen(function* () {
      const cursor: TailCursor = { last: after, finished: false }
      /**
       * One connection: delivers what it reads and says whether it got anywhere. A connection
       * that ends before `run.finished` after delivering events is simply followed again; one
       * that delivers nothing fails, so the retry backs off (and gives up after its budget).
       */
      const follow = Effect.tryPromise({
        try: async (signal) => {
          const response = await request(
            wire.url(`/v1/runs/${encodeURIComponent(attemptId)}/events?after=${cursor.last}`),
            { dispatcher: wire.dispatcher, method: "GET", headers: wire.headers(), signal }
          )
          if (response.statusCode !== 200) {
            return { failed: errorOf(response.statusCode, await response.body.text()), progressed: false }
          }
          const before = cursor.last
          await deliverTail(response.body, cursor, (line) => Queue.offerUnsafe(queue, line))
          return { failed: undefined, progressed: cursor.finished || cursor.last > before }
        },
        catch: unreachable
      }).pipe(
        Effect.flatMap(({ failed, progressed }) =>
          failed !== undefined
            ? Effect.fail(failed)
            : cursor.finished || progressed
              ? Effect.void
              : Effect.fail(
                  new RuntimeError({
                    reason: "Unavailable",
                    status: null,
                    message: `The runtime's event stream of ${attemptId} ended after ${cursor.last} without a new event or the run's end`
                  })
                )
        ),
        // A resumed tail starts after what was delivered, so a retry never repeats an event.
        Effect.retry({ ...wire.retry, while: (error) => error.reason === "Unavailable" })
      )
      while (!cursor.finished) yield* follow
      Queue.endUnsafe(queue)
    })
  )

const connection = (
  dispatcher: Dispatcher,
  endpoint: RuntimeEndpoint,
  options: RuntimeClientOptions = {}
): RuntimeConnection => {
  const retry = {
    schedule: Schedule.exponential(options.retryBase ?? Duration.millis(100)),
    times: options.retryTimes ?? 6
  }
  const gateway = Object.fromEntries(
    Object.entries(endpoint.headers ?? {}).map(([name, value]) => [name, Redacted.value(value)])
  )
  const headers = () => ({
    ...gateway,
    authorization: `Bearer ${Redacted.value(endpoint.token)}`,
    [RUNTIME_PROTOCOL_HEADER]: RUNTIME_PROTOCOL_VERSION,
    "content-type": "application/json"
  })
  const url = (path: string) => new URL(path.replace(/^\//, ""), endpoint.baseUrl.href.replace(/\/?$/, "/"))
  const wire: Wire = { dispatcher, url, headers, retry }

  /** One request, its body read whole; connection failures retried, HTTP errors as RuntimeError. */
  const send = (method: Dispatcher.HttpMethod, path: string, body?: unknown) =>
    Effect.tryPromise({
      try: async (signal) => {
        const response = await request(url(path), {
          dispatcher,
          method,
          headers: headers(),
          signal,
          ...(body === undefined ? {} : { body: JSON.stringify(body) })
        })
        return { status: response.statusCode, bytes: new Uint8Array(await response.body.arrayBuffer()) }
      },
      catch: unreachable
    }).pipe(Effect.retry({ ...retry, while: (error) => error.reason === "Unavailable" }))

  const json = (method: Dispatcher.HttpMethod, path: string, body?: unknown) =>
    Effect.flatMap(send(method, path, body), ({ status, bytes }) => {
      const text = new TextDecoder().decode(bytes)
      if (status >= 400) return Effect.fail(errorOf(status, text))
      return Effect.try({
        try: (): { status: number; value: unknown } => ({ status, value: JSON.parse(text) }),
        catch: () =>
          new RuntimeError({ reason: "Unavailable", status, message: "The runtime answered something not JSON" })
      })
    })

  const asState = (value: unknown) =>
    decodeState(value).pipe(
      Effect.mapError(
        () =>
          new RuntimeError({
            reason: "Unavailable",
            status: null,
            message: "The runtime answered an unreadable run state"
          })
      )
    )

  return {
    health: Effect.flatMap(json("GET", "/healthz"), ({ value }) =>
      decodeHealth(value).pipe(
        Effect.mapError(
          () =>
            new RuntimeError({
              reason: "Unavailable",
              status: null,
              message: "The runtime answered an unreadable health"
            })
        )
      )
    ),
    start: (run) =>
      Effect.flatMap(json("POST", "/v1/runs", run), ({ status, value }) =>
        Effect.map(asState(value), (state) => ({ state, created: status === 201 }))
      ),
    result: (attemptId) =>
      Effect.flatMap(json("GET", `/v1/runs/${encodeURIComponent(attemptId)}/result`), ({ value }) => asState(value)),
    cancel: (attemptId) =>
      Effect.flatMap(json("DELETE", `/v1/runs/${encodeURIComponent(attemptId)}`), ({ value }) => asState(value)),
    events: (attemptId, after) => tailEvents(wire, attemptId, after),
    file: (attemptId, path) =>
      Effect.flatMap(send("GET", `/v1/runs/${encodeURIComponent(attemptId)}/files/${path}`), ({ status, bytes }) =>
        status >= 400 ? Effect.fail(errorOf(status, new TextDecoder().decode(bytes))) : Effect.succeed(bytes)
      )
  }
}

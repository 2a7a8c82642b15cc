/**
 * HOSTED_SANDBOX: each attempt gets a sandbox of its own from a hosted-sandbox REST API
 * in Daytona's shape, driven with the official `@daytona/api-client`. The sandbox runs the runtime
 * image (its entrypoint is the runtime, configured by the env Bosun passes), its egress is the
 * network allow list of the attempt's tier (CIDRs; an empty list blocks all), and the control plane
 * reaches the runtime through the provider's preview URL with the preview token plus the
 * instance-scoped runtime token (`credential_mode: INLINE`). It does not build or push the image.
 *
 * Daytona calls: `GET /sandbox?labels=` (find this attempt's sandbox), `POST /sandbox` (create),
 * `GET /sandbox/{id}` (wait for `started`), `POST /sandbox/{id}/start` (a stopped one),
 * `GET /sandbox/{id}/ports/{port}/preview-url`, `DELETE /sandbox/{id}`. The tests run it against
 * `@bosun/testing/FakeSandboxApi`, which speaks those calls and the preview gateway with the real
 * runtime process behind it; Daytona's image builds, regions and quotas beyond an injected
 * refusal are not covered there.
 */
import { isCompatibleRuntimeProtocol, RUNTIME_PROTOCOL_VERSION } from "@bosun/domain"
import { Configuration, type CreateSandbox, SandboxApi } from "@daytona/api-client"
import { Data, Duration, Effect, Layer, Redacted, Schedule } from "effect"
import { RuntimeClient, type RuntimeEndpoint } from "../runtime/RuntimeClient.ts"
import type { EgressTier } from "./InjectionProxy.ts"
import { type InstanceClass, type Sandbox, SandboxError, SandboxProvider, type SandboxSpec } from "./SandboxProvider.ts"

export interface InstanceResources {
  readonly cpu: number
  /** GiB. */
  readonly memory: number
  /** GiB. */
  readonly disk: number
}

export interface HostedSandboxSettings {
  /** The API root, e.g. `https://app.daytona.io/api`. */
  readonly apiUrl: URL
  readonly apiKey: Redacted.Redacted<string>
  /** `X-Daytona-Organization-ID`: only needed when authenticating with a user token instead of an API key. */
  readonly organizationId?: string
  /** The region sandboxes are created in; the API's default when omitted. */
  readonly target?: string
  /** The runtime image: a snapshot made from it, or the image itself (the API builds it on first use). */
  readonly runtimeImage: { readonly snapshot: string } | { readonly image: string }
  /** The instance-scoped bearer token of the runtime, given to the sandbox as `BOSUN_RUNTIME_TOKEN`. */
  readonly runtimeToken: Redacted.Redacted<string>
  /** Default 8787. */
  readonly runtimePort?: number
  /** Default: standard-2 → 2 CPU / 4 GiB, standard-4 → 4 CPU / 8 GiB, 10 GiB disk each. */
  readonly resources?: Partial<Record<InstanceClass, InstanceResources>>
  /** Per egress tier, the comma-separated CIDRs the sandbox may reach; empty denies all egress. */
  readonly networkAllowList: Readonly<Record<EgressTier, string>>
  /** From create (or find) to a runtime answering its health through the preview URL. Default 3 minutes. */
  readonly readinessTimeout?: Duration.Duration
  /** Minutes without activity before the provider stops (and so deletes) a sandbox; default 60. */
  readonly idleStopMinutes?: number
  /** Wall-clock cap on a sandbox's life in minutes, whatever its state; none by default. */
  readonly maxLifetimeMinutes?: number
}

const defaultResources: Record<InstanceClass, InstanceResources> = {
  "standard-2": { cpu: 2, memory: 4, disk: 10 },
  "standard-4": { cpu: 4, memory: 8, disk: 10 }
}

const POLL = Duration.millis(250)
const PREVIEW_TOKEN_HEADER = "x-daytona-preview-token"

/** A failed API call: the HTTP status (null when there was no answer) and what the API said. */
class ApiError extends Data.TaggedError("ApiError")<{ readonly status: number | null; readonly detail: string }> {}

const codeOf = (cause: unknown): string | undefined => {
  if (typeof cause !== "object" || cause === null) return undefined
  if ("code" in cause && typeof cause.code === "string") return cause.code
  return "cause" in cause ? codeOf(cause.cause) : undefined
}

/** The answer of an axios error, read structurally (axios is the client's dependency, not ours). */
const answerOf = (cause: unknown): { readonly status: number; readonly data: unknown } | undefined => {
  if (typeof cause !== "object" || cause === null || !("response" in cause)) return undefined
  const response = cause.response
  if (typeof response !== "object" || response === null || !("status" in response)) return undefined
  if (typeof response.status !== "number") return undefined
  return { status: response.status, data: "data" in response ? response.data : undefined }
}

/** Daytona answers errors as `{statusCode, message, error}`, `message` a string or a list of them. */
const messageOf = (status: number, data: unknown): string => {
  if (typeof data === "object" && data !== null && "message" in data) {
    const message = data.message
    if (typeof message === "string" && message !== "") return message
    if (Array.isArray(message) && message.length > 0) return message.map(String).join("; ")
  }
  if (typeof data === "string" && data.trim() !== "") return data.trim().slice(0, 300)
  return `HTTP ${status}`
}

const reasonOf = (status: number | null): SandboxError["reason"] =>
  status === null || status >= 500 || status === 429 ? "Unavailable" : status === 404 ? "NotFound" : "Refused"

const isStarted = (state: string | undefined) => state === "started"
const isStartable = (state: string | undefined) => state === "stopped" || state === "archived" || state === "paused"
const isGone = (state: string | undefined) => state === "destroyed" || state === "destroying"
const isBroken = (state: string | undefined) => state === "error" || state === "build_failed"

/** The hosted-sandbox API as the provider calls it: one organization, errors scrubbed of Bosun's secrets. */
interface Hosted {
  readonly settings: HostedSandboxSettings
  readonly api: SandboxApi
  readonly organization: string | undefined
  readonly runtime: RuntimeClient["Service"]
  readonly port: number
  readonly scrub: (text: string) => string
  readonly call: <A>(
    request: (options: { readonly signal: AbortSignal }) => Promise<{ readonly data: A }>
  ) => Effect.Effect<A, ApiError>
  /** The provider's error for a failed call made to `doing`. */
  readonly failed: (doing: string) => (error: ApiError) => SandboxError
}

const makeHosted = (settings: HostedSandboxSettings, runtime: RuntimeClient["Service"]): Hosted => {
  const origin = settings.apiUrl.origin
  const api = new SandboxApi(
    new Configuration({
      basePath: settings.apiUrl.href.replace(/\/+$/, ""),
      accessToken: () => Redacted.value(settings.apiKey),
      baseOptions: { timeout: 60_000 }
    })
  )
  // The API may echo what it was sent; secrets never reach a message.
  const secrets = [Redacted.value(settings.apiKey), Redacted.value(settings.runtimeToken)]
  const scrub = (text: string) => secrets.reduce((out, secret) => out.split(secret).join("[redacted]"), text)

  const call = <A>(request: (options: { readonly signal: AbortSignal }) => Promise<{ readonly data: A }>) =>
    Effect.tryPromise({
      try: (signal) => request({ signal }).then((response) => response.data),
      catch: (cause) => {
        const answer = answerOf(cause)
        return answer === undefined
          ? new ApiError({ status: null, detail: `could not be reached (${codeOf(cause) ?? "connection failed"})` })
          : new ApiError({ status: answer.status, detail: scrub(messageOf(answer.status, answer.data)) })
      }
    })

  const failed = (doing: string) => (error: ApiError) =>
    new SandboxError({
      reason: reasonOf(error.status),
      message:
        error.status === null
          ? `The hosted-sandbox API at ${origin} ${error.detail}`
          : `The hosted-sandbox API at ${origin} could not ${doing} (HTTP ${error.status}): ${error.detail}`
    })

  return {
    settings,
    api,
    organization: settings.organizationId,
    runtime,
    port: settings.runtimePort ?? 8787,
    scrub,
    call,
    failed
  }
}

const remove = (hosted: Hosted, id: string) => {
  const { api, organization, call } = hosted
  return call((options) => api.deleteSandbox(id, organization, options)).pipe(
    Effect.asVoid,
    // Gone already, or on its way: releasing is done either way.
    Effect.catchIf(
      (error) => error.status === 404,
      () => Effect.void
    ),
    Effect.catchIf(
      (error) => error.status !== null && error.status < 500 && error.status !== 429,
      (error) =>
        call((options) => api.getSandbox(id, organization, undefined, options)).pipe(
          Effect.flatMap((sandbox) => (isGone(sandbox.state) ? Effect.void : Effect.fail(error))),
          Effect.catchIf(
            (again) => again.status === 404,
            () => Effect.void
          )
        )
    ),
    Effect.mapError(hosted.failed(`delete sandbox ${id}`))
  )
}

/** `listSandboxes` takes 30 positional filters before the request options: only the limit and labels are set. */
const listByLabels = (hosted: Hosted, labels: string, options: { readonly signal: AbortSignal }) => {
  const args: Parameters<SandboxApi["listSandboxes"]> = [
    hosted.organization,
    undefined,
    20,
    undefined,
    undefined,
    labels
  ]
  args[30] = options
  return hosted.api.listSandboxes(...args)
}

/** This attempt's sandbox, if an earlier acquire made one; broken ones are deleted and skipped. */
const find = Effect.fn("HostedSandbox.find")(function* (hosted: Hosted, spec: SandboxSpec) {
  const labels = JSON.stringify({ "bosun.attempt": spec.attemptId, "bosun.organization": spec.organizationId })
  const page = yield* hosted
    .call((options) => listByLabels(hosted, labels, options))
    .pipe(Effect.mapError(hosted.failed("list sandboxes")))
  for (const sandbox of page.items) if (isBroken(sandbox.state)) yield* Effect.ignore(remove(hosted, sandbox.id))
  return page.items.find((sandbox) => !isGone(sandbox.state) && !isBroken(sandbox.state))
})

/** The sandbox an attempt asks for: the runtime image and its env, the class's resources, the tier's egress. */
const createBodyOf = (settings: HostedSandboxSettings, port: number, spec: SandboxSpec): CreateSandbox => {
  const resources = settings.resources?.[spec.instanceClass] ?? defaultResources[spec.instanceClass]
  const allowList = settings.networkAllowList[spec.egressTier]
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .join(",")
  return {
    ...("snapshot" in settings.runtimeImage
      ? { snapshot: settings.runtimeImage.snapshot }
      : { buildInfo: { dockerfileContent: `FROM ${settings.runtimeImage.image}\n` } }),
    ...(settings.target === undefined ? {} : { target: settings.target }),
    env: {
      BOSUN_RUNTIME_TOKEN: Redacted.value(settings.runtimeToken),
      BOSUN_RUNTIME_HOST: "0.0.0.0",
      BOSUN_RUNTIME_PORT: String(port)
    },
    labels: {
      "bosun.attempt": spec.attemptId,
      "bosun.run": spec.runId,
      "bosun.organization": spec.organizationId
    },
    public: false,
    cpu: resources.cpu,
    memory: resources.memory,
    disk: resources.disk,
    // Deny by default: a tier with no configured networks gets none.
    ...(allowList === "" ? { networkBlockAll: true } : { networkBlockAll: false, networkAllowList: allowList }),
    // One attempt per sandbox: one that idles is a leak (its release never ran), and a
    // stopped one is deleted at once rather than kept for a restart that will not come.
    autoStopInterval: settings.idleStopMinutes ?? 60,
    autoDeleteInterval: 0,
    ...(settings.maxLifetimeMinutes === undefined ? {} : { ttlMinutes: settings.maxLifetimeMinutes })
  }
}

const create = Effect.fn("HostedSandbox.create")(function* (hosted: Hosted, spec: SandboxSpec) {
  const body = createBodyOf(hosted.settings, hosted.port, spec)
  return yield* hosted
    .call((options) => hosted.api.createSandbox(body, hosted.organization, options))
    .pipe(Effect.mapError(hosted.failed("create a sandbox")))
})

/** Until the sandbox is `started`, starting it once if it is stopped. */
const started = Effect.fn("HostedSandbox.started")(function* (hosted: Hosted, id: string) {
  const { api, organization, call, failed } = hosted
  let startRequested = false
  for (;;) {
    const sandbox = yield* call((options) => api.getSandbox(id, organization, undefined, options)).pipe(
      Effect.mapError((error) =>
        // Deleted under us (by hand, or its lifetime ran out): the next acquire makes another.
        error.status === 404
          ? new SandboxError({ reason: "Unavailable", message: `Sandbox ${id} was deleted while starting` })
          : failed(`read sandbox ${id}`)(error)
      )
    )
    if (isStarted(sandbox.state)) return
    if (isGone(sandbox.state)) {
      return yield* new SandboxError({
        reason: "Unavailable",
        message: `Sandbox ${id} was deleted while starting`
      })
    }
    if (isBroken(sandbox.state)) {
      return yield* new SandboxError({
        // A failed build is the image's fault; an errored sandbox is the provider's.
        reason: sandbox.state === "build_failed" ? "Refused" : "Unavailable",
        message: `Sandbox ${id} is in state ${sandbox.state}: ${hosted.scrub(sandbox.errorReason ?? "no reason given")}`
      })
    }
    if (isStartable(sandbox.state) && !startRequested) {
      yield* call((options) => api.startSandbox(id, organization, options)).pipe(
        Effect.mapError(failed(`start sandbox ${id}`))
      )
      startRequested = true
      continue
    }
    yield* Effect.sleep(POLL)
  }
})

/**
 * Starts the sandbox and reaches its runtime through the preview URL; `seen.last` says how far
 * it got, for the message when the readiness budget runs out.
 */
const reach = (hosted: Hosted, id: string, seen: { last: string }) =>
  Effect.gen(function* () {
    yield* started(hosted, id)
    seen.last = "its preview URL was not issued"
    const preview = yield* hosted
      .call((options) => hosted.api.getPortPreviewUrl(id, hosted.port, hosted.organization, options))
      .pipe(Effect.mapError(hosted.failed(`issue a preview URL for sandbox ${id}`)))
    const endpoint: RuntimeEndpoint = {
      baseUrl: new URL(preview.url),
      token: hosted.settings.runtimeToken,
      headers: { [PREVIEW_TOKEN_HEADER]: Redacted.make(preview.token) }
    }
    // Until the runtime listens the gateway answers 502s: retried here, within the readiness budget.
    const health = yield* hosted.runtime.connect(endpoint, { retryTimes: 0 }).health.pipe(
      Effect.tapError((error) => Effect.sync(() => (seen.last = error.message))),
      Effect.retry({
        schedule: Schedule.spaced(POLL),
        while: (error) => error.reason === "Unavailable" || error.reason === "Busy"
      }),
      Effect.mapError(
        (error) =>
          new SandboxError({
            reason: error.reason === "Unauthorized" || error.reason === "ProtocolMismatch" ? "Refused" : "Unavailable",
            message: `The runtime in sandbox ${id}: ${error.message}`
          })
      )
    )
    if (!isCompatibleRuntimeProtocol(health.protocol_version)) {
      return yield* new SandboxError({
        reason: "Refused",
        message: `The runtime in sandbox ${id} speaks protocol ${health.protocol_version}; Bosun speaks ${RUNTIME_PROTOCOL_VERSION}`
      })
    }
    return endpoint
  })

/** A started sandbox whose runtime answers through the preview URL and speaks this protocol. */
const ready = Effect.fn("HostedSandbox.ready")(function* (hosted: Hosted, id: string) {
  const readiness = hosted.settings.readinessTimeout ?? Duration.minutes(3)
  const seen = { last: "it was not started" }
  return yield* reach(hosted, id, seen).pipe(
    Effect.timeoutOrElse({
      duration: readiness,
      orElse: () =>
        Effect.fail(
          new SandboxError({
            reason: "Unavailable",
            message: `Sandbox ${id} was not ready within ${Duration.format(readiness)}: ${seen.last}`
          })
        )
    })
  )
})

const acquire = Effect.fn("HostedSandbox.acquire")(function* (hosted: Hosted, spec: SandboxSpec) {
  // Idempotent by attempt: a retried acquire finds the sandbox by its labels. Acquires of
  // one attempt never run at once (one workflow step), so find-then-create does not race.
  const existing = yield* find(hosted, spec)
  const id = existing?.id ?? (yield* create(hosted, spec)).id
  const endpoint = yield* ready(hosted, id).pipe(
    // A sandbox that will never serve (bad image, wrong protocol, token refused) is not kept.
    Effect.tapError((error) => (error.reason === "Refused" ? Effect.ignore(remove(hosted, id)) : Effect.void))
  )
  const sandbox: Sandbox = { id, provider: "HOSTED_SANDBOX", endpoint, credentialMode: "INLINE" }
  return sandbox
})

const release = Effect.fn("HostedSandbox.release")(function* (
  hosted: Hosted,
  sandbox: Pick<Sandbox, "id" | "provider">
) {
  yield* remove(hosted, sandbox.id)
})

export const layerHostedSandbox = (settings: HostedSandboxSettings) =>
  Layer.effect(
    SandboxProvider,
    Effect.gen(function* () {
      const hosted = makeHosted(settings, yield* RuntimeClient)
      return SandboxProvider.of({
        name: "HOSTED_SANDBOX",
        acquire: (spec) => acquire(hosted, spec),
        release: (sandbox) => release(hosted, sandbox)
      })
    })
  )

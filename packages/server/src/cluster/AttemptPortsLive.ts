/**
 * The server's side of the attempt ports (`@bosun/actors/attempt/AttemptPorts`): sealed run
 * requests in the blob store, the sandbox providers this instance has, and the Migrator's gate.
 *
 * A sealed request is the JSON of the run request plus the injection grants, sealed with the
 * instance master key (AES-256-GCM) and bound to its blob key and attempt, so an envelope copied
 * to another key or attempt does not open. Requests live only as long as their attempt needs
 * them; the key rotation re-seals database columns, and older requests stay readable through
 * `BOSUN_PREVIOUS_MASTER_KEYS` like any envelope.
 */
import {
  AttemptError,
  MigrationGate,
  SandboxProviders,
  type SealedAttempt,
  SealedRequests
} from "@bosun/actors/attempt/AttemptPorts"
import { RuntimeClient } from "@bosun/actors/runtime/RuntimeClient"
import { layerExternalRuntime } from "@bosun/actors/sandbox/ExternalRuntime"
import { layerHostedSandbox } from "@bosun/actors/sandbox/HostedSandbox"
import { InjectionProxy } from "@bosun/actors/sandbox/InjectionProxy"
import { layerPlatformContainer } from "@bosun/actors/sandbox/PlatformContainer"
import { SandboxProvider } from "@bosun/actors/sandbox/SandboxProvider"
import { Context, Effect, Layer, Option, Redacted, Stream } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { Secrets } from "../crypto/Secrets.ts"
import { Migrator } from "../persistence/Migrator.ts"
import { AgentRuntime } from "../runtime/AgentRuntime.ts"
import { BlobStore } from "../storage/BlobStore.ts"

/** Spec: What the service does 4 — `runs/{run}/{attempt}/request.enc`. */
export const requestKeyOf = (runId: string, attempt: number) => `runs/${runId}/${attempt}/request.enc`

const placeOf = (attemptId: string, key: string) => ({ table: "blob", column: key, rowId: attemptId })

export const SealedRequestsLive = Layer.effect(
  SealedRequests,
  Effect.gen(function* () {
    const secrets = yield* Secrets
    const blobs = yield* BlobStore
    const unavailable = (message: string) =>
      new AttemptError({ code: "blob_store_unavailable", message, retryable: true })
    return SealedRequests.of({
      write: (run, sealed) =>
        Effect.gen(function* () {
          const key = requestKeyOf(run.runId, run.attempt)
          const plaintext = Redacted.make(
            JSON.stringify({
              request: sealed.request,
              grants: sealed.grants.map((grant) => ({ ...grant, value: Redacted.value(grant.value) }))
            })
          )
          const envelope = yield* secrets.seal(plaintext, placeOf(run.attemptId, key))
          yield* blobs
            .put(key, envelope, { contentType: "application/octet-stream" })
            .pipe(Effect.mapError((error) => unavailable(error.message)))
          return key
        }).pipe(Effect.withSpan("SealedRequests.write")),
      read: (run, key) =>
        Effect.gen(function* () {
          const body = yield* blobs.get(key).pipe(Effect.mapError((error) => unavailable(error.message)))
          const chunks = yield* Stream.runCollect(body).pipe(Effect.mapError((error) => unavailable(error.message)))
          const envelope = Buffer.concat(Array.from(chunks))
          const opened = yield* secrets
            .open(envelope, placeOf(run.attemptId, key))
            .pipe(
              Effect.mapError(
                (error) =>
                  new AttemptError({ code: "sealed_request_unreadable", message: error.message, retryable: false })
              )
            )
          const parsed = JSON.parse(Redacted.value(opened)) as {
            readonly request: SealedAttempt["request"]
            readonly grants: ReadonlyArray<{ placeholder: string; value: string; hosts: ReadonlyArray<string> }>
          }
          return {
            request: parsed.request,
            grants: parsed.grants.map((grant) => ({ ...grant, value: Redacted.make(grant.value) }))
          } satisfies SealedAttempt
        }).pipe(Effect.withSpan("SealedRequests.read"))
    })
  })
)

export const MigrationGateLive = Layer.effect(
  MigrationGate,
  Effect.map(Migrator, (migrator) => MigrationGate.of({ awaitReady: migrator.awaitReady }))
)

/**
 * The providers this instance has: EXTERNAL_RUNTIME always (the operator's runtime, or the
 * embedded one); PLATFORM_CONTAINER, with the credential-injection egress proxy its pods go out
 * through, and HOSTED_SANDBOX when they are configured (`config/SandboxConfig.ts`). An API-only
 * process runs no attempt, so it opens neither. A repository configured for a provider that is
 * not set up here fails its attempts with `sandbox_provider_unconfigured`.
 */
export const SandboxProvidersLive = Layer.effect(
  SandboxProviders,
  Effect.gen(function* () {
    const runtime = yield* AgentRuntime
    const config = yield* AppConfig
    /** Built in this layer's scope: the proxy's listener lives as long as the providers. */
    const providerOf = <E, R>(layer: Layer.Layer<SandboxProvider, E, R>) =>
      Effect.map(Layer.build(layer), (context) => Context.get(context, SandboxProvider))
    const runsAttempts = config.role !== "api"
    const providers = [
      yield* providerOf(layerExternalRuntime({ url: runtime.endpoint.baseUrl, token: runtime.endpoint.token })),
      ...(runsAttempts && Option.isSome(config.sandboxes.platformContainer)
        ? [
            yield* providerOf(
              layerPlatformContainer(config.sandboxes.platformContainer.value.provider).pipe(
                Layer.provide(InjectionProxy.layer(config.sandboxes.platformContainer.value.proxy))
              )
            )
          ]
        : []),
      ...(runsAttempts && Option.isSome(config.sandboxes.hostedSandbox)
        ? [yield* providerOf(layerHostedSandbox(config.sandboxes.hostedSandbox.value))]
        : [])
    ]
    const byName = new Map(providers.map((provider) => [provider.name, provider] as const))
    yield* Effect.logInfo("sandbox_providers").pipe(Effect.annotateLogs({ providers: [...byName.keys()] }))
    return SandboxProviders.of({ get: (name) => byName.get(name) })
  })
).pipe(Layer.provideMerge(RuntimeClient.layer))

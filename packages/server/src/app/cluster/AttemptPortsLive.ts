/**
 * The server's side of the attempt ports (`@bosun/actors/attempt/AttemptPorts`): sealed run
 * requests and kept run outputs in the blob store, the sandbox providers this instance has, and
 * the Migrator's gate.
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
  RunOutputs,
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
import { RunState } from "@bosun/domain"
import { Context, Effect, Layer, Option, Redacted, Schema, Stream } from "effect"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { Secrets } from "../../platform/crypto/Secrets.ts"
import { Migrator } from "../../platform/db/Migrator.ts"
import { AgentRuntime } from "../../platform/runtime/AgentRuntime.ts"
import { BlobStore } from "../../platform/storage/BlobStore.ts"

/** `runs/{run}/{attempt}/request.enc` (docs/interface.md: What the service does 4). */
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

/**
 * The blob store keeps run artifacts, diffs and outputs (docs/interface.md: What the service
 * does 4) — `runs/{run}/outputs/{path}`, with `runs/{run}/outputs.json` (the attempt, the runtime's
 * result, which files exist) written last. Outputs are the repository's own content and the agent's
 * text, not secrets: kept unsealed.
 */
export const outputKeyOf = (runId: string, path: string) => `runs/${runId}/outputs/${path}`
const manifestKeyOf = (runId: string) => `runs/${runId}/outputs.json`

const Manifest = Schema.fromJsonString(
  Schema.Struct({ attempt: Schema.Int, result: RunState, files: Schema.Record(Schema.String, Schema.Boolean) })
)
const decodeManifest = Schema.decodeUnknownEffect(Manifest)
const encodeManifest = Schema.encodeSync(Manifest)

export const RunOutputsLive = Layer.effect(
  RunOutputs,
  Effect.gen(function* () {
    const blobs = yield* BlobStore
    const unavailable = (error: { readonly message: string }) =>
      new AttemptError({ code: "blob_store_unavailable", message: error.message, retryable: true })
    const bytesOf = (key: string) =>
      blobs.get(key).pipe(
        Effect.flatMap(Stream.runCollect),
        Effect.map((chunks) => new Uint8Array(Buffer.concat(Array.from(chunks)))),
        Effect.map(Option.some),
        Effect.catchIf(
          (error) => error.reason === "NotFound",
          () => Effect.succeed(Option.none<Uint8Array>())
        ),
        Effect.mapError(unavailable)
      )
    const manifestOf = (runId: string) =>
      Effect.flatMap(bytesOf(manifestKeyOf(runId)), (bytes) =>
        Option.isNone(bytes)
          ? Effect.succeed(Option.none<typeof Manifest.Type>())
          : decodeManifest(new TextDecoder().decode(bytes.value)).pipe(
              Effect.map(Option.some),
              Effect.mapError(
                (error) =>
                  new AttemptError({ code: "run_outputs_unreadable", message: error.message, retryable: false })
              )
            )
      )
    return RunOutputs.of({
      keep: (run, result, files) =>
        Effect.gen(function* () {
          for (const file of files) {
            if (file.bytes === null) continue
            yield* blobs
              .put(outputKeyOf(run.runId, file.path), file.bytes, { contentType: "application/octet-stream" })
              .pipe(Effect.mapError(unavailable))
          }
          const manifest = encodeManifest({
            attempt: run.attempt,
            result,
            files: Object.fromEntries(files.map((file) => [file.path, file.bytes !== null]))
          })
          yield* blobs
            .put(manifestKeyOf(run.runId), new TextEncoder().encode(manifest), { contentType: "application/json" })
            .pipe(Effect.mapError(unavailable))
        }).pipe(Effect.withSpan("RunOutputs.keep")),
      kept: (run) =>
        Effect.map(
          manifestOf(run.runId),
          Option.map((manifest) => ({ attempt: manifest.attempt, result: manifest.result }))
        ).pipe(Effect.withSpan("RunOutputs.kept")),
      read: (run, path) =>
        Effect.gen(function* () {
          const manifest = yield* manifestOf(run.runId)
          const bytes =
            Option.isSome(manifest) && manifest.value.files[path] === true
              ? yield* bytesOf(outputKeyOf(run.runId, path))
              : Option.none<Uint8Array>()
          if (Option.isNone(bytes)) {
            return yield* new AttemptError({
              code: "output_missing",
              message: `the agent did not write ${path}`,
              retryable: false
            })
          }
          return bytes.value
        }).pipe(Effect.withSpan("RunOutputs.read"))
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
 * through, and HOSTED_SANDBOX when they are configured (`platform/config/SandboxConfig.ts`). An API-only
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

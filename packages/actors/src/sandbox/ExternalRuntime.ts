/**
 * EXTERNAL_RUNTIME, the default sandbox provider: a runtime the operator runs — on a
 * VM, in their own cluster, or the local one `npm start` launches on 8787 — reached at one
 * configured URL with an organization-scoped token. Nothing is created or destroyed per attempt:
 * the sandbox is the runtime, and each attempt is a run in it with its own workspace. `acquire`
 * checks that the runtime answers and speaks this protocol, so an unreachable runtime fails the
 * acquire step (retryable) instead of the execute step.
 */
import { isCompatibleRuntimeProtocol, RUNTIME_PROTOCOL_VERSION } from "@bosun/domain"
import { Effect, Layer, type Redacted } from "effect"
import { RuntimeClient } from "../runtime/RuntimeClient.ts"
import { SandboxError, SandboxProvider } from "./SandboxProvider.ts"

export interface ExternalRuntimeSettings {
  readonly url: URL
  readonly token: Redacted.Redacted<string>
}

export const layerExternalRuntime = (settings: ExternalRuntimeSettings) =>
  Layer.effect(
    SandboxProvider,
    Effect.gen(function* () {
      const client = yield* RuntimeClient
      const endpoint = { baseUrl: settings.url, token: settings.token }
      const connection = client.connect(endpoint)
      return SandboxProvider.of({
        name: "EXTERNAL_RUNTIME",
        acquire: Effect.fn("ExternalRuntime.acquire")(function* (spec) {
          const health = yield* connection.health.pipe(
            Effect.mapError(
              (error) =>
                new SandboxError({
                  reason: "Unavailable",
                  message: `The external runtime at ${settings.url.origin}: ${error.message}`
                })
            )
          )
          if (!isCompatibleRuntimeProtocol(health.protocol_version)) {
            return yield* new SandboxError({
              reason: "Refused",
              message: `The external runtime speaks protocol ${health.protocol_version}; Bosun speaks ${RUNTIME_PROTOCOL_VERSION}`
            })
          }
          return {
            id: `external:${spec.attemptId}`,
            provider: "EXTERNAL_RUNTIME" as const,
            endpoint,
            credentialMode: "INLINE" as const
          }
        }),
        release: () => Effect.void
      })
    })
  )

/**
 * One conformance suite for every sandbox provider (STYLE: ports, one suite for all adapters):
 * an acquired sandbox's runtime answers its health with this protocol and runs a start; acquire
 * is idempotent for an attempt; release succeeds, twice. Providers so far: EXTERNAL_RUNTIME
 * against the real runtime process. HOSTED_SANDBOX and PLATFORM_CONTAINER join with their fakes.
 */
import * as path from "node:path"
import { makeFixtures, type RuntimeProcess, runRequest, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { RuntimeClient } from "../src/runtime/RuntimeClient.ts"
import { layerExternalRuntime } from "../src/sandbox/ExternalRuntime.ts"
import { SandboxProvider } from "../src/sandbox/SandboxProvider.ts"

const fixtures = makeFixtures()
let runtime: RuntimeProcess

beforeAll(async () => {
  runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data"),
    BOSUN_RUNTIME_AGENTS: JSON.stringify({
      quick: { command: [fixtures.script("quick.sh", 'echo \'{"type":"done"}\'')] }
    })
  })
})
afterAll(async () => {
  await runtime?.stop()
})

const providers: ReadonlyArray<{
  readonly name: string
  readonly layer: () => Layer.Layer<SandboxProvider | RuntimeClient>
}> = [
  {
    name: "EXTERNAL_RUNTIME",
    layer: () =>
      layerExternalRuntime({ url: new URL(runtime.base), token: Redacted.make(TOKEN) }).pipe(
        Layer.provideMerge(RuntimeClient.layer)
      )
  }
]

const spec = (attemptId: string) => ({
  organizationId: "org-1",
  runId: attemptId.split(":")[0] ?? attemptId,
  attemptId,
  instanceClass: "standard-2" as const,
  egressTier: "STRICT" as const,
  agent: "CUSTOM" as const,
  grants: []
})

for (const provider of providers) {
  describe(`sandbox provider conformance: ${provider.name}`, () => {
    it.live(
      "acquires a sandbox whose runtime speaks this protocol and runs an attempt; acquire is idempotent; release twice succeeds",
      () =>
        Effect.gen(function* () {
          const sandboxes = yield* SandboxProvider
          assert.strictEqual(sandboxes.name, provider.name)
          const sandbox = yield* sandboxes.acquire(spec(`${provider.name}-run:1`))
          assert.strictEqual(sandbox.provider, provider.name)
          const again = yield* sandboxes.acquire(spec(`${provider.name}-run:1`))
          assert.strictEqual(again.id, sandbox.id)
          const connection = (yield* RuntimeClient).connect(sandbox.endpoint)
          assert.strictEqual((yield* connection.health).protocol_version, "1.0")
          const request = runRequest(fixtures, {
            run_id: `${provider.name}-run`,
            attempt_id: `${provider.name}-run:1`,
            agent: { kind: "CUSTOM", profile: "quick" },
            credential_mode: sandbox.credentialMode
          }) as unknown as Parameters<typeof connection.start>[0]
          const started = yield* connection.start(request)
          assert.isTrue(started.created)
          yield* sandboxes.release(sandbox)
          yield* sandboxes.release(sandbox)
        }).pipe(Effect.provide(provider.layer()))
    )
  })
}

describe("EXTERNAL_RUNTIME", () => {
  it.live("fails acquire as Unavailable, naming the runtime, when it cannot be reached", () =>
    Effect.gen(function* () {
      const unreachable = layerExternalRuntime({
        url: new URL("http://127.0.0.1:9"),
        token: Redacted.make(TOKEN)
      }).pipe(Layer.provide(RuntimeClient.layer))
      const error = yield* Effect.flip(
        Effect.flatMap(SandboxProvider, (sandboxes) => sandboxes.acquire(spec("unreachable:1"))).pipe(
          Effect.provide(unreachable)
        )
      )
      assert.strictEqual(error.reason, "Unavailable")
      assert.include(error.message, "127.0.0.1:9")
    })
  )
})

/**
 * One conformance suite for every sandbox provider (docs/interface.md: Design rules):
 * an acquired sandbox's runtime answers its health with this protocol and runs a start; acquire
 * is idempotent for an attempt; release succeeds, twice. EXTERNAL_RUNTIME runs against the real
 * runtime process; HOSTED_SANDBOX against the local fake of the Daytona API and PLATFORM_CONTAINER
 * against the local fake of the Kubernetes Pods API, each of which starts the real runtime per
 * sandbox.
 */
import * as path from "node:path"
import { type FakeKubernetesApi, startFakeKubernetesApi } from "@bosun/testing/FakeKubernetesApi"
import { type FakeSandboxApi, startFakeSandboxApi } from "@bosun/testing/FakeSandboxApi"
import {
  freePort,
  makeFixtures,
  type RuntimeProcess,
  runRequest,
  startRuntime,
  TOKEN
} from "@bosun/testing/RuntimeProcess"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted } from "effect"
import { RuntimeClient } from "../src/runtime/RuntimeClient.ts"
import { layerExternalRuntime } from "../src/sandbox/ExternalRuntime.ts"
import { layerHostedSandbox } from "../src/sandbox/HostedSandbox.ts"
import { generateCa, InjectionProxy } from "../src/sandbox/InjectionProxy.ts"
import { layerPlatformContainer } from "../src/sandbox/PlatformContainer.ts"
import { SandboxProvider } from "../src/sandbox/SandboxProvider.ts"

const fixtures = makeFixtures()
const agents = JSON.stringify({ quick: { command: [fixtures.script("quick.sh", 'echo \'{"type":"done"}\'')] } })
const HOSTED_API_KEY = "dtn_conformance-key-0123456789abcdef"
const KUBE_TOKEN = "kube-conformance-token-0123"
const NAMESPACE = "bosun-sandboxes"
let runtime: RuntimeProcess
let hosted: FakeSandboxApi
let kubernetes: FakeKubernetesApi
let ca: { certificate: string; privateKey: string }
let podPort = 0

beforeAll(async () => {
  ca = await generateCa("Bosun conformance CA")
  podPort = await freePort()
  ;[runtime, hosted, kubernetes] = await Promise.all([
    startRuntime({ BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data"), BOSUN_RUNTIME_AGENTS: agents }),
    startFakeSandboxApi({
      apiKey: HOSTED_API_KEY,
      snapshots: ["bosun-runtime"],
      env: { BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "hosted"), BOSUN_RUNTIME_AGENTS: agents }
    }),
    startFakeKubernetesApi({
      token: KUBE_TOKEN,
      namespaces: [NAMESPACE],
      secrets: [{ namespace: NAMESPACE, name: "bosun-runtime-token", stringData: { token: TOKEN } }],
      configMaps: [{ namespace: NAMESPACE, name: "bosun-egress-ca", data: { "ca.crt": ca.certificate } }],
      runtimeEnv: { BOSUN_RUNTIME_AGENTS: agents }
    })
  ])
})
afterAll(async () => {
  await Promise.all([runtime?.stop(), hosted?.close(), kubernetes?.close()])
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
  },
  {
    name: "HOSTED_SANDBOX",
    layer: () =>
      layerHostedSandbox({
        apiUrl: new URL(hosted.url),
        apiKey: Redacted.make(HOSTED_API_KEY),
        runtimeImage: { snapshot: "bosun-runtime" },
        runtimeToken: Redacted.make(TOKEN),
        networkAllowList: { STRICT: "140.82.112.0/20", BUILD: "0.0.0.0/0", DEEP_SCAN: "140.82.112.0/20" },
        readinessTimeout: Duration.seconds(30)
      }).pipe(Layer.provideMerge(RuntimeClient.layer))
  },
  {
    name: "PLATFORM_CONTAINER",
    layer: () =>
      layerPlatformContainer({
        kubernetes: { _tag: "Server", server: new URL(kubernetes.url), token: Redacted.make(KUBE_TOKEN) },
        namespace: NAMESPACE,
        image: "ghcr.io/bosun/runtime:test",
        serviceAccountName: "bosun-sandbox",
        runtimePort: podPort,
        runtimeToken: { secretName: "bosun-runtime-token", key: "token", value: Redacted.make(TOKEN) },
        caConfigMap: { name: "bosun-egress-ca", key: "ca.crt" },
        proxySecretKey: Redacted.make("conformance-proxy-key"),
        readinessTimeout: Duration.seconds(30),
        pollInterval: Duration.millis(100)
      }).pipe(
        Layer.provideMerge(
          Layer.mergeAll(
            RuntimeClient.layer,
            InjectionProxy.layer({
              host: "127.0.0.1",
              port: 0,
              ca: { certificate: ca.certificate, privateKey: Redacted.make(ca.privateKey) },
              tiers: { STRICT: [], BUILD: [], DEEP_SCAN: [] }
            })
          )
        )
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
          assert.strictEqual((yield* connection.health).protocol_version, "1.1")
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

/**
 * PLATFORM_CONTAINER against a local fake of the Kubernetes Pods API
 * (docs/interface.md: Design rules), through the official client: the pod it builds, the real
 * runtime the fake starts for it running an INJECTED attempt, idempotent acquire and release, the
 * real egress proxy knowing the attempt exactly while its pod exists, AGENT_ONE refused before any
 * call, and Kubernetes' errors mapped to what the workflow can do about them.
 */
import { createHmac } from "node:crypto"
import { AGENT_ONE_ON_PLATFORM_CONTAINER, type RunRequest } from "@bosun/domain"
import { type FakeKubernetesApi, type KubeObject, startFakeKubernetesApi } from "@bosun/testing/FakeKubernetesApi"
import { freePort, isAlive, makeFixtures, runRequest } from "@bosun/testing/RuntimeProcess"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import type { V1Pod } from "@kubernetes/client-node"
import { Duration, Effect, Layer, Redacted, Stream } from "effect"
import { ProxyAgent, request } from "undici"
import { RuntimeClient } from "../src/runtime/RuntimeClient.ts"
import { generateCa, InjectionProxy } from "../src/sandbox/InjectionProxy.ts"
import { layerPlatformContainer, type PlatformContainerSettings, podNameOf } from "../src/sandbox/PlatformContainer.ts"
import { SandboxProvider, type SandboxSpec } from "../src/sandbox/SandboxProvider.ts"

const NAMESPACE = "bosun-sandboxes"
const API_TOKEN = "kube-api-token-3e9a51c7"
const RUNTIME_TOKEN = "instance-runtime-token-8c2f4d71"
const PROXY_KEY = "proxy-derivation-key-5a0b93"
const fixtures = makeFixtures()

let fake: FakeKubernetesApi
let ca: { certificate: string; privateKey: string }
let runtimePort = 0

beforeAll(async () => {
  ca = await generateCa("Bosun test egress CA")
  runtimePort = await freePort()
  fake = await startFakeKubernetesApi({
    token: API_TOKEN,
    namespaces: [NAMESPACE],
    secrets: [
      { namespace: NAMESPACE, name: "bosun-runtime-token", stringData: { token: RUNTIME_TOKEN } },
      { namespace: NAMESPACE, name: "bosun-short-token", stringData: { token: "too-short" } }
    ],
    configMaps: [{ namespace: NAMESPACE, name: "bosun-egress-ca", data: { "ca.crt": ca.certificate } }],
    runtimeEnv: {
      BOSUN_RUNTIME_AGENTS: JSON.stringify({
        quick: { command: [fixtures.script("quick.sh", 'echo \'{"type":"done"}\'')] }
      })
    }
  })
})
afterAll(async () => {
  await fake?.close()
})

const settings = (overrides: Partial<PlatformContainerSettings> = {}): PlatformContainerSettings => ({
  kubernetes: { _tag: "Server", server: new URL(fake.url), token: Redacted.make(API_TOKEN) },
  namespace: NAMESPACE,
  image: "ghcr.io/bosun/runtime:test",
  serviceAccountName: "bosun-sandbox",
  runtimePort,
  runtimeToken: { secretName: "bosun-runtime-token", key: "token", value: Redacted.make(RUNTIME_TOKEN) },
  caConfigMap: { name: "bosun-egress-ca", key: "ca.crt" },
  proxySecretKey: Redacted.make(PROXY_KEY),
  readinessTimeout: Duration.seconds(30),
  pollInterval: Duration.millis(100),
  ...overrides
})

const layer = (overrides: Partial<PlatformContainerSettings> = {}) =>
  layerPlatformContainer(settings(overrides)).pipe(
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

const spec = (attemptId: string, overrides: Partial<SandboxSpec> = {}): SandboxSpec => ({
  organizationId: "org-1",
  runId: attemptId.split(":")[0] ?? attemptId,
  attemptId,
  instanceClass: "standard-2",
  egressTier: "STRICT",
  agent: "CUSTOM",
  grants: [
    {
      placeholder: `bosun-inject-${attemptId}-agent`,
      value: Redacted.make("sk-real-agent-key"),
      hosts: ["api.example.com"]
    }
  ],
  ...overrides
})

const derivedSecret = (attemptId: string) => createHmac("sha256", PROXY_KEY).update(attemptId).digest("hex")
const created = (name: string) =>
  fake.createdPods.filter((pod) => pod.metadata.name === name) as unknown as Array<V1Pod>
const createdSecret = (name: string): KubeObject | undefined =>
  fake.createdSecrets.find((secret) => secret.metadata.name === name)
const proxyUrlOf = (name: string) => new URL(createdSecret(name)?.stringData?.["proxy-url"] ?? "http://invalid")

/** What the egress proxy answers a pod that uses this proxy URL: a status in undici's error, or "connected". */
const throughProxy = (proxyUrl: URL) =>
  Effect.promise(async () => {
    const dispatcher = new ProxyAgent({ uri: proxyUrl.href })
    const outcome = await request("https://127.0.0.1:9/", { dispatcher }).then(
      () => "connected",
      (error: Error) => error.message
    )
    await dispatcher.close()
    return outcome
  })

const acquireFails = (attempt: SandboxSpec, overrides: Partial<PlatformContainerSettings> = {}) =>
  Effect.flip(Effect.flatMap(SandboxProvider, (sandboxes) => sandboxes.acquire(attempt))).pipe(
    Effect.provide(layer(overrides))
  )

const assertNoSecrets = (message: string, attemptId: string) => {
  for (const secret of [API_TOKEN, RUNTIME_TOKEN, PROXY_KEY, derivedSecret(attemptId)]) {
    assert.notInclude(message, secret)
  }
}

describe("PLATFORM_CONTAINER", () => {
  it.live(
    "acquire creates one pod with the class's requests, uid 1000, no service-account token, tokens only by secretKeyRef and the CA mounted",
    () =>
      Effect.gen(function* () {
        const sandboxes = yield* SandboxProvider
        assert.strictEqual(sandboxes.name, "PLATFORM_CONTAINER")
        const sandbox = yield* sandboxes.acquire(spec("run-pod:1"))
        assert.match(sandbox.id, /^bosun-attempt-[0-9a-f]{16}$/)
        assert.strictEqual(sandbox.provider, "PLATFORM_CONTAINER")
        assert.strictEqual(sandbox.credentialMode, "INJECTED")
        assert.strictEqual(Redacted.value(sandbox.endpoint.token), RUNTIME_TOKEN)
        const runtime = fake.runtimes.find((r) => r.pod === sandbox.id)
        assert.strictEqual(sandbox.endpoint.baseUrl.href, `http://${runtime?.podIP}:${runtimePort}/`)
        assert.notStrictEqual(runtime?.podIP, "127.0.0.1")

        const pods = created(sandbox.id)
        assert.lengthOf(pods, 1)
        const pod = pods[0]
        assert.strictEqual(pod?.metadata?.namespace, NAMESPACE)
        assert.deepStrictEqual(pod?.metadata?.labels, {
          "app.kubernetes.io/name": "bosun-runtime",
          "app.kubernetes.io/managed-by": "bosun",
          "bosun.dev/attempt": sandbox.id.slice("bosun-attempt-".length),
          "bosun.dev/run": "run-pod",
          "bosun.dev/organization": "org-1",
          "bosun.dev/instance-class": "standard-2"
        })
        assert.strictEqual(pod?.metadata?.annotations?.["bosun.dev/attempt-id"], "run-pod:1")
        assert.strictEqual(pod?.spec?.restartPolicy, "Never")
        assert.strictEqual(pod?.spec?.serviceAccountName, "bosun-sandbox")
        assert.strictEqual(pod?.spec?.automountServiceAccountToken, false)
        assert.strictEqual(pod?.spec?.securityContext?.runAsUser, 1000)
        assert.strictEqual(pod?.spec?.securityContext?.runAsNonRoot, true)
        assert.lengthOf(pod?.spec?.containers ?? [], 1)
        const container = pod?.spec?.containers[0]
        assert.strictEqual(container?.image, "ghcr.io/bosun/runtime:test")
        assert.deepStrictEqual(container?.resources, {
          requests: { cpu: "2", memory: "4Gi" },
          limits: { cpu: "2", memory: "4Gi" }
        })
        assert.strictEqual(container?.securityContext?.allowPrivilegeEscalation, false)
        const env = new Map((container?.env ?? []).map((variable) => [variable.name, variable]))
        assert.deepStrictEqual(env.get("BOSUN_RUNTIME_TOKEN")?.valueFrom, {
          secretKeyRef: { name: "bosun-runtime-token", key: "token" }
        })
        assert.strictEqual(env.get("BOSUN_RUNTIME_HOST")?.value, "0.0.0.0")
        assert.strictEqual(env.get("BOSUN_RUNTIME_PORT")?.value, String(runtimePort))
        for (const variable of ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"]) {
          assert.isUndefined(env.get(variable)?.value, variable)
          assert.deepStrictEqual(env.get(variable)?.valueFrom, { secretKeyRef: { name: sandbox.id, key: "proxy-url" } })
        }
        assert.strictEqual(env.get("NO_PROXY")?.value, "localhost,127.0.0.1,::1")
        for (const variable of ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "GIT_SSL_CAINFO"]) {
          assert.strictEqual(env.get(variable)?.value, "/etc/bosun/ca/ca.crt", variable)
        }
        assert.deepStrictEqual(container?.volumeMounts, [
          { name: "bosun-ca", mountPath: "/etc/bosun/ca", readOnly: true }
        ])
        assert.deepStrictEqual(pod?.spec?.volumes, [
          {
            name: "bosun-ca",
            configMap: { name: "bosun-egress-ca", items: [{ key: "ca.crt", path: "ca.crt" }], defaultMode: 0o444 }
          }
        ])

        // The credentials live in Secrets: the pod spec carries neither the runtime token nor the proxy secret.
        const specJson = JSON.stringify(pod)
        assert.notInclude(specJson, RUNTIME_TOKEN)
        assert.notInclude(specJson, derivedSecret("run-pod:1"))
        const proxy = yield* InjectionProxy
        const proxyUrl = proxyUrlOf(sandbox.id)
        assert.strictEqual(proxyUrl.protocol, "http:")
        assert.strictEqual(decodeURIComponent(proxyUrl.username), "run-pod:1")
        assert.strictEqual(proxyUrl.password, derivedSecret("run-pod:1"))
        assert.strictEqual(proxyUrl.host, `${proxy.address.host}:${proxy.address.port}`)
        // The runtime got what the references point at, and the CA at the mounted path.
        assert.strictEqual(runtime?.env.BOSUN_RUNTIME_TOKEN, RUNTIME_TOKEN)
        assert.strictEqual(runtime?.env.HTTPS_PROXY, proxyUrl.href.replace(/\/$/, ""))
        yield* sandboxes.release(sandbox)
      }).pipe(Effect.provide(layer()))
  )

  it.live("a standard-4 attempt gets a pod requesting 4 CPUs and 8Gi", () =>
    Effect.gen(function* () {
      const sandboxes = yield* SandboxProvider
      const sandbox = yield* sandboxes.acquire(spec("run-large:1", { instanceClass: "standard-4" }))
      const pod = created(sandbox.id)[0]
      assert.deepStrictEqual(pod?.spec?.containers[0]?.resources, {
        requests: { cpu: "4", memory: "8Gi" },
        limits: { cpu: "4", memory: "8Gi" }
      })
      assert.strictEqual(pod?.metadata?.labels?.["bosun.dev/instance-class"], "standard-4")
      yield* sandboxes.release(sandbox)
    }).pipe(Effect.provide(layer()))
  )

  it.live("the pod's runtime runs an INJECTED attempt to its end", () =>
    Effect.gen(function* () {
      const sandboxes = yield* SandboxProvider
      const sandbox = yield* sandboxes.acquire(spec("run-exec:1"))
      const connection = (yield* RuntimeClient).connect(sandbox.endpoint)
      assert.strictEqual((yield* connection.health).protocol_version, "1.1")
      const run = runRequest(fixtures, {
        run_id: "run-exec",
        attempt_id: "run-exec:1",
        agent: { kind: "CUSTOM", profile: "quick" },
        credential_mode: sandbox.credentialMode
      }) as unknown as RunRequest
      const started = yield* connection.start(run)
      assert.isTrue(started.created)
      assert.strictEqual(started.state.attempt_id, "run-exec:1")
      const events = yield* Stream.runCollect(connection.events("run-exec:1", 0))
      const finished = events.filter((line) => line.type === "run.finished")
      assert.lengthOf(finished, 1)
      assert.strictEqual(events.at(-1)?.type, "run.finished")
      const result = yield* connection.result("run-exec:1")
      assert.strictEqual(result.status, "SUCCEEDED")
      assert.strictEqual(result.exit_code, 0)
      assert.isNull(result.error)
      yield* sandboxes.release(sandbox)
    }).pipe(Effect.provide(layer()))
  )

  it.live("acquire again for the same attempt returns the same pod without creating another", () =>
    Effect.gen(function* () {
      const sandboxes = yield* SandboxProvider
      const first = yield* sandboxes.acquire(spec("run-again:1"))
      const posts = () =>
        fake.requests.filter((r) => r.method === "POST" && r.path === `/api/v1/namespaces/${NAMESPACE}/pods`).length
      const before = posts()
      const second = yield* sandboxes.acquire(spec("run-again:1"))
      assert.strictEqual(second.id, first.id)
      assert.strictEqual(second.endpoint.baseUrl.href, first.endpoint.baseUrl.href)
      assert.strictEqual(posts(), before + 1)
      assert.strictEqual(fake.requests.filter((r) => r.method === "POST").at(-1)?.status, 409)
      assert.lengthOf(created(first.id), 1)
      assert.lengthOf(
        fake.runtimes.filter((r) => r.pod === first.id),
        1
      )
      yield* sandboxes.release(first)
    }).pipe(Effect.provide(layer()))
  )

  it.live("release deletes the pod and its secret and stops its runtime; a second release succeeds", () =>
    Effect.gen(function* () {
      const sandboxes = yield* SandboxProvider
      const sandbox = yield* sandboxes.acquire(spec("run-release:1"))
      assert.isDefined(fake.pod(NAMESPACE, sandbox.id))
      assert.isDefined(fake.secret(NAMESPACE, sandbox.id))
      const pid = fake.runtimes.find((r) => r.pod === sandbox.id)?.pid ?? -1
      assert.isTrue(isAlive(pid))
      yield* sandboxes.release(sandbox)
      assert.isUndefined(fake.pod(NAMESPACE, sandbox.id))
      assert.isUndefined(fake.secret(NAMESPACE, sandbox.id))
      assert.isFalse(isAlive(pid))
      yield* sandboxes.release(sandbox)
      const deletes = fake.requests.filter((r) => r.method === "DELETE" && r.path.endsWith(`/${sandbox.id}`))
      assert.deepStrictEqual(
        deletes.map((r) => [r.path.split("/")[5], r.status]),
        [
          ["pods", 200],
          ["secrets", 200],
          ["pods", 404],
          ["secrets", 404]
        ]
      )
    }).pipe(Effect.provide(layer()))
  )

  it.live("the egress proxy knows the attempt by its derived credentials after acquire, and not after release", () =>
    Effect.gen(function* () {
      const sandboxes = yield* SandboxProvider
      const sandbox = yield* sandboxes.acquire(spec("run-proxy:1"))
      const proxyUrl = proxyUrlOf(sandbox.id)
      // Known: past authentication, refused only because the host is outside its (empty) tier.
      const known = yield* throughProxy(proxyUrl)
      assert.include(known, "(403)")
      assert.notInclude(known, "(407)")
      yield* sandboxes.release(sandbox)
      const forgotten = yield* throughProxy(proxyUrl)
      assert.include(forgotten, "(407)")
    }).pipe(Effect.provide(layer()))
  )

  it.live("AGENT_ONE fails at once, Refused with the readiness finding's message, before any Kubernetes call", () =>
    Effect.gen(function* () {
      const before = fake.requests.length
      const error = yield* acquireFails(spec("run-agent-one:1", { agent: "AGENT_ONE" }))
      assert.strictEqual(error._tag, "SandboxError")
      assert.strictEqual(error.reason, "Refused")
      assert.strictEqual(error.message, AGENT_ONE_ON_PLATFORM_CONTAINER)
      assert.strictEqual(fake.requests.length, before)
    })
  )

  it.live("a 403 from the API is Refused with Kubernetes' message", () =>
    Effect.gen(function* () {
      const error = yield* acquireFails(spec("run-forbidden:1"), { namespace: "team-b" })
      assert.strictEqual(error.reason, "Refused")
      assert.include(error.message, "(403)")
      assert.include(
        error.message,
        'secrets is forbidden: User "system:serviceaccount:bosun:bosun-control-plane" cannot create resource "secrets" in API group "" in the namespace "team-b"'
      )
      assertNoSecrets(error.message, "run-forbidden:1")
    })
  )

  it.live("a 422 is Refused; 429 and 5xx are Unavailable", () =>
    Effect.gen(function* () {
      fake.failNext({
        code: 422,
        reason: "Invalid",
        message: 'Pod "x" is invalid: spec.containers[0].image: Required value'
      })
      const invalid = yield* acquireFails(spec("run-status:1"))
      assert.strictEqual(invalid.reason, "Refused")
      assert.include(invalid.message, 'Pod "x" is invalid: spec.containers[0].image: Required value')
      fake.failNext({ code: 429, reason: "TooManyRequests", message: "too many requests, please try again later" })
      const throttled = yield* acquireFails(spec("run-status:2"))
      assert.strictEqual(throttled.reason, "Unavailable")
      assert.include(throttled.message, "too many requests")
      fake.failNext({ code: 500, reason: "InternalError", message: "etcdserver: request timed out" })
      const broken = yield* acquireFails(spec("run-status:3"))
      assert.strictEqual(broken.reason, "Unavailable")
      assert.include(broken.message, "etcdserver: request timed out")
    })
  )

  it.live("an unreachable API is Unavailable, naming it", () =>
    Effect.gen(function* () {
      const closed = yield* Effect.promise(() => freePort())
      const error = yield* acquireFails(spec("run-unreachable:1"), {
        kubernetes: { _tag: "Server", server: new URL(`http://127.0.0.1:${closed}`), token: Redacted.make(API_TOKEN) }
      })
      assert.strictEqual(error.reason, "Unavailable")
      assert.include(error.message, `http://127.0.0.1:${closed}`)
      assert.include(error.message, "ECONNREFUSED")
      assertNoSecrets(error.message, "run-unreachable:1")
    })
  )

  it.live("a pod that ends before its runtime is ready is Unavailable with Kubernetes' reason, and removed", () =>
    Effect.gen(function* () {
      const error = yield* acquireFails(spec("run-crash:1"), {
        runtimeToken: { secretName: "bosun-short-token", key: "token", value: Redacted.make("too-short") }
      })
      assert.strictEqual(error.reason, "Unavailable")
      assert.include(error.message, "ended: Failed")
      assert.include(error.message, "Error (exit code 1)")
      assert.include(error.message, "BOSUN_RUNTIME_TOKEN: must be at least 16 characters")
      assert.notInclude(error.message, "too-short")
      const name = podNameOf("run-crash:1")
      assert.lengthOf(created(name), 1)
      assert.isUndefined(fake.pod(NAMESPACE, name))
      assert.isUndefined(fake.secret(NAMESPACE, name))
    })
  )

  it.live("a pod not ready within the timeout is Unavailable with the kubelet's waiting reason", () =>
    Effect.gen(function* () {
      const error = yield* acquireFails(spec("run-stuck:1"), {
        runtimeToken: { secretName: "no-such-secret", key: "token", value: Redacted.make(RUNTIME_TOKEN) },
        readinessTimeout: Duration.seconds(1)
      })
      assert.strictEqual(error.reason, "Unavailable")
      assert.include(error.message, "was not ready within 1s")
      assert.include(error.message, 'CreateContainerConfigError: secret "no-such-secret" not found')
      assertNoSecrets(error.message, "run-stuck:1")
    })
  )

  it.live("no runtime process outlives its pod", () =>
    Effect.sync(() => {
      assert.isAbove(fake.runtimes.length, 0)
      for (const runtime of fake.runtimes) assert.isFalse(isAlive(runtime.pid), runtime.pod)
    })
  )
})

/**
 * Settings read from an environment (`platform/config/AppConfig.ts`, `platform/config/SandboxConfig.ts`) where the
 * reading itself decides something: OTLP settings that only matter when traces are exported, and
 * the sandbox providers' settings, defaults included. Refusals are in StartupFailure.e2e.test.ts.
 */
import { appConfig } from "@bosun/server/platform/config/AppConfig"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Option, Redacted } from "effect"

const parse = (env: Record<string, string>) => appConfig.parse(ConfigProvider.fromEnv({ env }))

describe("settings from the environment", () => {
  it.effect("an OTLP protocol set cluster-wide (grpc) does not matter while no traces are exported", () =>
    Effect.gen(function* () {
      const settings = yield* parse({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" })
      assert.isTrue(Option.isNone(settings.tracing))
    })
  )

  it.effect("the traces' own protocol wins over the general one, and http/protobuf is the default", () =>
    Effect.gen(function* () {
      const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }
      const own = yield* parse({
        ...endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "bosun-eu"
      })
      assert.deepStrictEqual(own.tracing, Option.some({ serviceName: "bosun-eu", protocol: "http/json" as const }))
      const byDefault = yield* parse(endpoint)
      assert.deepStrictEqual(
        byDefault.tracing,
        Option.some({ serviceName: "bosun", protocol: "http/protobuf" as const })
      )
    })
  )

  it.effect("no sandbox provider but EXTERNAL_RUNTIME is configured by default", () =>
    Effect.gen(function* () {
      const settings = yield* parse({})
      assert.isTrue(Option.isNone(settings.sandboxes.platformContainer))
      assert.isTrue(Option.isNone(settings.sandboxes.hostedSandbox))
    })
  )

  it.effect("HOSTED_SANDBOX from its variables: the image, the allow list per tier, the optional limits", () =>
    Effect.gen(function* () {
      const settings = yield* parse({
        BOSUN_HOSTED_SANDBOX_API_URL: "https://sandboxes.example.com/api",
        BOSUN_HOSTED_SANDBOX_API_KEY: "dtn_api-key-0123",
        BOSUN_HOSTED_SANDBOX_RUNTIME_TOKEN: "hosted-runtime-token-0123",
        BOSUN_HOSTED_SANDBOX_IMAGE: "ghcr.io/bosun/runtime:1",
        BOSUN_HOSTED_SANDBOX_NETWORK_ALLOW_LIST: JSON.stringify({ STRICT: "140.82.112.0/20", BUILD: "0.0.0.0/0" }),
        BOSUN_HOSTED_SANDBOX_TARGET: "eu",
        BOSUN_HOSTED_SANDBOX_IDLE_STOP_MINUTES: "15",
        BOSUN_HOSTED_SANDBOX_READINESS_TIMEOUT: "90 seconds"
      })
      const hosted = Option.getOrUndefined(settings.sandboxes.hostedSandbox)
      assert.isDefined(hosted)
      assert.strictEqual(hosted?.apiUrl.href, "https://sandboxes.example.com/api")
      assert.strictEqual(hosted === undefined ? undefined : Redacted.value(hosted.apiKey), "dtn_api-key-0123")
      assert.deepStrictEqual(hosted?.runtimeImage, { image: "ghcr.io/bosun/runtime:1" })
      assert.deepStrictEqual(hosted?.networkAllowList, { STRICT: "140.82.112.0/20", BUILD: "0.0.0.0/0", DEEP_SCAN: "" })
      assert.strictEqual(hosted?.target, "eu")
      assert.strictEqual(hosted?.idleStopMinutes, 15)
      assert.strictEqual(hosted?.maxLifetimeMinutes, undefined)
      assert.strictEqual(hosted?.readinessTimeout === undefined ? 0 : Duration.toSeconds(hosted.readinessTimeout), 90)
    })
  )

  it.effect("PLATFORM_CONTAINER outside a cluster: the API server and its token, the proxy where pods reach it", () =>
    Effect.gen(function* () {
      const settings = yield* parse({
        BOSUN_PLATFORM_CONTAINER_NAMESPACE: "bosun-sandboxes",
        BOSUN_PLATFORM_CONTAINER_IMAGE: "bosun-runtime:1",
        BOSUN_PLATFORM_CONTAINER_SERVICE_ACCOUNT: "bosun-sandbox",
        BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET: "bosun-runtime-token",
        BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN: "pod-runtime-token-0123",
        BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP: "bosun-egress-ca",
        BOSUN_EGRESS_PROXY_CA_CERTIFICATE: "-----BEGIN CERTIFICATE-----",
        BOSUN_EGRESS_PROXY_CA_KEY: "-----BEGIN PRIVATE KEY-----",
        BOSUN_EGRESS_PROXY_SECRET_KEY: "derivation-key-0123",
        BOSUN_EGRESS_PROXY_ADVERTISED_HOST: "bosun-runner.bosun.svc",
        BOSUN_KUBERNETES_API_URL: "https://10.0.0.1:6443",
        BOSUN_KUBERNETES_TOKEN: "kube-token-0123"
      })
      const platform = Option.getOrUndefined(settings.sandboxes.platformContainer)
      assert.isDefined(platform)
      assert.strictEqual(platform?.provider.kubernetes._tag, "Server")
      assert.strictEqual(platform?.provider.runtimePort, 8787)
      assert.deepStrictEqual(platform?.provider.runtimeToken.secretName, "bosun-runtime-token")
      assert.strictEqual(platform?.provider.runtimeToken.key, "token")
      assert.deepStrictEqual(platform?.provider.caConfigMap, { name: "bosun-egress-ca", key: "ca.crt" })
      assert.strictEqual(
        platform?.provider.readinessTimeout === undefined ? 0 : Duration.toMinutes(platform.provider.readinessTimeout),
        5
      )
      assert.isUndefined(platform?.provider.instanceClasses, "the provider's own classes apply")
      assert.deepStrictEqual(platform?.provider.proxyAddress, { host: "bosun-runner.bosun.svc", port: 3128 })
      assert.strictEqual(platform?.proxy.host, "127.0.0.1")
      assert.deepStrictEqual(platform?.proxy.tiers, { STRICT: [], BUILD: [], DEEP_SCAN: [] })
    })
  )
})

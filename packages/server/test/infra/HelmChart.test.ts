/**
 * The Helm chart in `infra/helm/bosun`. The real `helm` renders it (`@bosun/testing/Helm`: helm
 * 3.8.1 from an npm package, no cluster), with the default values and with a set that turns every
 * option on, and every manifest is checked strictly against the Kubernetes schemas
 * (`@bosun/testing/KubernetesSchemas`). Then what the deployment depends on: replicas and roles,
 * probes on /healthz and /readyz, a grace period longer than the graceful stop, secrets only by
 * reference, the runners' cluster settings, RBAC confined to one namespace, and the runtime pods'
 * NetworkPolicy — the last two checked against the pods and API calls `PlatformContainer` really
 * makes, driven with the chart's settings against the fake Kubernetes API. Bad values fail the
 * render with a message saying what to fix.
 */
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import { RuntimeClient } from "@bosun/actors/runtime/RuntimeClient"
import { generateCa, InjectionProxy } from "@bosun/actors/sandbox/InjectionProxy"
import { layerPlatformContainer } from "@bosun/actors/sandbox/PlatformContainer"
import { type InstanceClass, SandboxProvider } from "@bosun/actors/sandbox/SandboxProvider"
import { appConfig } from "@bosun/server/platform/config/AppConfig"
import { repositoryRoot } from "@bosun/testing"
import { startFakeKubernetesApi } from "@bosun/testing/FakeKubernetesApi"
import { helmBinary, helmLint, helmTemplate, type Manifest } from "@bosun/testing/Helm"
import { kubernetesSchemaProblems } from "@bosun/testing/KubernetesSchemas"
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Layer, Option, Redacted } from "effect"
import { ShardingConfig } from "effect/cluster"

const CHART = path.join(repositoryRoot, "infra/helm/bosun")
const NAMESPACE = "bosun"
const SANDBOXES = "bosun-sandboxes"

const helm = helmBinary()
const inCi = process.env.CI === "true" || process.env.CI === "1"
if ("missing" in helm && inCi) throw new Error(`CI needs helm: ${helm.missing}`)

/** Every option on: split roles, three runners, PLATFORM_CONTAINER in its own namespace, Redis, S3 with keys, an external runtime, an ingress, traces. */
const OPTIONS = {
  baseUrl: "https://bosun.example.com",
  split: true,
  api: { replicas: 2 },
  runner: { replicas: 3 },
  cluster: { shardLockExpiration: "10 seconds" },
  redis: { secretName: "acme-redis", urlKey: "redis-url" },
  s3: {
    bucket: "acme-bosun-blobs",
    endpoint: "https://minio.storage.svc:9000",
    region: "eu-west-1",
    forcePathStyle: true,
    credentialsSecretName: "acme-s3"
  },
  postgres: { secretName: "acme-database", urlKey: "database-url" },
  keys: { secretName: "acme-keys" },
  runtime: { url: "https://runtime.acme.internal:8787", tokenSecretName: "acme-runtime", tokenKey: "token" },
  platformContainer: {
    enabled: true,
    namespace: SANDBOXES,
    image: "registry.acme.dev/bosun-runtime:0.1.0",
    instanceClasses: { "standard-2": { cpu: "2", memory: "4Gi" }, "standard-4": { cpu: "4", memory: "8Gi" } },
    proxy: { tiers: { STRICT: ["api.openai.com"], BUILD: ["registry.npmjs.org", "*.github.com"], DEEP_SCAN: [] } }
  },
  tracing: { otlpEndpoint: "http://otel-collector.observability.svc:4318", serviceName: "bosun-acme" },
  ingress: { enabled: true, className: "nginx", host: "bosun.example.com", tlsSecretName: "bosun-tls" }
}

interface EnvVar {
  readonly name: string
  readonly value?: string
  readonly valueFrom?: {
    readonly secretKeyRef?: { readonly name: string; readonly key: string; readonly optional?: boolean }
    readonly fieldRef?: { readonly fieldPath: string }
  }
}
interface Probe {
  readonly httpGet?: { readonly path: string; readonly port: string | number }
  readonly timeoutSeconds?: number
}
interface Container {
  readonly name: string
  readonly ports: ReadonlyArray<{ readonly name: string; readonly containerPort: number }>
  readonly env: ReadonlyArray<EnvVar>
  readonly startupProbe?: Probe
  readonly livenessProbe?: Probe
  readonly readinessProbe?: Probe
  readonly lifecycle?: { readonly preStop?: { readonly exec?: { readonly command: ReadonlyArray<string> } } }
}
interface Deployment extends Manifest {
  readonly spec: {
    readonly replicas: number
    readonly selector: { readonly matchLabels: Record<string, string> }
    readonly template: {
      readonly metadata: { readonly labels: Record<string, string> }
      readonly spec: {
        readonly serviceAccountName: string
        readonly automountServiceAccountToken: boolean
        readonly terminationGracePeriodSeconds: number
        readonly containers: ReadonlyArray<Container>
      }
    }
  }
}
interface Rule {
  readonly apiGroups: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly verbs: ReadonlyArray<string>
}
interface Peer {
  readonly namespaceSelector?: { readonly matchLabels: Record<string, string> }
  readonly podSelector?: { readonly matchLabels: Record<string, string> }
}
interface PolicyRule {
  readonly from?: ReadonlyArray<Peer>
  readonly to?: ReadonlyArray<Peer>
  readonly ports: ReadonlyArray<{ readonly protocol: string; readonly port: number }>
}

/** The binary's path; the suite that calls it is skipped when there is none. */
const helmPath = () => {
  if ("missing" in helm) throw new Error(helm.missing)
  return helm.path
}
const render = (values: unknown = {}, release = "acme") =>
  helmTemplate(helmPath(), { chart: CHART, release, namespace: NAMESPACE, values, kubeVersion: "1.35.0" })
const manifestsOf = (values: unknown = {}) => {
  const rendered = render(values)
  if (!rendered.ok) throw new Error(rendered.error)
  return rendered.manifests
}
const failureOf = (values: unknown) => {
  const rendered = render(values)
  return rendered.ok ? "rendered without error" : rendered.error
}

const find = <A extends Manifest>(manifests: ReadonlyArray<Manifest>, kind: string, name: string) => {
  const found = manifests.filter((m) => m.kind === kind && m.metadata.name === name)
  expect(found, `${kind} ${name}`).toHaveLength(1)
  return found[0] as A
}
const kinds = (manifests: ReadonlyArray<Manifest>) => manifests.map((m) => `${m.kind} ${m.metadata.name}`).sort()
const containerOf = (deployment: Deployment) => {
  expect(deployment.spec.template.spec.containers).toHaveLength(1)
  return deployment.spec.template.spec.containers[0] as Container
}
const envOf = (deployment: Deployment) => new Map(containerOf(deployment).env.map((v) => [v.name, v]))
const portOf = (deployment: Deployment, name: string) =>
  containerOf(deployment).ports.find((port) => port.name === name)?.containerPort
/** Whether every label of `selector` is on `labels`. */
const selects = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.entries(selector).every(([key, value]) => labels[key] === value)

/** What the Secrets the chart names would hold, for the server to read its configuration from. */
const MASTER_KEY = randomBytes(32).toString("base64")
const SECRETS: Record<string, Record<string, string>> = {
  "bosun-database": { url: "postgres://bosun:pw@postgres.example.com:5432/bosun" },
  "acme-database": { "database-url": "postgres://bosun:pw@postgres.acme.internal:5432/bosun" },
  "bosun-keys": { "master-key": MASTER_KEY },
  "acme-keys": {
    "master-key": MASTER_KEY,
    "master-key-version": "2",
    "previous-master-keys": JSON.stringify({ "1": randomBytes(32).toString("base64") }),
    "bootstrap-token": "bootstrap-token-4c1e9b"
  },
  "acme-redis": { "redis-url": "redis://redis.acme.internal:6379" },
  "acme-s3": { "access-key-id": "AKIAEXAMPLE", "secret-access-key": "s3-secret-example" },
  "acme-runtime": { token: "runtime-token-acme-0123456789" },
  "bosun-runtime-token": { token: "instance-runtime-token-7d1c09a4e2" },
  "bosun-egress-ca": { "tls.crt": "certificate", "tls.key": "key" },
  "bosun-egress-proxy": { "derivation-key": "proxy-derivation-key-0c93" }
}
const POD_IP = "10.42.0.17"

/** A pod's environment as the kubelet would give it: Secret references resolved, downward API filled in. */
const podEnvironment = (deployment: Deployment): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const variable of containerOf(deployment).env) {
    const secret = variable.valueFrom?.secretKeyRef
    const field = variable.valueFrom?.fieldRef?.fieldPath
    if (secret !== undefined) {
      const value = SECRETS[secret.name]?.[secret.key]
      if (value !== undefined) env[variable.name] = value
      else if (secret.optional !== true) throw new Error(`${variable.name}: no ${secret.key} in Secret ${secret.name}`)
    } else if (field !== undefined) {
      env[variable.name] = field === "status.podIP" ? POD_IP : field === "metadata.namespace" ? NAMESPACE : ""
    } else {
      env[variable.name] = variable.value ?? ""
    }
  }
  return env
}

/** The graceful stop the grace period must outlast, from the running code's own defaults. */
const HTTP_DRAIN_SECONDS = 20 // @effect/platform-node NodeHttpServer: gracefulShutdownTimeout's default
const entityTerminationSeconds = Duration.toSeconds(
  Duration.fromInputUnsafe(ShardingConfig.defaults.entityTerminationTimeout)
)

describe.skipIf("missing" in helm)(
  `infra/helm/bosun (${"missing" in helm ? helm.missing : `helm ${helm.version}`})`,
  () => {
    let defaults: ReadonlyArray<Manifest> = []
    let options: ReadonlyArray<Manifest> = []
    beforeAll(() => {
      defaults = manifestsOf()
      options = manifestsOf(OPTIONS)
    })

    it("renders default values and every option into manifests the Kubernetes schemas accept strictly", async () => {
      expect(kinds(defaults)).toEqual([
        "Deployment acme-bosun",
        "PodDisruptionBudget acme-bosun",
        "Role acme-bosun-runner-health",
        "RoleBinding acme-bosun-runner-health",
        "Service acme-bosun",
        "ServiceAccount acme-bosun"
      ])
      expect(kinds(options)).toEqual([
        "Deployment acme-bosun-api",
        "Deployment acme-bosun-runner",
        "Ingress acme-bosun",
        "NetworkPolicy acme-bosun-runtime",
        "PodDisruptionBudget acme-bosun-api",
        "PodDisruptionBudget acme-bosun-runner",
        "Role acme-bosun-runner-health",
        "Role acme-bosun-sandboxes",
        "RoleBinding acme-bosun-runner-health",
        "RoleBinding acme-bosun-sandboxes",
        "Service acme-bosun",
        "ServiceAccount acme-bosun",
        "ServiceAccount acme-bosun-sandbox"
      ])
      for (const manifest of [...defaults, ...options]) {
        expect(await kubernetesSchemaProblems(manifest), `${manifest.kind} ${manifest.metadata.name}`).toEqual([])
      }
    })

    it("passes helm lint --strict with the default values and with every option on", () => {
      for (const values of [{}, OPTIONS]) {
        const lint = helmLint(helmPath(), CHART, values)
        expect(lint.output).toContain("1 chart(s) linted, 0 chart(s) failed")
        expect(lint.ok).toBe(true)
      }
    })

    it("the schema check rejects an unknown field, a missing required field and a malformed quantity", async () => {
      const deployment = find<Deployment>(defaults, "Deployment", "acme-bosun")
      const container = containerOf(deployment)
      const broken = {
        ...deployment,
        spec: {
          ...deployment.spec,
          selector: undefined,
          template: {
            ...deployment.spec.template,
            spec: {
              ...deployment.spec.template.spec,
              containers: [
                {
                  ...container,
                  livenessProbe: { ...container.livenessProbe, httpGett: {} },
                  resources: { limits: { memory: "2 GB" } }
                }
              ]
            }
          }
        }
      }
      const problems = await kubernetesSchemaProblems(JSON.parse(JSON.stringify(broken)))
      expect(problems).toContain("/spec: required field selector is missing")
      expect(problems).toContain(
        '/spec/template/spec/containers/0/livenessProbe/httpGett: unknown field (V1Probe has no field "httpGett")'
      )
      expect(
        problems.some((p) => p.startsWith("/spec/template/spec/containers/0/resources/limits/memory: format"))
      ).toBe(true)
      expect(
        await kubernetesSchemaProblems({ apiVersion: "example.com/v1", kind: "Widget", metadata: { name: "w" } })
      ).toEqual(["no schema for example.com/v1 Widget"])
    })

    it("runs one Deployment of role all by default: two runner pods behind the Service, probed on /healthz and /readyz", () => {
      const deployment = find<Deployment>(defaults, "Deployment", "acme-bosun")
      expect(deployment.metadata.namespace).toBe(NAMESPACE)
      expect(deployment.spec.replicas).toBe(2)
      const container = containerOf(deployment)
      expect(container.startupProbe?.httpGet).toEqual({ path: "/healthz", port: "http" })
      expect(container.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "http" })
      expect(container.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "http" })
      // /readyz may wait out the migration gate (5 s) and then ping Postgres (2 s) before answering.
      expect(container.readinessProbe?.timeoutSeconds).toBeGreaterThan(7)
      expect(portOf(deployment, "http")).toBe(8080)
      const env = envOf(deployment)
      expect(env.get("BOSUN_ROLE")?.value).toBe("all")
      expect(env.get("BOSUN_HOST")?.value).toBe("0.0.0.0")
      expect(env.get("BOSUN_PORT")?.value).toBe("8080")
      expect(env.get("BOSUN_METRICS_PORT")?.value).toBe(String(portOf(deployment, "metrics")))
      const labels = deployment.spec.template.metadata.labels
      expect(labels["bosun.dev/runner"]).toBe("true")
      const service = find<
        Manifest & { spec: { selector: Record<string, string>; ports: Array<{ targetPort: string }> } }
      >(defaults, "Service", "acme-bosun")
      expect(selects(service.spec.selector, labels)).toBe(true)
      expect(service.spec.ports.map((port) => port.targetPort)).toEqual(["http"])
      // A release named bosun is not called bosun-bosun (the runbook's `deployment/bosun`).
      const named = render({}, "bosun")
      expect(named.ok && kinds(named.manifests).filter((kind) => /^(Deployment|Service) /.test(kind))).toEqual([
        "Deployment bosun",
        "Service bosun"
      ])
    })

    it("splits into an api Deployment behind the Service and a runner Deployment of three pods outside it", () => {
      const api = find<Deployment>(options, "Deployment", "acme-bosun-api")
      const runner = find<Deployment>(options, "Deployment", "acme-bosun-runner")
      expect(api.spec.replicas).toBe(2)
      expect(runner.spec.replicas).toBe(3)
      expect(envOf(api).get("BOSUN_ROLE")?.value).toBe("api")
      expect(envOf(runner).get("BOSUN_ROLE")?.value).toBe("runner")
      // Each Deployment selects only its own pods.
      expect(selects(api.spec.selector.matchLabels, runner.spec.template.metadata.labels)).toBe(false)
      expect(selects(runner.spec.selector.matchLabels, api.spec.template.metadata.labels)).toBe(false)
      const service = find<Manifest & { spec: { selector: Record<string, string> } }>(options, "Service", "acme-bosun")
      expect(selects(service.spec.selector, api.spec.template.metadata.labels)).toBe(true)
      expect(selects(service.spec.selector, runner.spec.template.metadata.labels)).toBe(false)
      // A runner serves only its probes, but still on both.
      expect(containerOf(runner).livenessProbe?.httpGet?.path).toBe("/healthz")
      expect(containerOf(runner).readinessProbe?.httpGet?.path).toBe("/readyz")
      // The API pods are a cluster client: no runner address, no runner port, no Kubernetes token.
      expect(envOf(api).has("BOSUN_RUNNER_HOST")).toBe(false)
      expect(portOf(api, "runner")).toBeUndefined()
      expect(api.spec.template.spec.automountServiceAccountToken).toBe(false)
      for (const name of ["acme-bosun-api", "acme-bosun-runner"]) {
        const budget = find<
          Manifest & { spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } } }
        >(options, "PodDisruptionBudget", name)
        expect(budget.spec.maxUnavailable).toBe(1)
        expect(budget.spec.selector).toEqual(find<Deployment>(options, "Deployment", name).spec.selector)
      }
      const ingress = find<
        Manifest & { spec: { rules: Array<{ host: string; http: { paths: Array<{ backend: unknown }> } }> } }
      >(options, "Ingress", "acme-bosun")
      expect(ingress.spec.rules[0]?.host).toBe("bosun.example.com")
      expect(ingress.spec.rules[0]?.http.paths[0]?.backend).toEqual({
        service: { name: "acme-bosun", port: { name: "http" } }
      })
    })

    it("gives every pod a grace period longer than its graceful stop, with a preStop delay where it serves the API", () => {
      for (const deployment of [...defaults, ...options].filter((m): m is Deployment => m.kind === "Deployment")) {
        const container = containerOf(deployment)
        const preStop = Number(container.lifecycle?.preStop?.exec?.command[1] ?? 0)
        const servesApi = deployment.spec.template.metadata.labels["bosun.dev/api"] === "true"
        expect(preStop > 0, deployment.metadata.name).toBe(servesApi)
        expect(container.lifecycle?.preStop?.exec?.command[0]).toBe(servesApi ? "sleep" : undefined)
        expect(deployment.spec.template.spec.terminationGracePeriodSeconds, deployment.metadata.name).toBeGreaterThan(
          preStop + HTTP_DRAIN_SECONDS + entityTerminationSeconds
        )
      }
    })

    it("makes every runner pod a cluster runner at its pod IP, with Kubernetes runner health over exactly the runner pods", () => {
      const runners = [
        find<Deployment>(defaults, "Deployment", "acme-bosun"),
        find<Deployment>(options, "Deployment", "acme-bosun-runner")
      ]
      for (const deployment of runners) {
        const env = envOf(deployment)
        expect(env.get("BOSUN_RUNNER_HOST")?.valueFrom).toEqual({ fieldRef: { fieldPath: "status.podIP" } })
        expect(env.get("BOSUN_RUNNER_LISTEN_HOST")?.value).toBe("0.0.0.0")
        expect(env.get("BOSUN_RUNNER_PORT")?.value).toBe("34431")
        expect(portOf(deployment, "runner")).toBe(34431)
        expect(env.get("BOSUN_RUNNER_HEALTH")?.value).toBe("k8s")
        expect(env.get("BOSUN_RUNNER_HEALTH_NAMESPACE")?.valueFrom).toEqual({
          fieldRef: { fieldPath: "metadata.namespace" }
        })
        // Its token is mounted: effect/cluster reads it to list the runner pods.
        expect(deployment.spec.template.spec.automountServiceAccountToken).toBe(true)
      }
      expect(envOf(runners[1] as Deployment).get("BOSUN_SHARD_LOCK_EXPIRATION")?.value).toBe("10 seconds")
      // The label selector matches the runner pods and no API-only pod.
      const selectorOf = (deployment: Deployment) =>
        Object.fromEntries(
          (envOf(deployment).get("BOSUN_RUNNER_HEALTH_LABEL_SELECTOR")?.value ?? "")
            .split(",")
            .map((term) => term.split("="))
        ) as Record<string, string>
      for (const deployment of runners)
        expect(selects(selectorOf(deployment), deployment.spec.template.metadata.labels)).toBe(true)
      const selector = selectorOf(runners[1] as Deployment)
      expect(
        selects(selector, find<Deployment>(options, "Deployment", "acme-bosun-api").spec.template.metadata.labels)
      ).toBe(false)
      expect(selector["app.kubernetes.io/instance"]).toBe("acme")
      // With ping health there is nothing to read from the API: no Role, no token.
      const ping = manifestsOf({ cluster: { runnerHealth: "ping" } })
      expect(kinds(ping).filter((kind) => kind.startsWith("Role"))).toEqual([])
      const pinging = find<Deployment>(ping, "Deployment", "acme-bosun")
      expect(envOf(pinging).get("BOSUN_RUNNER_HEALTH")?.value).toBe("ping")
      expect(envOf(pinging).has("BOSUN_RUNNER_HEALTH_LABEL_SELECTOR")).toBe(false)
      expect(pinging.spec.template.spec.automountServiceAccountToken).toBe(false)
    })

    it.effect(
      "gives every pod a configuration the server accepts: its role, a runner at its pod IP, Kubernetes health, metrics, S3 and the key ring",
      () =>
        Effect.gen(function* () {
          for (const deployment of [...defaults, ...options].filter((m): m is Deployment => m.kind === "Deployment")) {
            const settings = yield* appConfig.parse(ConfigProvider.fromEnv({ env: podEnvironment(deployment) }))
            const role = deployment.spec.template.metadata.labels["app.kubernetes.io/component"]
            expect(settings.role).toBe(role)
            expect(settings.host).toBe("0.0.0.0")
            expect(settings.port).toBe(8080)
            expect(settings.metrics).toEqual(Option.some({ host: "0.0.0.0", port: 9464 }))
            expect(Option.isSome(settings.databaseUrl)).toBe(true)
            expect(Option.map(settings.s3, ({ bucket }) => bucket)).toEqual(
              Option.some(deployment.metadata.name === "acme-bosun" ? "bosun" : "acme-bosun-blobs")
            )
            expect(settings.cluster.clientOnly).toBe(role === "api")
            if (role === "api") continue
            expect(settings.cluster.runnerAddress).toEqual({ host: POD_IP, port: 34431 })
            expect(settings.cluster.listenAddress).toEqual({ host: "0.0.0.0", port: 34431 })
            expect(settings.cluster.runnerHealth).toEqual({
              _tag: "k8s",
              namespace: NAMESPACE,
              labelSelector: "app.kubernetes.io/name=bosun,app.kubernetes.io/instance=acme,bosun.dev/runner=true"
            })
          }
          const runner = find<Deployment>(options, "Deployment", "acme-bosun-runner")
          const settings = yield* appConfig.parse(ConfigProvider.fromEnv({ env: podEnvironment(runner) }))
          expect(settings.baseUrl.href).toBe("https://bosun.example.com/")
          expect(Option.map(settings.masterKey, ({ version, previous }) => [version, [...previous.keys()]])).toEqual(
            Option.some([2, [1]])
          )
          expect(Option.isSome(settings.bootstrapToken)).toBe(true)
          expect(Option.isSome(settings.redisUrl)).toBe(true)
          expect(
            Option.map(settings.s3, ({ endpoint, region, forcePathStyle }) => [
              Option.getOrUndefined(endpoint)?.href,
              region,
              forcePathStyle
            ])
          ).toEqual(Option.some(["https://minio.storage.svc:9000/", "eu-west-1", true]))
          expect(Option.map(settings.runtime.external, ({ url }) => url.href)).toEqual(
            Option.some("https://runtime.acme.internal:8787/")
          )
          expect(Duration.toSeconds(settings.cluster.shardLockExpiration)).toBe(10)
          expect(Option.map(settings.tracing, ({ serviceName }) => serviceName)).toEqual(Option.some("bosun-acme"))
          // The server reads the chart's PLATFORM_CONTAINER settings as the chart means them.
          const platform = Option.getOrUndefined(settings.sandboxes.platformContainer)
          expect(platform?.provider.namespace).toBe(SANDBOXES)
          expect(platform?.provider.image).toBe(OPTIONS.platformContainer.image)
          expect(platform?.provider.kubernetes).toEqual({ _tag: "InCluster" })
          expect(platform?.provider.instanceClasses).toEqual(OPTIONS.platformContainer.instanceClasses)
          expect(platform?.provider.proxyAddress).toEqual({ host: POD_IP, port: 3128 })
          expect(platform?.proxy.host).toBe("0.0.0.0")
          expect(platform?.proxy.port).toBe(3128)
          expect(platform?.proxy.tiers).toEqual(OPTIONS.platformContainer.proxy.tiers)
          expect(Option.isNone(settings.sandboxes.hostedSandbox)).toBe(true)
        })
    )

    it("takes every secret from a Secret by reference: the master key ring, the bootstrap token and the service URLs", () => {
      const expected = (secret: string, key: string, optional?: true) => ({
        secretKeyRef: { name: secret, key, ...(optional ? { optional } : {}) }
      })
      const byDefault = envOf(find<Deployment>(defaults, "Deployment", "acme-bosun"))
      expect(byDefault.get("DATABASE_URL")?.valueFrom).toEqual(expected("bosun-database", "url"))
      expect(byDefault.get("BOSUN_MASTER_KEY")?.valueFrom).toEqual(expected("bosun-keys", "master-key"))
      // A first deployment's Secret needs only the key: the version defaults to 1, the previous keys to none.
      expect(byDefault.get("BOSUN_MASTER_KEY_VERSION")?.valueFrom).toEqual(
        expected("bosun-keys", "master-key-version", true)
      )
      expect(byDefault.get("BOSUN_PREVIOUS_MASTER_KEYS")?.valueFrom).toEqual(
        expected("bosun-keys", "previous-master-keys", true)
      )
      expect(byDefault.get("BOSUN_BOOTSTRAP_TOKEN")?.valueFrom).toEqual(expected("bosun-keys", "bootstrap-token", true))
      expect(byDefault.has("REDIS_URL")).toBe(false)
      expect(byDefault.has("BOSUN_S3_ACCESS_KEY_ID")).toBe(false)

      for (const deployment of options.filter((m): m is Deployment => m.kind === "Deployment")) {
        const env = envOf(deployment)
        expect(env.get("DATABASE_URL")?.valueFrom).toEqual(expected("acme-database", "database-url"))
        expect(env.get("BOSUN_MASTER_KEY")?.valueFrom).toEqual(expected("acme-keys", "master-key"))
        expect(env.get("BOSUN_PREVIOUS_MASTER_KEYS")?.valueFrom).toEqual(
          expected("acme-keys", "previous-master-keys", true)
        )
        expect(env.get("BOSUN_BOOTSTRAP_TOKEN")?.valueFrom).toEqual(expected("acme-keys", "bootstrap-token", true))
        expect(env.get("REDIS_URL")?.valueFrom).toEqual(expected("acme-redis", "redis-url"))
        expect(env.get("BOSUN_S3_ACCESS_KEY_ID")?.valueFrom).toEqual(expected("acme-s3", "access-key-id"))
        expect(env.get("BOSUN_S3_SECRET_ACCESS_KEY")?.valueFrom).toEqual(expected("acme-s3", "secret-access-key"))
        expect(env.get("BOSUN_RUNTIME_TOKEN")?.valueFrom).toEqual(expected("acme-runtime", "token"))
        // External services by value.
        expect(env.get("BOSUN_S3_BUCKET")?.value).toBe("acme-bosun-blobs")
        expect(env.get("BOSUN_S3_ENDPOINT")?.value).toBe("https://minio.storage.svc:9000")
        expect(env.get("BOSUN_S3_REGION")?.value).toBe("eu-west-1")
        expect(env.get("BOSUN_S3_FORCE_PATH_STYLE")?.value).toBe("true")
        expect(env.get("BOSUN_RUNTIME_URL")?.value).toBe("https://runtime.acme.internal:8787")
        expect(env.get("BOSUN_BASE_URL")?.value).toBe("https://bosun.example.com")
        expect(env.get("OTEL_EXPORTER_OTLP_ENDPOINT")?.value).toBe("http://otel-collector.observability.svc:4318")
        expect(env.get("OTEL_SERVICE_NAME")?.value).toBe("bosun-acme")
      }
      const runner = envOf(find<Deployment>(options, "Deployment", "acme-bosun-runner"))
      expect(runner.get("BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN")?.valueFrom).toEqual(
        expected("bosun-runtime-token", "token")
      )
      expect(runner.get("BOSUN_EGRESS_PROXY_CA_KEY")?.valueFrom).toEqual(expected("bosun-egress-ca", "tls.key"))
      expect(runner.get("BOSUN_EGRESS_PROXY_SECRET_KEY")?.valueFrom).toEqual(
        expected("bosun-egress-proxy", "derivation-key")
      )

      // The chart makes no Secret, and no setting the server reads as a secret has a value inline.
      const secretSettings =
        /^(DATABASE_URL|REDIS_URL|BOSUN_MASTER_KEY|BOSUN_PREVIOUS_MASTER_KEYS|BOSUN_BOOTSTRAP_TOKEN|BOSUN_S3_ACCESS_KEY_ID|BOSUN_S3_SECRET_ACCESS_KEY|BOSUN_RUNTIME_TOKEN|BOSUN_COMPOSIO_API_KEY|BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN|BOSUN_EGRESS_PROXY_CA_KEY|BOSUN_EGRESS_PROXY_SECRET_KEY)$/
      for (const manifest of [...defaults, ...options]) {
        expect(manifest.kind).not.toBe("Secret")
        if (manifest.kind !== "Deployment") continue
        for (const variable of containerOf(manifest as Deployment).env.filter((v) => secretSettings.test(v.name))) {
          expect(variable.value, variable.name).toBeUndefined()
          expect(variable.valueFrom?.secretKeyRef, variable.name).toBeDefined()
        }
      }
    })

    it("confines RBAC to Pods: get and list in the release namespace for runner health, bound to the server's ServiceAccount", () => {
      for (const manifests of [defaults, options]) {
        const role = find<Manifest & { rules: ReadonlyArray<Rule> }>(manifests, "Role", "acme-bosun-runner-health")
        expect(role.metadata.namespace).toBe(NAMESPACE)
        expect(role.rules).toEqual([{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }])
        const binding = find<Manifest & { roleRef: unknown; subjects: unknown }>(
          manifests,
          "RoleBinding",
          "acme-bosun-runner-health"
        )
        expect(binding.metadata.namespace).toBe(NAMESPACE)
        expect(binding.roleRef).toEqual({
          apiGroup: "rbac.authorization.k8s.io",
          kind: "Role",
          name: "acme-bosun-runner-health"
        })
        expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "acme-bosun", namespace: NAMESPACE }])
        for (const deployment of manifests.filter((m): m is Deployment => m.kind === "Deployment")) {
          expect(deployment.spec.template.spec.serviceAccountName).toBe("acme-bosun")
        }
        expect(manifests.some((m) => m.kind === "ClusterRole" || m.kind === "ClusterRoleBinding")).toBe(false)
      }
    })

    it("denies runtime pods everything but the runners' calls to the runtime and their own way out through the egress proxy", () => {
      const runner = find<Deployment>(options, "Deployment", "acme-bosun-runner")
      const policy = find<
        Manifest & {
          spec: {
            podSelector: unknown
            policyTypes: unknown
            ingress: ReadonlyArray<PolicyRule>
            egress: ReadonlyArray<PolicyRule>
          }
        }
      >(options, "NetworkPolicy", "acme-bosun-runtime")
      expect(policy.metadata.namespace).toBe(SANDBOXES)
      expect(policy.spec.policyTypes).toEqual(["Ingress", "Egress"])
      const runners: Peer = {
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": NAMESPACE } },
        podSelector: {
          matchLabels: {
            "app.kubernetes.io/name": "bosun",
            "app.kubernetes.io/instance": "acme",
            "bosun.dev/runner": "true"
          }
        }
      }
      expect(policy.spec.ingress).toEqual([{ from: [runners], ports: [{ protocol: "TCP", port: 8787 }] }])
      expect(policy.spec.egress).toEqual([{ to: [runners], ports: [{ protocol: "TCP", port: 3128 }] }])
      // The peer is the runner pods, where the proxy listens on that port.
      expect(selects(runners.podSelector?.matchLabels ?? {}, runner.spec.template.metadata.labels)).toBe(true)
      expect(
        selects(
          runners.podSelector?.matchLabels ?? {},
          find<Deployment>(options, "Deployment", "acme-bosun-api").spec.template.metadata.labels
        )
      ).toBe(false)
      expect(portOf(runner, "egress-proxy")).toBe(3128)
      expect(envOf(runner).get("BOSUN_EGRESS_PROXY_PORT")?.value).toBe("3128")
      expect(envOf(runner).get("BOSUN_EGRESS_PROXY_ADVERTISED_HOST")?.valueFrom).toEqual({
        fieldRef: { fieldPath: "status.podIP" }
      })
      // The proxy is an IP, so no DNS — unless asked for, and then only to kube-dns.
      const withDns = manifestsOf({ ...OPTIONS, platformContainer: { ...OPTIONS.platformContainer, allowDns: true } })
      const dns = find<Manifest & { spec: { egress: ReadonlyArray<PolicyRule> } }>(
        withDns,
        "NetworkPolicy",
        "acme-bosun-runtime"
      ).spec.egress[1]
      expect(dns?.ports).toEqual([
        { protocol: "UDP", port: 53 },
        { protocol: "TCP", port: 53 }
      ])
      expect(dns?.to?.[0]?.podSelector?.matchLabels).toEqual({ "k8s-app": "kube-dns" })
      // Without PLATFORM_CONTAINER there are no runtime pods to police, and no sandbox RBAC.
      expect(kinds(defaults).some((kind) => kind.startsWith("NetworkPolicy") || kind.endsWith("sandboxes"))).toBe(false)
    })

    it.live(
      "drives PLATFORM_CONTAINER with the chart's settings: its pods pass the schemas and the NetworkPolicy, its API calls are exactly what the Role grants",
      () =>
        Effect.gen(function* () {
          const runner = envOf(find<Deployment>(options, "Deployment", "acme-bosun-runner"))
          const setting = (name: string) => {
            const value = runner.get(name)?.value
            expect(value, name).toBeDefined()
            return value ?? ""
          }
          const role = find<Manifest & { rules: ReadonlyArray<Rule> }>(options, "Role", "acme-bosun-sandboxes")
          const binding = find<Manifest & { subjects: unknown }>(options, "RoleBinding", "acme-bosun-sandboxes")
          const sandboxAccount = find<Manifest & { automountServiceAccountToken: boolean }>(
            options,
            "ServiceAccount",
            "acme-bosun-sandbox"
          )
          const policy = find<Manifest & { spec: { podSelector: { matchLabels: Record<string, string> } } }>(
            options,
            "NetworkPolicy",
            "acme-bosun-runtime"
          )
          expect(role.metadata.namespace).toBe(SANDBOXES)
          expect(binding.metadata.namespace).toBe(SANDBOXES)
          expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "acme-bosun", namespace: NAMESPACE }])
          expect(sandboxAccount.metadata.namespace).toBe(SANDBOXES)
          expect(sandboxAccount.automountServiceAccountToken).toBe(false)
          // The runtime pods' account has no Role at all.
          expect(
            options.some((m) => m.kind === "RoleBinding" && JSON.stringify(m).includes('"acme-bosun-sandbox"'))
          ).toBe(false)

          const namespace = setting("BOSUN_PLATFORM_CONTAINER_NAMESPACE")
          expect(namespace).toBe(SANDBOXES)
          const token = "instance-runtime-token-7d1c09a4e2"
          const ca = yield* Effect.promise(() => generateCa("Bosun chart test CA"))
          const tokenSecret = setting("BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET")
          const tokenKey = setting("BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET_KEY")
          const caConfigMap = setting("BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP")
          const caKey = setting("BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP_KEY")
          const fake = yield* Effect.acquireRelease(
            Effect.promise(() =>
              startFakeKubernetesApi({
                token: "kube-api-token-51f0b2",
                namespaces: [namespace],
                secrets: [{ namespace, name: tokenSecret, stringData: { [tokenKey]: token } }],
                configMaps: [{ namespace, name: caConfigMap, data: { [caKey]: ca.certificate } }]
              })
            ),
            (fake) => Effect.promise(() => fake.close())
          )
          const readinessTimeout = Duration.fromInput(
            setting("BOSUN_PLATFORM_CONTAINER_READINESS_TIMEOUT") as Duration.Input
          )
          expect(Option.isSome(readinessTimeout)).toBe(true)
          const classes = JSON.parse(setting("BOSUN_PLATFORM_CONTAINER_INSTANCE_CLASSES")) as Record<
            InstanceClass,
            { cpu: string; memory: string }
          >
          expect(classes).toEqual(OPTIONS.platformContainer.instanceClasses)
          const provider = layerPlatformContainer({
            kubernetes: { _tag: "Server", server: new URL(fake.url), token: Redacted.make("kube-api-token-51f0b2") },
            namespace,
            image: setting("BOSUN_PLATFORM_CONTAINER_IMAGE"),
            serviceAccountName: setting("BOSUN_PLATFORM_CONTAINER_SERVICE_ACCOUNT"),
            runtimePort: Number(setting("BOSUN_PLATFORM_CONTAINER_RUNTIME_PORT")),
            instanceClasses: classes,
            runtimeToken: { secretName: tokenSecret, key: tokenKey, value: Redacted.make(token) },
            caConfigMap: { name: caConfigMap, key: caKey },
            proxySecretKey: Redacted.make("proxy-derivation-key-0c93"),
            readinessTimeout: Option.getOrElse(readinessTimeout, () => Duration.seconds(30)),
            pollInterval: Duration.millis(100)
          }).pipe(
            Layer.provideMerge(
              Layer.mergeAll(
                RuntimeClient.layer,
                InjectionProxy.layer({
                  host: "127.0.0.1",
                  port: 0,
                  ca: { certificate: ca.certificate, privateKey: Redacted.make(ca.privateKey) },
                  tiers: JSON.parse(setting("BOSUN_EGRESS_TIERS"))
                })
              )
            )
          )

          yield* Effect.gen(function* () {
            const sandboxes = yield* SandboxProvider
            for (const instanceClass of ["standard-2", "standard-4"] as const) {
              const sandbox = yield* sandboxes.acquire({
                organizationId: "org-1",
                runId: `run-${instanceClass}`,
                attemptId: `run-${instanceClass}:1`,
                instanceClass,
                egressTier: "STRICT",
                agent: "CUSTOM",
                grants: []
              })
              yield* sandboxes.release(sandbox)
            }
          }).pipe(Effect.provide(provider))

          expect(fake.createdPods).toHaveLength(2)
          for (const [i, pod] of fake.createdPods.entries()) {
            const instanceClass = i === 0 ? "standard-2" : "standard-4"
            expect(yield* Effect.promise(() => kubernetesSchemaProblems(pod))).toEqual([])
            expect(pod.metadata.namespace).toBe(SANDBOXES)
            expect(pod.spec).toMatchObject({
              serviceAccountName: "acme-bosun-sandbox",
              automountServiceAccountToken: false
            })
            expect((pod.spec?.containers?.[0] as { resources?: unknown } | undefined)?.resources).toEqual({
              requests: OPTIONS.platformContainer.instanceClasses[instanceClass],
              limits: OPTIONS.platformContainer.instanceClasses[instanceClass]
            })
            expect(
              selects(policy.spec.podSelector.matchLabels, pod.metadata.labels ?? {}),
              "the NetworkPolicy selects the pod"
            ).toBe(true)
          }
          for (const secret of fake.createdSecrets) {
            expect(yield* Effect.promise(() => kubernetesSchemaProblems(secret))).toEqual([])
          }

          // Every call the provider made, as RBAC sees it, and what the Role grants: the same set.
          const used = new Set(
            fake.requests.map((request) => {
              const [, resource, name] =
                /^\/api\/v1\/namespaces\/[^/]+\/([a-z]+)(?:\/([^/?]+))?/.exec(request.path) ?? []
              const verb =
                request.method === "POST"
                  ? "create"
                  : request.method === "DELETE"
                    ? "delete"
                    : name === undefined
                      ? "list"
                      : "get"
              expect(request.path.startsWith(`/api/v1/namespaces/${SANDBOXES}/`), request.path).toBe(true)
              return `${resource} ${verb}`
            })
          )
          const granted = new Set(
            role.rules.flatMap((rule) => {
              expect(rule.apiGroups).toEqual([""])
              return rule.resources.flatMap((resource) => rule.verbs.map((verb) => `${resource} ${verb}`))
            })
          )
          expect([...used].sort()).toEqual([...granted].sort())
          expect([...granted].sort()).toEqual([
            "pods create",
            "pods delete",
            "pods get",
            "secrets create",
            "secrets delete"
          ])
        }).pipe(Effect.scoped),
      // Two runtime processes start, one per instance class: slow on a busy two-core machine.
      120_000
    )

    it("refuses values that cannot make a working deployment, saying which value and why", () => {
      expect(failureOf({ all: { replicas: 0 } })).toContain("all.replicas must be at least 1 (got 0)")
      expect(failureOf({ split: true, runner: { replicas: 0 } })).toContain(
        "runner.replicas must be at least 1 (got 0)"
      )
      expect(failureOf({ keys: { secretName: "" } })).toContain(
        "keys.secretName is required: the existing Secret holding the master key ring and the bootstrap token"
      )
      expect(failureOf({ postgres: { secretName: "" } })).toContain("postgres.secretName is required")
      expect(failureOf({ s3: { bucket: "" } })).toContain("s3.bucket is required: pods share no disk")
      expect(failureOf({ runtime: { url: "https://runtime.acme.internal" } })).toContain(
        "runtime.tokenSecretName is required when runtime.url is set"
      )
      expect(failureOf({ platformContainer: { enabled: true, caConfigMap: { name: "", key: "ca.crt" } } })).toContain(
        "platformContainer.caConfigMap.name is required"
      )
      const grace = failureOf({ shutdown: { terminationGracePeriodSeconds: 30 } })
      expect(grace).toContain("shutdown.terminationGracePeriodSeconds must exceed the graceful stop of 45 s")
      expect(grace).toContain("got 30")
      // values.schema.json: a misspelt key or a wrong type stops the render before any template runs.
      expect(failureOf({ all: { replica: 3 } })).toContain("Additional property replica is not allowed")
      expect(failureOf({ cluster: { runnerHealth: "consul" } })).toContain("runnerHealth")
      expect(
        failureOf({ platformContainer: { instanceClasses: { "standard-8": { cpu: "8", memory: "16Gi" } } } })
      ).toContain("standard-8")
    })
  }
)

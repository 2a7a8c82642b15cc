/**
 * The sandbox providers besides EXTERNAL_RUNTIME (docs/interface.md: What the service does 5,
 * Trust boundaries 3; Design rules), read at start-up like every other setting:
 *
 * - PLATFORM_CONTAINER is on when `BOSUN_PLATFORM_CONTAINER_NAMESPACE` is set: a Pod per attempt
 *   in that namespace, made through the Kubernetes API (the pod's own service account, or
 *   `BOSUN_KUBERNETES_API_URL` with `BOSUN_KUBERNETES_TOKEN` from outside the cluster), its only
 *   way out Bosun's credential-injection egress proxy, which every runner then runs (an API-only
 *   process reads these settings but starts neither provider: `app/cluster/AttemptPortsLive.ts`).
 * - HOSTED_SANDBOX is on when `BOSUN_HOSTED_SANDBOX_API_URL` is set.
 *
 * A provider that is switched on but misses a setting it cannot run without stops start-up with
 * one line naming the variable, rather than failing every attempt later. The names are the ones
 * the Helm chart sets (`infra/helm/bosun/templates/deployment.yaml`).
 */

import type { HostedSandboxSettings } from "@bosun/actors/sandbox/HostedSandbox"
import type { InjectionProxySettings } from "@bosun/actors/sandbox/InjectionProxy"
import type { KubernetesAccess, PlatformContainerSettings } from "@bosun/actors/sandbox/PlatformContainer"
import { Config, Duration, Effect, Option, type Redacted, Schema } from "effect"
import { configProblem, credentialedUrl } from "./ConfigChecks.ts"

export interface SandboxSettings {
  readonly platformContainer: Option.Option<{
    readonly provider: PlatformContainerSettings
    readonly proxy: InjectionProxySettings
  }>
  readonly hostedSandbox: Option.Option<HostedSandboxSettings>
}

const Port = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 65535 }))
const Minutes = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100_000 }))

const PodResources = Schema.Struct({ cpu: Schema.NonEmptyString, memory: Schema.NonEmptyString })
/** `{"standard-2":{"cpu":"2","memory":"4Gi"},"standard-4":{...}}`, as the chart writes `instanceClasses`. */
const InstanceClassesJson = Schema.fromJsonString(
  Schema.Struct({ "standard-2": PodResources, "standard-4": PodResources })
)
/** Per egress tier, `host` or `host:port` entries the proxy lets through; a tier left out reaches nothing. */
const EgressTiersJson = Schema.fromJsonString(
  Schema.Struct({
    STRICT: Schema.optional(Schema.Array(Schema.String)),
    BUILD: Schema.optional(Schema.Array(Schema.String)),
    DEEP_SCAN: Schema.optional(Schema.Array(Schema.String))
  })
)
/** Per egress tier, the comma-separated CIDRs a hosted sandbox may reach; a tier left out reaches nothing. */
const NetworkAllowListJson = Schema.fromJsonString(
  Schema.Struct({
    STRICT: Schema.optional(Schema.String),
    BUILD: Schema.optional(Schema.String),
    DEEP_SCAN: Schema.optional(Schema.String)
  })
)

const optionalString = (name: string) => Config.option(Config.NonEmptyString(name))
const optionalSecret = (name: string) => Config.option(Config.schema(Schema.Redacted(Schema.NonEmptyString), name))

/** The value of a setting the provider switched on by `enabledBy` cannot run without. */
const required = <A>(value: Option.Option<A>, name: string, enabledBy: string, what: string) =>
  Option.match(value, {
    onNone: () => Effect.fail(configProblem(`${name}: required when ${enabledBy} is set (${what})`)),
    onSome: Effect.succeed
  })

const PC = "BOSUN_PLATFORM_CONTAINER_NAMESPACE"

const kubernetesConfig = Config.all({
  url: Config.option(Config.URL("BOSUN_KUBERNETES_API_URL")),
  token: optionalSecret("BOSUN_KUBERNETES_TOKEN"),
  caCertificate: optionalString("BOSUN_KUBERNETES_CA_CERTIFICATE")
}).pipe(
  Config.mapEffect(({ url, token, caCertificate }): Effect.Effect<KubernetesAccess, Config.ConfigError> => {
    if (Option.isNone(url) && Option.isNone(token)) return Effect.succeed({ _tag: "InCluster" })
    if (Option.isSome(url) && Option.isSome(token)) {
      return Effect.succeed({
        _tag: "Server",
        server: url.value,
        token: token.value,
        ...(Option.isSome(caCertificate) ? { caCertificate: caCertificate.value } : {})
      })
    }
    return Effect.fail(
      configProblem(
        Option.isSome(url)
          ? "BOSUN_KUBERNETES_TOKEN: required when BOSUN_KUBERNETES_API_URL is set (a bearer token that may manage Pods and Secrets in the sandbox namespace)"
          : "BOSUN_KUBERNETES_API_URL: required when BOSUN_KUBERNETES_TOKEN is set (the API server's URL; leave both unset inside the cluster)"
      )
    )
  })
)

const platformContainerConfig = Config.all({
  namespace: optionalString(PC),
  kubernetes: kubernetesConfig,
  image: optionalString("BOSUN_PLATFORM_CONTAINER_IMAGE"),
  serviceAccount: optionalString("BOSUN_PLATFORM_CONTAINER_SERVICE_ACCOUNT"),
  runtimePort: Config.schema(Port, "BOSUN_PLATFORM_CONTAINER_RUNTIME_PORT").pipe(Config.withDefault(8787)),
  instanceClasses: Config.option(Config.schema(InstanceClassesJson, "BOSUN_PLATFORM_CONTAINER_INSTANCE_CLASSES")),
  readinessTimeout: Config.Duration("BOSUN_PLATFORM_CONTAINER_READINESS_TIMEOUT").pipe(
    Config.withDefault(Duration.minutes(5))
  ),
  tokenSecret: optionalString("BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET"),
  tokenSecretKey: Config.NonEmptyString("BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET_KEY").pipe(
    Config.withDefault("token")
  ),
  token: optionalSecret("BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN"),
  caConfigMap: optionalString("BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP"),
  caConfigMapKey: Config.NonEmptyString("BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP_KEY").pipe(Config.withDefault("ca.crt")),
  proxyHost: Config.NonEmptyString("BOSUN_EGRESS_PROXY_HOST").pipe(Config.withDefault("127.0.0.1")),
  proxyPort: Config.schema(Port, "BOSUN_EGRESS_PROXY_PORT").pipe(Config.withDefault(3128)),
  proxyAdvertisedHost: optionalString("BOSUN_EGRESS_PROXY_ADVERTISED_HOST"),
  proxyCaCertificate: optionalString("BOSUN_EGRESS_PROXY_CA_CERTIFICATE"),
  proxyCaKey: optionalSecret("BOSUN_EGRESS_PROXY_CA_KEY"),
  proxySecretKey: optionalSecret("BOSUN_EGRESS_PROXY_SECRET_KEY"),
  tiers: Config.schema(EgressTiersJson, "BOSUN_EGRESS_TIERS").pipe(Config.withDefault<typeof EgressTiersJson.Type>({}))
}).pipe(
  Config.mapEffect((c) =>
    Option.match(c.namespace, {
      onNone: () => Effect.succeed(Option.none()),
      onSome: (namespace) =>
        Effect.gen(function* () {
          const need = <A>(value: Option.Option<A>, name: string, what: string) => required(value, name, PC, what)
          const image = yield* need(c.image, "BOSUN_PLATFORM_CONTAINER_IMAGE", "the runtime image the pods run")
          const serviceAccountName = yield* need(
            c.serviceAccount,
            "BOSUN_PLATFORM_CONTAINER_SERVICE_ACCOUNT",
            "the service account the pods run as"
          )
          const tokenSecret = yield* need(
            c.tokenSecret,
            "BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET",
            "the Secret in the sandbox namespace holding the runtime token"
          )
          const token: Redacted.Redacted<string> = yield* need(
            c.token,
            "BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN",
            "the instance-scoped runtime token, the one that Secret holds"
          )
          const caConfigMap = yield* need(
            c.caConfigMap,
            "BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP",
            "the ConfigMap with the egress CA certificate the pods trust"
          )
          const certificate = yield* need(
            c.proxyCaCertificate,
            "BOSUN_EGRESS_PROXY_CA_CERTIFICATE",
            "the egress CA certificate, PEM"
          )
          const privateKey = yield* need(c.proxyCaKey, "BOSUN_EGRESS_PROXY_CA_KEY", "the egress CA's private key, PEM")
          const proxySecretKey = yield* need(
            c.proxySecretKey,
            "BOSUN_EGRESS_PROXY_SECRET_KEY",
            "the key each pod's proxy credential is derived from"
          )
          const provider: PlatformContainerSettings = {
            kubernetes: c.kubernetes,
            namespace,
            image,
            serviceAccountName,
            runtimePort: c.runtimePort,
            runtimeToken: { secretName: tokenSecret, key: c.tokenSecretKey, value: token },
            caConfigMap: { name: caConfigMap, key: c.caConfigMapKey },
            proxySecretKey,
            readinessTimeout: c.readinessTimeout,
            ...(Option.isSome(c.instanceClasses) ? { instanceClasses: c.instanceClasses.value } : {}),
            ...(Option.isSome(c.proxyAdvertisedHost)
              ? { proxyAddress: { host: c.proxyAdvertisedHost.value, port: c.proxyPort } }
              : {})
          }
          const proxy: InjectionProxySettings = {
            host: c.proxyHost,
            port: c.proxyPort,
            ca: { certificate, privateKey },
            tiers: { STRICT: c.tiers.STRICT ?? [], BUILD: c.tiers.BUILD ?? [], DEEP_SCAN: c.tiers.DEEP_SCAN ?? [] }
          }
          return Option.some({ provider, proxy })
        })
    })
  )
)

const HS = "BOSUN_HOSTED_SANDBOX_API_URL"

const hostedSandboxConfig = Config.all({
  apiUrl: Config.option(Config.URL(HS)),
  apiKey: optionalSecret("BOSUN_HOSTED_SANDBOX_API_KEY"),
  organizationId: optionalString("BOSUN_HOSTED_SANDBOX_ORGANIZATION_ID"),
  target: optionalString("BOSUN_HOSTED_SANDBOX_TARGET"),
  snapshot: optionalString("BOSUN_HOSTED_SANDBOX_SNAPSHOT"),
  image: optionalString("BOSUN_HOSTED_SANDBOX_IMAGE"),
  runtimeToken: optionalSecret("BOSUN_HOSTED_SANDBOX_RUNTIME_TOKEN"),
  runtimePort: Config.option(Config.schema(Port, "BOSUN_HOSTED_SANDBOX_RUNTIME_PORT")),
  networkAllowList: Config.schema(NetworkAllowListJson, "BOSUN_HOSTED_SANDBOX_NETWORK_ALLOW_LIST").pipe(
    Config.withDefault<typeof NetworkAllowListJson.Type>({})
  ),
  readinessTimeout: Config.option(Config.Duration("BOSUN_HOSTED_SANDBOX_READINESS_TIMEOUT")),
  idleStopMinutes: Config.option(Config.schema(Minutes, "BOSUN_HOSTED_SANDBOX_IDLE_STOP_MINUTES")),
  maxLifetimeMinutes: Config.option(Config.schema(Minutes, "BOSUN_HOSTED_SANDBOX_MAX_LIFETIME_MINUTES"))
}).pipe(
  Config.mapEffect((c) =>
    Option.match(c.apiUrl, {
      onNone: () => Effect.succeed(Option.none()),
      onSome: (url) =>
        Effect.gen(function* () {
          const apiUrl = yield* credentialedUrl(HS)(url)
          const apiKey = yield* required(c.apiKey, "BOSUN_HOSTED_SANDBOX_API_KEY", HS, "the provider's API key")
          const runtimeToken = yield* required(
            c.runtimeToken,
            "BOSUN_HOSTED_SANDBOX_RUNTIME_TOKEN",
            HS,
            "the instance-scoped token the sandboxes' runtime is started with"
          )
          if (Option.isSome(c.snapshot) && Option.isSome(c.image)) {
            return yield* Effect.fail(
              configProblem(
                "BOSUN_HOSTED_SANDBOX_IMAGE: set it or BOSUN_HOSTED_SANDBOX_SNAPSHOT, not both (the runtime image itself, or a snapshot made from it)"
              )
            )
          }
          const runtimeImage = yield* required(
            Option.orElse(
              Option.map(c.snapshot, (snapshot): HostedSandboxSettings["runtimeImage"] => ({ snapshot })),
              () => Option.map(c.image, (image): HostedSandboxSettings["runtimeImage"] => ({ image }))
            ),
            "BOSUN_HOSTED_SANDBOX_SNAPSHOT",
            HS,
            "or BOSUN_HOSTED_SANDBOX_IMAGE: the runtime image the sandboxes run, as a snapshot or the image itself"
          )
          const settings: HostedSandboxSettings = {
            apiUrl,
            apiKey,
            runtimeToken,
            runtimeImage,
            networkAllowList: {
              STRICT: c.networkAllowList.STRICT ?? "",
              BUILD: c.networkAllowList.BUILD ?? "",
              DEEP_SCAN: c.networkAllowList.DEEP_SCAN ?? ""
            },
            ...Option.match(c.organizationId, { onNone: () => ({}), onSome: (organizationId) => ({ organizationId }) }),
            ...Option.match(c.target, { onNone: () => ({}), onSome: (target) => ({ target }) }),
            ...Option.match(c.runtimePort, { onNone: () => ({}), onSome: (runtimePort) => ({ runtimePort }) }),
            ...Option.match(c.readinessTimeout, {
              onNone: () => ({}),
              onSome: (readinessTimeout) => ({ readinessTimeout })
            }),
            ...Option.match(c.idleStopMinutes, {
              onNone: () => ({}),
              onSome: (idleStopMinutes) => ({ idleStopMinutes })
            }),
            ...Option.match(c.maxLifetimeMinutes, {
              onNone: () => ({}),
              onSome: (maxLifetimeMinutes) => ({ maxLifetimeMinutes })
            })
          }
          return Option.some(settings)
        })
    })
  )
)

export const sandboxConfig: Config.Config<SandboxSettings> = Config.all({
  platformContainer: platformContainerConfig,
  hostedSandbox: hostedSandboxConfig
})

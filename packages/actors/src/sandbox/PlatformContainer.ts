/**
 * PLATFORM_CONTAINER (docs/interface.md: Trust boundaries): a fresh Kubernetes Pod per attempt,
 * made through the Kubernetes API with the official client, running the runtime image under
 * `credential_mode: INJECTED`. No pooling: an attempt's pod and its Secret are named after the
 * attempt, so `acquire` is idempotent by attempt id and `release` deletes both.
 *
 * The pod: restartPolicy Never, uid 1000 and no privilege escalation, no service-account token,
 * CPU/memory requests (= limits) by instance class, the instance-scoped runtime token from an
 * existing Secret, and every HTTP(S) client pointed at Bosun's egress proxy (`HTTPS_PROXY` & co.,
 * read from the attempt's own Secret so the proxy credential is not in the pod spec) with the
 * deployment CA — the only CA it needs, since the proxy terminates every TLS connection — mounted
 * from a ConfigMap. The proxy credential is HMAC-SHA256(key, attempt id): a control plane that
 * restarts re-registers the same secret the running pod already holds, without storing it.
 * AGENT_ONE is refused before any Kubernetes call (docs/interface.md: Errors 6).
 */
import { createHash, createHmac } from "node:crypto"
import { isIPv6 } from "node:net"
import { AGENT_ONE_ON_PLATFORM_CONTAINER, isCompatibleRuntimeProtocol, RUNTIME_PROTOCOL_VERSION } from "@bosun/domain"
import { ApiException, CoreV1Api, KubeConfig, type V1EnvVar, type V1Pod, type V1Secret } from "@kubernetes/client-node"
import { Duration, Effect, Layer, Redacted, Schema } from "effect"
import { RuntimeClient } from "../runtime/RuntimeClient.ts"
import { InjectionProxy } from "./InjectionProxy.ts"
import { type InstanceClass, type Sandbox, SandboxError, SandboxProvider, type SandboxSpec } from "./SandboxProvider.ts"

export type KubernetesAccess =
  /** An API server URL and a bearer token; `caCertificate` (PEM) when its TLS certificate is not publicly trusted. */
  | {
      readonly _tag: "Server"
      readonly server: URL
      readonly token: Redacted.Redacted<string>
      readonly caCertificate?: string
    }
  /** The pod's own service account (KUBERNETES_SERVICE_HOST and the mounted token). */
  | { readonly _tag: "InCluster" }

export interface InstanceResources {
  readonly cpu: string
  readonly memory: string
}

export const INSTANCE_CLASS_RESOURCES: Readonly<Record<InstanceClass, InstanceResources>> = {
  "standard-2": { cpu: "2", memory: "4Gi" },
  "standard-4": { cpu: "4", memory: "8Gi" }
}

export interface PlatformContainerSettings {
  readonly kubernetes: KubernetesAccess
  readonly namespace: string
  readonly image: string
  readonly serviceAccountName: string
  /** Where the runtime listens in the pod (8787). */
  readonly runtimePort: number
  readonly instanceClasses?: Readonly<Record<InstanceClass, InstanceResources>>
  /** The existing Secret holding the instance-scoped runtime token, and the token itself (to call the runtime). */
  readonly runtimeToken: {
    readonly secretName: string
    readonly key: string
    readonly value: Redacted.Redacted<string>
  }
  /** The existing ConfigMap holding the deployment CA certificate (PEM) under `key`. */
  readonly caConfigMap: { readonly name: string; readonly key: string }
  /** The key per-attempt proxy secrets are derived from. */
  readonly proxySecretKey: Redacted.Redacted<string>
  /** The proxy as pods reach it (a Service name), when that is not where it listens. */
  readonly proxyAddress?: { readonly host: string; readonly port: number }
  /** From pod creation to a runtime that answers its health. */
  readonly readinessTimeout: Duration.Duration
  /** How often the pod's status is read while waiting (default 1 s). */
  readonly pollInterval?: Duration.Duration
}

const CA_DIR = "/etc/bosun/ca"
const CA_FILE = `${CA_DIR}/ca.crt`
const PROXY_URL_KEY = "proxy-url"
const CONTAINER = "runtime"

const hashOf = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16)

/** The pod (and Secret) name of an attempt: DNS-1123, stable across control-plane restarts. */
export const podNameOf = (attemptId: string) => `bosun-attempt-${hashOf(attemptId)}`

/** A label value as is when Kubernetes accepts it (≤ 63, alphanumeric ends), else its hash. */
const labelValue = (value: string) =>
  /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(value) ? value : hashOf(value)

const KubernetesStatus = Schema.Struct({
  message: Schema.optional(Schema.String),
  reason: Schema.optional(Schema.String)
})
const decodeStatusText = Schema.decodeUnknownOption(Schema.fromJsonString(KubernetesStatus))
const decodeStatus = Schema.decodeUnknownOption(KubernetesStatus)

/** The Status message Kubernetes sent with an error answer (the client keeps the body as text). */
const statusMessageOf = (body: unknown) => {
  const status = typeof body === "string" ? decodeStatusText(body) : decodeStatus(body)
  return status._tag === "Some" ? (status.value.message ?? status.value.reason) : undefined
}

const codeOf = (cause: unknown): string | undefined => {
  if (typeof cause !== "object" || cause === null) return undefined
  const code = (cause as { code?: unknown }).code
  if (typeof code === "string") return code
  return codeOf((cause as { cause?: unknown }).cause)
}

/** Why a pod is where it is, in Kubernetes' words: its phase, then the reasons it gives. */
const conditionOf = (pod: V1Pod) => {
  const status = pod.status
  const container = status?.containerStatuses?.[0]
  const waiting = container?.state?.waiting
  const terminated = container?.state?.terminated ?? container?.lastState?.terminated
  const unscheduled = status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False")
  const details = [
    [status?.reason, status?.message],
    [unscheduled?.reason, unscheduled?.message],
    [waiting?.reason, waiting?.message],
    terminated === undefined
      ? []
      : [`${terminated.reason ?? "Terminated"} (exit code ${terminated.exitCode})`, terminated.message?.trim()]
  ]
    .map((parts) => parts.filter((part) => part !== undefined && part !== "").join(": "))
    .filter((detail) => detail !== "")
  return `${status?.phase ?? "Pending"}${details.length === 0 ? "" : ` (${details.join("; ")})`}`
}

const kubeConfigOf = (access: KubernetesAccess) => {
  const config = new KubeConfig()
  if (access._tag === "InCluster") {
    config.loadFromCluster()
    return config
  }
  config.loadFromClusterAndUser(
    {
      name: "bosun",
      server: `${access.server.origin}${access.server.pathname.replace(/\/+$/, "")}`,
      // The client refuses a plain-HTTP server unless told to skip TLS checks, which plain HTTP has none of.
      skipTLSVerify: access.server.protocol === "http:",
      ...(access.caCertificate === undefined ? {} : { caData: Buffer.from(access.caCertificate).toString("base64") })
    },
    { name: "bosun", token: Redacted.value(access.token) }
  )
  return config
}

const proxySecretOf = (settings: PlatformContainerSettings, attemptId: string) =>
  createHmac("sha256", Redacted.value(settings.proxySecretKey)).update(attemptId).digest("hex")

const isStatus = (status: number) => (error: unknown) => error instanceof ApiException && error.code === status

/** The Kubernetes API as the provider calls it: one namespace, answers scrubbed of Bosun's secrets. */
interface Kube {
  readonly api: CoreV1Api
  readonly namespace: string
  /** Kubernetes' messages may echo what was sent; none of Bosun's secrets leave in an error. */
  readonly scrub: (message: string, attemptId?: string) => string
  /** One API call; `tolerate` answers a status Kubernetes may give on a repeat (409, 404) instead of failing. */
  readonly call: <A, B = never>(
    what: string,
    attemptId: string | undefined,
    run: () => Promise<A>,
    tolerate?: { readonly status: number; readonly recover: () => Promise<B> }
  ) => Effect.Effect<A | B, SandboxError>
}

const makeKube = (settings: PlatformContainerSettings, api: CoreV1Api): Kube => {
  const apiName =
    settings.kubernetes._tag === "Server" ? settings.kubernetes.server.origin : "the in-cluster Kubernetes API"
  const secrets = [
    Redacted.value(settings.runtimeToken.value),
    ...(settings.kubernetes._tag === "Server" ? [Redacted.value(settings.kubernetes.token)] : [])
  ]
  const scrub = (message: string, attemptId?: string) =>
    [...secrets, ...(attemptId === undefined ? [] : [proxySecretOf(settings, attemptId)])]
      .filter((secret) => secret !== "")
      .reduce((out, secret) => out.split(secret).join("[redacted]"), message)

  const failureOf =
    (what: string, attemptId?: string) =>
    (cause: unknown): SandboxError => {
      if (cause instanceof ApiException) {
        const code = cause.code
        const detail = statusMessageOf(cause.body) ?? (code === 401 ? "Unauthorized" : `HTTP ${code}`)
        return new SandboxError({
          reason: code === 429 || code >= 500 ? "Unavailable" : "Refused",
          message: scrub(`Kubernetes refused to ${what} (${code}): ${detail}`, attemptId)
        })
      }
      return new SandboxError({
        reason: "Unavailable",
        message: `${apiName} could not be reached to ${what} (${codeOf(cause) ?? "connection failed"})`
      })
    }

  const call = <A, B = never>(
    what: string,
    attemptId: string | undefined,
    run: () => Promise<A>,
    tolerate?: { readonly status: number; readonly recover: () => Promise<B> }
  ) =>
    Effect.tryPromise({
      try: () =>
        tolerate === undefined
          ? run()
          : run().then(
              (value): A | B => value,
              (error: unknown) => (isStatus(tolerate.status)(error) ? tolerate.recover() : Promise.reject(error))
            ),
      catch: failureOf(what, attemptId)
    })

  return { api, namespace: settings.namespace, scrub, call }
}

const labelsOf = (spec: SandboxSpec) => ({
  "app.kubernetes.io/name": "bosun-runtime",
  "app.kubernetes.io/managed-by": "bosun",
  "bosun.dev/attempt": hashOf(spec.attemptId),
  "bosun.dev/run": labelValue(spec.runId),
  "bosun.dev/organization": labelValue(spec.organizationId),
  "bosun.dev/instance-class": spec.instanceClass
})
const annotationsOf = (spec: SandboxSpec) => ({
  "bosun.dev/attempt-id": spec.attemptId,
  "bosun.dev/run-id": spec.runId,
  "bosun.dev/organization-id": spec.organizationId
})

/** The attempt's Secret: the proxy URL with the attempt's proxy credential in it. */
const secretOf = (
  settings: PlatformContainerSettings,
  proxyAddress: { readonly host: string; readonly port: number },
  spec: SandboxSpec,
  name: string
): V1Secret => {
  const host = isIPv6(proxyAddress.host) ? `[${proxyAddress.host}]` : proxyAddress.host
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace: settings.namespace, labels: labelsOf(spec), annotations: annotationsOf(spec) },
    type: "Opaque",
    stringData: {
      [PROXY_URL_KEY]: `http://${encodeURIComponent(spec.attemptId)}:${proxySecretOf(settings, spec.attemptId)}@${host}:${proxyAddress.port}`
    }
  }
}

/** The runtime container's environment: its token, where it listens, the proxy (from the attempt's Secret) and the CA. */
const podEnvOf = (settings: PlatformContainerSettings, secretName: string): Array<V1EnvVar> => {
  const proxyUrl = { valueFrom: { secretKeyRef: { name: secretName, key: PROXY_URL_KEY } } }
  return [
    {
      name: "BOSUN_RUNTIME_TOKEN",
      valueFrom: { secretKeyRef: { name: settings.runtimeToken.secretName, key: settings.runtimeToken.key } }
    },
    { name: "BOSUN_RUNTIME_HOST", value: "0.0.0.0" },
    { name: "BOSUN_RUNTIME_PORT", value: String(settings.runtimePort) },
    ...["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"].map((variable) => ({
      name: variable,
      ...proxyUrl
    })),
    // Only the pod itself bypasses the proxy: nothing external does.
    { name: "NO_PROXY", value: "localhost,127.0.0.1,::1" },
    { name: "no_proxy", value: "localhost,127.0.0.1,::1" },
    ...["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "GIT_SSL_CAINFO"].map((variable) => ({
      name: variable,
      value: CA_FILE
    }))
  ]
}

const podOf = (settings: PlatformContainerSettings, spec: SandboxSpec, name: string): V1Pod => {
  const classes = settings.instanceClasses ?? INSTANCE_CLASS_RESOURCES
  const resources = { cpu: classes[spec.instanceClass].cpu, memory: classes[spec.instanceClass].memory }
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: settings.namespace, labels: labelsOf(spec), annotations: annotationsOf(spec) },
    spec: {
      restartPolicy: "Never",
      serviceAccountName: settings.serviceAccountName,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      securityContext: {
        runAsUser: 1000,
        runAsGroup: 1000,
        runAsNonRoot: true,
        fsGroup: 1000,
        seccompProfile: { type: "RuntimeDefault" }
      },
      containers: [
        {
          name: CONTAINER,
          image: settings.image,
          ports: [{ name: "runtime", containerPort: settings.runtimePort }],
          env: podEnvOf(settings, name),
          resources: { requests: resources, limits: resources },
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ["ALL"] } },
          readinessProbe: {
            httpGet: { path: "/healthz", port: settings.runtimePort },
            periodSeconds: 2
          },
          volumeMounts: [{ name: "bosun-ca", mountPath: CA_DIR, readOnly: true }],
          terminationMessagePolicy: "FallbackToLogsOnError"
        }
      ],
      volumes: [
        {
          name: "bosun-ca",
          configMap: {
            name: settings.caConfigMap.name,
            items: [{ key: settings.caConfigMap.key, path: "ca.crt" }],
            defaultMode: 0o444
          }
        }
      ]
    }
  }
}

/** Polls the pod until it runs with an address and ready containers; an ended pod fails at once. */
const awaitRunning = Effect.fnUntraced(function* (
  kube: Kube,
  pollInterval: Duration.Duration,
  name: string,
  attemptId: string,
  seen: { last: string }
) {
  for (;;) {
    const pod = yield* kube.call("read the pod", attemptId, () =>
      kube.api.readNamespacedPod({ name, namespace: kube.namespace })
    )
    const phase = pod.status?.phase
    seen.last = kube.scrub(conditionOf(pod), attemptId)
    if (phase === "Failed" || phase === "Succeeded") {
      return yield* new SandboxError({ reason: "Unavailable", message: `Pod ${name} ended: ${seen.last}` })
    }
    const podIP = pod.status?.podIP
    const ready = (pod.status?.containerStatuses ?? []).every((container) => container.ready)
    if (
      phase === "Running" &&
      podIP !== undefined &&
      podIP !== "" &&
      ready &&
      pod.metadata?.deletionTimestamp === undefined
    ) {
      return podIP
    }
    yield* Effect.sleep(pollInterval)
  }
})

const deleteQuietly = (kube: Kube, name: string, attemptId: string | undefined) =>
  Effect.gen(function* () {
    const namespace = kube.namespace
    const deleted = yield* kube.call(
      "delete the pod",
      attemptId,
      () => kube.api.deleteNamespacedPod({ name, namespace }),
      {
        status: 404,
        recover: () => Promise.resolve(undefined)
      }
    )
    yield* kube.call("delete the pod's secret", attemptId, () => kube.api.deleteNamespacedSecret({ name, namespace }), {
      status: 404,
      recover: () => Promise.resolve(undefined)
    })
    return deleted?.metadata?.annotations?.["bosun.dev/attempt-id"]
  })

/** What `acquire` and `release` share: the settings, the API, the proxy, the runtime client and the attempts made. */
interface Pods {
  readonly settings: PlatformContainerSettings
  readonly kube: Kube
  readonly runtimes: RuntimeClient["Service"]
  readonly proxy: InjectionProxy["Service"]
  readonly proxyAddress: { readonly host: string; readonly port: number }
  /** Attempt ids of the pods this process made, for `release` (the pod's annotation says it too). */
  readonly attempts: Map<string, string>
}

/** Creates the attempt's Secret and pod, or adopts those a retried step made, and waits for the pod to run. */
const startPod = Effect.fnUntraced(function* (pods: Pods, spec: SandboxSpec, name: string) {
  const { kube, settings } = pods
  const namespace = kube.namespace
  yield* kube.call(
    "create the pod's secret",
    spec.attemptId,
    () => kube.api.createNamespacedSecret({ namespace, body: secretOf(settings, pods.proxyAddress, spec, name) }),
    { status: 409, recover: () => Promise.resolve(undefined) }
  )
  yield* kube.call(
    "create the pod",
    spec.attemptId,
    () => kube.api.createNamespacedPod({ namespace, body: podOf(settings, spec, name) }),
    // The attempt's pod exists already (a retried step): it is the one to use.
    { status: 409, recover: () => kube.api.readNamespacedPod({ name, namespace }) }
  )

  const seen = { last: "Pending" }
  return yield* awaitRunning(kube, settings.pollInterval ?? Duration.seconds(1), name, spec.attemptId, seen).pipe(
    Effect.timeoutOrElse({
      duration: settings.readinessTimeout,
      orElse: () =>
        Effect.fail(
          new SandboxError({
            reason: "Unavailable",
            message: `Pod ${name} was not ready within ${Duration.format(settings.readinessTimeout)}: ${seen.last}`
          })
        )
    })
  )
})

/** Checks that the runtime in the pod answers and speaks a compatible protocol. */
const connectRuntime = Effect.fnUntraced(function* (pods: Pods, spec: SandboxSpec, name: string, podIP: string) {
  const host = isIPv6(podIP) ? `[${podIP}]` : podIP
  const endpoint = {
    baseUrl: new URL(`http://${host}:${pods.settings.runtimePort}`),
    token: pods.settings.runtimeToken.value
  }
  const health = yield* pods.runtimes.connect(endpoint).health.pipe(
    Effect.mapError(
      (error) =>
        new SandboxError({
          reason: "Unavailable",
          message: `The runtime in pod ${name}: ${pods.kube.scrub(error.message, spec.attemptId)}`
        })
    )
  )
  if (!isCompatibleRuntimeProtocol(health.protocol_version)) {
    return yield* new SandboxError({
      reason: "Refused",
      message: `The runtime in pod ${name} speaks protocol ${health.protocol_version}; Bosun speaks ${RUNTIME_PROTOCOL_VERSION}`
    })
  }
  const sandbox: Sandbox = { id: name, provider: "PLATFORM_CONTAINER", endpoint, credentialMode: "INJECTED" }
  return sandbox
})

const acquire = Effect.fn("PlatformContainer.acquire")(
  function* (pods: Pods, spec: SandboxSpec) {
    if (spec.agent === "AGENT_ONE") {
      return yield* new SandboxError({ reason: "Refused", message: AGENT_ONE_ON_PLATFORM_CONTAINER })
    }
    const name = podNameOf(spec.attemptId)
    yield* pods.proxy.register({
      attemptId: spec.attemptId,
      secret: Redacted.make(proxySecretOf(pods.settings, spec.attemptId)),
      tier: spec.egressTier,
      grants: spec.grants
    })
    pods.attempts.set(name, spec.attemptId)
    const podIP = yield* startPod(pods, spec, name)
    return yield* connectRuntime(pods, spec, name, podIP)
  },
  (effect, pods, spec) =>
    // A pod that did not come up is removed, so the retried step starts a fresh one instead of
    // finding the broken one again; an interrupted acquire leaves it for the retry to adopt.
    effect.pipe(
      Effect.tapError(() =>
        spec.agent === "AGENT_ONE"
          ? Effect.void
          : Effect.ignore(deleteQuietly(pods.kube, podNameOf(spec.attemptId), spec.attemptId)).pipe(
              Effect.andThen(pods.proxy.unregister(spec.attemptId)),
              Effect.andThen(Effect.sync(() => pods.attempts.delete(podNameOf(spec.attemptId))))
            )
      )
    )
)

const release = Effect.fn("PlatformContainer.release")(function* (
  pods: Pods,
  sandbox: Pick<Sandbox, "id" | "provider">
) {
  const known = pods.attempts.get(sandbox.id)
  // Cut the pod off the proxy first: a pod that outlives a failed delete reaches nothing.
  if (known !== undefined) yield* pods.proxy.unregister(known)
  const annotated = yield* deleteQuietly(pods.kube, sandbox.id, known)
  if (annotated !== undefined) yield* pods.proxy.unregister(annotated)
  pods.attempts.delete(sandbox.id)
})

export const layerPlatformContainer = (settings: PlatformContainerSettings) =>
  Layer.effect(
    SandboxProvider,
    Effect.gen(function* () {
      const runtimes = yield* RuntimeClient
      const proxy = yield* InjectionProxy
      // A deployment without usable API access is misconfigured: the layer dies instead of every acquire failing.
      const api = yield* Effect.sync(() => kubeConfigOf(settings.kubernetes).makeApiClient(CoreV1Api))
      const pods: Pods = {
        settings,
        kube: makeKube(settings, api),
        runtimes,
        proxy,
        proxyAddress: settings.proxyAddress ?? proxy.address,
        attempts: new Map<string, string>()
      }
      return SandboxProvider.of({
        name: "PLATFORM_CONTAINER",
        acquire: (spec) => acquire(pods, spec),
        release: (sandbox) => release(pods, sandbox)
      })
    })
  )

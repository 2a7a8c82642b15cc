/**
 * A local stand-in for the Kubernetes API server's core/v1 Pods and Secrets (test code only), in
 * the wire format the official client speaks, plain HTTP on 127.0.0.1:
 * - `POST|GET /api/v1/namespaces/{ns}/pods`, `GET|DELETE .../pods/{name}`, the same for
 *   `secrets` (`stringData` is folded into base64 `data` as the API server does), `GET
 *   .../configmaps/{name}`;
 * - errors as `Status` objects (`code`, `reason`, `message`): 401 without the bearer token, 403
 *   outside the namespaces the token may use, 404 NotFound, 409 AlreadyExists, 422 Invalid;
 * - creating a Pod "schedules" it: Pending, then the real runtime process (`packages/runtime/src/
 *   main.ts`) starts on a random loopback address 127.X.Y.Z, its pod IP, with the pod's env
 *   resolved (secretKeyRef from the fake's Secrets; paths under a ConfigMap mount point at a temp
 *   copy of it); Running with `podIP` and a ready container once its health answers; Failed (or
 *   Succeeded) with the container's exit when the process ends. A missing Secret or ConfigMap
 *   leaves the pod Pending with the reason the kubelet would give.
 * Deletion is immediate (no grace period): the process is stopped before the answer. Every request
 * and every created object is recorded for assertions.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const mainScript = fileURLToPath(new URL("../../runtime/src/main.ts", import.meta.url))

/** A Kubernetes object as JSON: what the fake stores and answers. */
export type KubeObject = {
  readonly apiVersion?: string
  readonly kind?: string
  metadata: {
    name: string
    namespace: string
    uid?: string
    resourceVersion?: string
    creationTimestamp?: string
    deletionTimestamp?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
  }
  spec?: PodSpec
  status?: Record<string, unknown>
  data?: Record<string, string>
  stringData?: Record<string, string>
  type?: string
}

interface EnvVar {
  readonly name: string
  readonly value?: string
  readonly valueFrom?: {
    readonly secretKeyRef?: { readonly name: string; readonly key: string; readonly optional?: boolean }
    readonly configMapKeyRef?: { readonly name: string; readonly key: string; readonly optional?: boolean }
  }
}

interface PodSpec {
  readonly containers?: ReadonlyArray<{
    readonly name: string
    readonly image?: string
    readonly env?: ReadonlyArray<EnvVar>
    readonly ports?: ReadonlyArray<{ readonly containerPort: number }>
    readonly volumeMounts?: ReadonlyArray<{ readonly name: string; readonly mountPath: string }>
  }>
  readonly volumes?: ReadonlyArray<{
    readonly name: string
    readonly configMap?: { readonly name: string; readonly items?: ReadonlyArray<{ key: string; path: string }> }
    readonly secret?: { readonly secretName: string; readonly items?: ReadonlyArray<{ key: string; path: string }> }
  }>
}

export interface FakeKubernetesRequest {
  readonly method: string
  readonly path: string
  readonly authorization: string | undefined
  /** The answer's status; 0 while it is being answered. */
  readonly status: number
}

export interface FakeKubernetesOptions {
  /** The bearer token the fake accepts. */
  readonly token: string
  /** Namespaces the token may use; 403 Forbidden elsewhere. All when omitted. */
  readonly namespaces?: ReadonlyArray<string>
  readonly secrets?: ReadonlyArray<{
    readonly namespace: string
    readonly name: string
    readonly stringData: Record<string, string>
  }>
  readonly configMaps?: ReadonlyArray<{
    readonly namespace: string
    readonly name: string
    readonly data: Record<string, string>
  }>
  /** Env every started runtime gets besides the pod's (agent profiles; a data directory, else one per pod). */
  readonly runtimeEnv?: Record<string, string>
}

export interface FakePodRuntime {
  readonly namespace: string
  readonly pod: string
  readonly podIP: string
  readonly pid: number
  readonly env: Readonly<Record<string, string>>
  readonly output: () => string
}

export interface FakeKubernetesApi {
  /** `http://127.0.0.1:<port>`, the API server URL. */
  readonly url: string
  readonly requests: ReadonlyArray<FakeKubernetesRequest>
  /** Pods as they were created (the request body), in order. */
  readonly createdPods: ReadonlyArray<KubeObject>
  /** Secrets as they were created (the request body, `stringData` included), in order. */
  readonly createdSecrets: ReadonlyArray<KubeObject>
  readonly pod: (namespace: string, name: string) => KubeObject | undefined
  readonly secret: (namespace: string, name: string) => KubeObject | undefined
  /** Every runtime process started for a pod, stopped ones included. */
  readonly runtimes: ReadonlyArray<FakePodRuntime>
  /** The next request answers this Status instead (429, 500, 422, ...). */
  readonly failNext: (failure: { readonly code: number; readonly reason: string; readonly message: string }) => void
  readonly close: () => Promise<void>
}

const statusBody = (code: number, reason: string, message: string, details?: Record<string, string>) => ({
  kind: "Status",
  apiVersion: "v1",
  metadata: {},
  status: code < 400 ? "Success" : "Failure",
  message,
  reason,
  ...(details === undefined ? {} : { details }),
  code
})

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let body = ""
    req.on("data", (chunk: Buffer) => (body += chunk.toString()))
    req.on("end", () => resolve(body))
    req.on("error", reject)
  })

/** A loopback address nobody else uses: 127.X.Y.Z, never 127.0.0.1. */
const loopbackAddress = (taken: ReadonlySet<string>): string => {
  for (;;) {
    const [x = 0, y = 0, z = 0] = randomBytes(3)
    const address = `127.${x}.${y}.${1 + (z % 254)}`
    if (address !== "127.0.0.1" && !taken.has(address)) return address
  }
}

const VERBS: Record<string, { readonly item: string; readonly collection: string }> = {
  GET: { item: "get", collection: "list" },
  POST: { item: "create", collection: "create" },
  DELETE: { item: "delete", collection: "deletecollection" }
}

interface Scheduled {
  child?: ChildProcess
  exited?: Promise<void>
  stopping: boolean
  readonly dir: string
}

export const startFakeKubernetesApi = async (options: FakeKubernetesOptions): Promise<FakeKubernetesApi> => {
  const requests: Array<FakeKubernetesRequest> = []
  const createdPods: Array<KubeObject> = []
  const createdSecrets: Array<KubeObject> = []
  const runtimes: Array<FakePodRuntime> = []
  const failures: Array<{ code: number; reason: string; message: string }> = []
  const store = { pods: new Map<string, KubeObject>(), secrets: new Map<string, KubeObject>() }
  const configMaps = new Map<string, Record<string, string>>()
  const scheduled = new Map<string, Scheduled>()
  const key = (namespace: string, name: string) => `${namespace}/${name}`
  let version = 1
  const stamp = (object: KubeObject) => {
    object.metadata.resourceVersion = String(++version)
    return object
  }

  for (const secret of options.secrets ?? []) {
    store.secrets.set(key(secret.namespace, secret.name), {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: secret.name, namespace: secret.namespace, uid: randomUUID(), resourceVersion: "1" },
      type: "Opaque",
      data: Object.fromEntries(
        Object.entries(secret.stringData).map(([k, v]) => [k, Buffer.from(v).toString("base64")])
      )
    })
  }
  for (const configMap of options.configMaps ?? []) {
    configMaps.set(key(configMap.namespace, configMap.name), { ...configMap.data })
  }

  const secretValue = (namespace: string, name: string, field: string) => {
    const secret = store.secrets.get(key(namespace, name))
    if (secret === undefined) return { error: `secret "${name}" not found` }
    const encoded = secret.data?.[field]
    if (encoded === undefined) return { error: `couldn't find key ${field} in Secret ${namespace}/${name}` }
    return { value: Buffer.from(encoded, "base64").toString("utf8") }
  }

  const setStatus = (pod: KubeObject, status: Record<string, unknown>) => {
    pod.status = status
    stamp(pod)
  }

  const waiting = (pod: KubeObject, reason: string, message: string) =>
    setStatus(pod, {
      phase: "Pending",
      conditions: [{ type: "PodScheduled", status: "True" }],
      containerStatuses: (pod.spec?.containers ?? []).map((container) => ({
        name: container.name,
        image: container.image ?? "",
        imageID: "",
        ready: false,
        started: false,
        restartCount: 0,
        state: { waiting: { reason, message } }
      }))
    })

  /** What a kubelet would do: mount, resolve env, start the container, probe it. */
  const schedule = async (pod: KubeObject) => {
    const namespace = pod.metadata.namespace
    const container = pod.spec?.containers?.[0]
    const entry: Scheduled = {
      stopping: false,
      dir: fs.mkdtempSync(path.join(os.tmpdir(), "bosun-fake-pod-"))
    }
    // A pod's filesystem is traversable; and a runtime started as root (these tests, not a real
    // pod: uid 1000) runs its agents as users of their own, who must pass through to their workspaces.
    fs.chmodSync(entry.dir, 0o711)
    scheduled.set(key(namespace, pod.metadata.name), entry)
    if (container === undefined) return waiting(pod, "CreateContainerConfigError", "the pod has no container")

    const mounts: Array<{ readonly mountPath: string; readonly dir: string }> = []
    for (const mount of container.volumeMounts ?? []) {
      const volume = pod.spec?.volumes?.find((v) => v.name === mount.name)
      const dir = path.join(entry.dir, `volume-${mounts.length}`)
      fs.mkdirSync(dir, { recursive: true })
      let files: Record<string, string> | undefined
      let items: ReadonlyArray<{ key: string; path: string }> | undefined
      if (volume?.configMap !== undefined) {
        files = configMaps.get(key(namespace, volume.configMap.name))
        items = volume.configMap.items
        if (files === undefined) {
          return waiting(
            pod,
            "ContainerCreating",
            `MountVolume.SetUp failed for volume "${mount.name}" : configmap "${volume.configMap.name}" not found`
          )
        }
      } else if (volume?.secret !== undefined) {
        const secret = store.secrets.get(key(namespace, volume.secret.secretName))
        if (secret === undefined) {
          return waiting(
            pod,
            "ContainerCreating",
            `MountVolume.SetUp failed for volume "${mount.name}" : secret "${volume.secret.secretName}" not found`
          )
        }
        files = Object.fromEntries(
          Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")])
        )
        items = volume.secret.items
      }
      for (const item of items ?? Object.keys(files ?? {}).map((k) => ({ key: k, path: k }))) {
        const content = files?.[item.key]
        if (content === undefined) continue
        fs.mkdirSync(path.dirname(path.join(dir, item.path)), { recursive: true })
        fs.writeFileSync(path.join(dir, item.path), content)
      }
      mounts.push({ mountPath: mount.mountPath.replace(/\/+$/, ""), dir })
    }
    const local = (value: string) => {
      const mount = mounts.find((m) => value === m.mountPath || value.startsWith(`${m.mountPath}/`))
      return mount === undefined ? value : `${mount.dir}${value.slice(mount.mountPath.length)}`
    }

    const env: Record<string, string> = {}
    for (const variable of container.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef
      const mapRef = variable.valueFrom?.configMapKeyRef
      if (ref !== undefined) {
        const resolved = secretValue(namespace, ref.name, ref.key)
        if (resolved.value !== undefined) env[variable.name] = resolved.value
        else if (ref.optional !== true) return waiting(pod, "CreateContainerConfigError", resolved.error)
      } else if (mapRef !== undefined) {
        const value = configMaps.get(key(namespace, mapRef.name))?.[mapRef.key]
        if (value !== undefined) env[variable.name] = value
        else if (mapRef.optional !== true)
          return waiting(pod, "CreateContainerConfigError", `configmap "${mapRef.name}" not found`)
      } else {
        env[variable.name] = local(variable.value ?? "")
      }
    }

    const taken = new Set(runtimes.map((runtime) => runtime.podIP))
    const podIP = loopbackAddress(taken)
    const port = Number(env.BOSUN_RUNTIME_PORT ?? container.ports?.[0]?.containerPort ?? 8787)
    const inherited: Record<string, string> = {}
    for (const [name, value] of Object.entries(process.env)) {
      if (!name.startsWith("BOSUN_") && value !== undefined) inherited[name] = value
    }
    // Each pod has a filesystem of its own (a data directory the test may override); in a pod,
    // 0.0.0.0 is the pod's own address, so here the process binds its pod IP instead.
    const childEnv = {
      ...inherited,
      BOSUN_RUNTIME_DATA_DIR: path.join(entry.dir, "data"),
      ...env,
      ...options.runtimeEnv,
      BOSUN_RUNTIME_HOST: podIP
    }
    if (entry.stopping) return
    const child = spawn(process.execPath, [mainScript], { env: childEnv, stdio: ["ignore", "pipe", "pipe"] })
    entry.child = child
    let output = ""
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()))
    const startedAt = new Date().toISOString()
    runtimes.push({
      namespace,
      pod: pod.metadata.name,
      podIP,
      pid: child.pid ?? -1,
      env: childEnv,
      output: () => output
    })
    const containerStatus = (state: Record<string, unknown>, ready: boolean) => ({
      name: container.name,
      image: container.image ?? "",
      imageID: container.image ?? "",
      containerID: `fake://${child.pid ?? 0}`,
      ready,
      started: true,
      restartCount: 0,
      state
    })
    setStatus(pod, {
      phase: "Pending",
      hostIP: "127.0.0.1",
      startTime: startedAt,
      conditions: [{ type: "PodScheduled", status: "True" }],
      containerStatuses: [containerStatus({ waiting: { reason: "ContainerCreating" } }, false)]
    })
    entry.exited = new Promise<void>((resolve) =>
      child.once("exit", (code, signal) => {
        if (!entry.stopping) {
          const exitCode = code ?? 128
          setStatus(pod, {
            ...pod.status,
            phase: exitCode === 0 ? "Succeeded" : "Failed",
            conditions: [
              { type: "PodScheduled", status: "True" },
              { type: "Ready", status: "False", reason: "PodCompleted" }
            ],
            containerStatuses: [
              containerStatus(
                {
                  terminated: {
                    exitCode,
                    ...(signal === null ? {} : { signal: 15 }),
                    reason: exitCode === 0 ? "Completed" : "Error",
                    // terminationMessagePolicy FallbackToLogsOnError: the log's tail.
                    message: output.trim().split("\n").slice(-5).join("\n"),
                    startedAt,
                    finishedAt: new Date().toISOString()
                  }
                },
                false
              )
            ]
          })
        }
        resolve()
      })
    )

    const until = Date.now() + 30_000
    while (child.exitCode === null && child.signalCode === null && !entry.stopping && Date.now() < until) {
      const ok = await fetch(`http://${podIP}:${port}/healthz`).then(
        (response) => response.ok,
        () => false
      )
      if (ok) {
        if (child.exitCode !== null || entry.stopping) return
        return setStatus(pod, {
          phase: "Running",
          hostIP: "127.0.0.1",
          podIP,
          podIPs: [{ ip: podIP }],
          startTime: startedAt,
          conditions: [
            { type: "PodScheduled", status: "True" },
            { type: "Initialized", status: "True" },
            { type: "ContainersReady", status: "True" },
            { type: "Ready", status: "True" }
          ],
          containerStatuses: [containerStatus({ running: { startedAt } }, true)]
        })
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  const stop = async (namespace: string, name: string) => {
    const entry = scheduled.get(key(namespace, name))
    if (entry === undefined) return
    scheduled.delete(key(namespace, name))
    entry.stopping = true
    const child = entry.child
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM")
      const killer = setTimeout(() => child.kill("SIGKILL"), 5_000)
      await entry.exited
      clearTimeout(killer)
    }
    fs.rmSync(entry.dir, { recursive: true, force: true })
  }

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" })
    res.end(JSON.stringify(body))
  }

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<number> => {
    const fail = (code: number, reason: string, message: string, details?: Record<string, string>) => {
      send(res, code, statusBody(code, reason, message, details))
      return code
    }
    if (req.headers.authorization !== `Bearer ${options.token}`) return fail(401, "Unauthorized", "Unauthorized")
    const url = new URL(req.url ?? "/", "http://fake")
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/(pods|secrets|configmaps)(?:\/([^/]+))?$/.exec(url.pathname)
    const method = req.method ?? "GET"
    if (match === null) return fail(404, "NotFound", "the server could not find the requested resource")
    const [, namespace = "", resource = "", name] = match
    const verb = VERBS[method]
    if (verb === undefined) return fail(405, "MethodNotAllowed", `the server does not allow this method on ${resource}`)
    if (options.namespaces !== undefined && !options.namespaces.includes(namespace)) {
      return fail(
        403,
        "Forbidden",
        `${resource} is forbidden: User "system:serviceaccount:bosun:bosun-control-plane" cannot ${name === undefined ? verb.collection : verb.item} resource "${resource}" in API group "" in the namespace "${namespace}"`,
        { kind: resource }
      )
    }
    const failure = failures.shift()
    if (failure !== undefined) return fail(failure.code, failure.reason, failure.message)

    if (resource === "configmaps") {
      const data = name === undefined || method !== "GET" ? undefined : configMaps.get(key(namespace, name))
      if (data === undefined) return fail(404, "NotFound", `configmaps "${name ?? ""}" not found`)
      send(res, 200, { apiVersion: "v1", kind: "ConfigMap", metadata: { name, namespace }, data })
      return 200
    }
    const objects = resource === "pods" ? store.pods : store.secrets
    const kind = resource === "pods" ? "Pod" : "Secret"

    if (name === undefined && method === "GET") {
      const items = [...objects.values()].filter((object) => object.metadata.namespace === namespace)
      send(res, 200, { apiVersion: "v1", kind: `${kind}List`, metadata: { resourceVersion: String(version) }, items })
      return 200
    }
    if (name === undefined && method === "POST") {
      const text = await readBody(req)
      const body = ((): KubeObject | undefined => {
        try {
          return JSON.parse(text) as KubeObject
        } catch {
          return undefined
        }
      })()
      const objectName = body?.metadata?.name
      if (
        body === undefined ||
        typeof objectName !== "string" ||
        !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(objectName)
      ) {
        return fail(422, "Invalid", `${kind} "${objectName ?? ""}" is invalid: metadata.name: Required value`)
      }
      if (objects.has(key(namespace, objectName))) {
        return fail(409, "AlreadyExists", `${resource} "${objectName}" already exists`, {
          name: objectName,
          kind: resource
        })
      }
      const received = JSON.parse(text) as KubeObject
      const stored: KubeObject = {
        ...body,
        apiVersion: "v1",
        kind,
        metadata: { ...body.metadata, namespace, uid: randomUUID(), creationTimestamp: new Date().toISOString() }
      }
      if (kind === "Secret") {
        const { stringData, ...rest } = stored
        const data = { ...rest.data }
        for (const [k, v] of Object.entries(stringData ?? {})) data[k] = Buffer.from(v).toString("base64")
        const secret: KubeObject = { ...rest, type: rest.type ?? "Opaque", data }
        objects.set(key(namespace, objectName), stamp(secret))
        createdSecrets.push(received)
        send(res, 201, secret)
        return 201
      }
      stored.status = { phase: "Pending", conditions: [{ type: "PodScheduled", status: "False" }] }
      objects.set(key(namespace, objectName), stamp(stored))
      createdPods.push(received)
      send(res, 201, stored)
      void schedule(stored)
      return 201
    }
    if (name === undefined) return fail(405, "MethodNotAllowed", `the server does not allow this method on ${resource}`)
    const existing = objects.get(key(namespace, name))
    if (existing === undefined)
      return fail(404, "NotFound", `${resource} "${name}" not found`, { name, kind: resource })
    if (method === "GET") {
      send(res, 200, existing)
      return 200
    }
    if (method === "DELETE") {
      objects.delete(key(namespace, name))
      if (kind === "Pod") {
        existing.metadata.deletionTimestamp = new Date().toISOString()
        await stop(namespace, name)
        send(res, 200, existing)
        return 200
      }
      send(res, 200, statusBody(200, "", "", { name, kind: resource, uid: existing.metadata.uid ?? "" }))
      return 200
    }
    return fail(405, "MethodNotAllowed", `the server does not allow this method on ${resource}`)
  }

  const server = createServer((req, res) => {
    const recorded = {
      method: req.method ?? "",
      path: req.url ?? "",
      authorization: req.headers.authorization,
      status: 0
    }
    requests.push(recorded)
    handle(req, res).then(
      (status) => {
        recorded.status = status
      },
      (error: unknown) => {
        recorded.status = 500
        if (!res.headersSent) send(res, 500, statusBody(500, "InternalError", String(error)))
      }
    )
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    createdPods,
    createdSecrets,
    pod: (namespace, name) => store.pods.get(key(namespace, name)),
    secret: (namespace, name) => store.secrets.get(key(namespace, name)),
    runtimes,
    failNext: (failure) => void failures.push({ ...failure }),
    close: async () => {
      await Promise.all([...scheduled.keys()].map((entry) => stop(...(entry.split("/") as [string, string]))))
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    }
  }
}

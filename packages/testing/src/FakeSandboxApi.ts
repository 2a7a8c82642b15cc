/**
 * A local stand-in for a Daytona-compatible hosted-sandbox API (HOSTED_SANDBOX; test code only),
 * speaking the wire format the official `@daytona/api-client` sends and expects, under `/api`, with
 * the API key as bearer token (401 otherwise):
 * - `POST /sandbox` records the request and "runs the image": a known snapshot, or a `FROM <image>`
 *   build of a known image, starts the real runtime process (`startRuntime`) with the request's env
 *   plus the fake's own (the runtime listens on a free loopback port standing for the sandbox's
 *   `BOSUN_RUNTIME_PORT`); `creating` → `started`. An unknown snapshot is 400, an unknown image ends
 *   in `build_failed`, a malformed `networkAllowList` is 400.
 * - `GET /sandbox?labels=<json>`, `GET /sandbox/:id`, `POST /sandbox/:id/start|stop`,
 *   `GET /sandbox/:id/ports/:port/preview-url`, `DELETE /sandbox/:id` (stops the runtime; 404 for
 *   an unknown id).
 * - A preview gateway on a port of its own, `/<port>-<id>/...`, that requires the sandbox's
 *   `x-daytona-preview-token` (401 without or wrong) and forwards to the runtime, streaming bodies.
 * It does not enforce the allow list (no network isolation on loopback): tests assert what was asked.
 */
import { randomBytes, randomUUID } from "node:crypto"
import * as fs from "node:fs"
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { freePort, type RuntimeProcess, startRuntime } from "./RuntimeProcess.ts"

export interface FakeSandboxApiOptions {
  /** The only API key it accepts. */
  readonly apiKey: string
  /** Snapshot names it has. */
  readonly snapshots?: ReadonlyArray<string>
  /** Images a `FROM <image>` build succeeds for. */
  readonly images?: ReadonlyArray<string>
  /**
   * Env added to every sandbox's runtime (custom agent profiles, ...). `BOSUN_RUNTIME_DATA_DIR`
   * is a root: each sandbox gets a directory of its own under it.
   */
  readonly env?: Readonly<Record<string, string>>
}

/** What a `POST /sandbox` asked for, as sent. */
export interface FakeSandboxCreate {
  /** The snapshot name, or the image of a `FROM <image>` build. */
  readonly image: string | undefined
  readonly snapshot: string | undefined
  readonly dockerfile: string | undefined
  readonly cpu: number | undefined
  readonly memory: number | undefined
  readonly disk: number | undefined
  readonly env: Readonly<Record<string, string>>
  readonly labels: Readonly<Record<string, string>>
  readonly networkAllowList: string | undefined
  readonly networkBlockAll: boolean | undefined
  readonly public: boolean | undefined
  readonly autoStopInterval: number | undefined
  readonly autoDeleteInterval: number | undefined
  readonly ttlMinutes: number | undefined
  readonly target: string | undefined
  readonly body: Readonly<Record<string, unknown>>
}

export interface FakeSandboxView {
  readonly id: string
  readonly state: string
  readonly labels: Readonly<Record<string, string>>
  /** The runtime process's pid while it runs. */
  readonly pid: number | undefined
}

export interface FakeSandboxApi {
  /** The API root to configure as `apiUrl`: `http://127.0.0.1:<port>/api`. */
  readonly url: string
  /** The preview gateway's origin. */
  readonly gatewayUrl: string
  readonly creates: ReadonlyArray<FakeSandboxCreate>
  /** Every API request (method, path with query), in order. */
  readonly requests: ReadonlyArray<{ readonly method: string; readonly path: string }>
  /** The sandboxes not deleted. */
  readonly sandboxes: () => ReadonlyArray<FakeSandboxView>
  /** Stops a sandbox as the provider's auto-stop would. */
  readonly stop: (id: string) => Promise<void>
  /** Answer every API call with this status and message (an outage, a quota); undefined to stop. */
  readonly failWith: (failure: { readonly status: number; readonly message: string } | undefined) => void
  /** Stops every runtime, closes both servers, removes the data it made. */
  readonly close: () => Promise<void>
}

interface FakeSandboxRecord {
  readonly id: string
  readonly create: FakeSandboxCreate
  readonly previewToken: string
  readonly createdAt: string
  state: string
  errorReason: string | undefined
  runtime: RuntimeProcess | undefined
  /** The start in progress, awaited by stop and delete. */
  starting: Promise<void> | undefined
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    req.on("data", (chunk: Buffer) => (body += chunk.toString()))
    req.on("end", () => resolve(body))
  })

const stringRecord = (value: unknown): Record<string, string> =>
  typeof value === "object" && value !== null
    ? Object.fromEntries(
        Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === "string")
      )
    : {}

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const numberOr = (value: unknown) => (typeof value === "number" ? value : undefined)
const stringOr = (value: unknown) => (typeof value === "string" ? value : undefined)
const booleanOr = (value: unknown) => (typeof value === "boolean" ? value : undefined)

const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/
const isCidr = (entry: string) => {
  const match = CIDR.exec(entry)
  return (match?.slice(1, 5).every((octet) => Number(octet) <= 255) ?? false) && Number(match?.[5]) <= 32
}

const statusText: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable"
}

export const startFakeSandboxApi = async (options: FakeSandboxApiOptions): Promise<FakeSandboxApi> => {
  const snapshots = new Set(options.snapshots ?? [])
  const images = new Set(options.images ?? [])
  const ownData = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-fake-sandbox-"))
  // As root a sandbox's runtime runs its agents as users of their own, who pass through here.
  fs.chmodSync(ownData, 0o711)
  const dataRoot = options.env?.BOSUN_RUNTIME_DATA_DIR ?? ownData
  const records = new Map<string, FakeSandboxRecord>()
  const creates: Array<FakeSandboxCreate> = []
  const requests: Array<{ method: string; path: string }> = []
  let failure: { readonly status: number; readonly message: string } | undefined
  const gatewayPort = await freePort()
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`

  /** The port the sandbox's runtime says it listens on, inside "the sandbox". */
  const declaredPort = (record: FakeSandboxRecord) => Number(record.create.env.BOSUN_RUNTIME_PORT ?? 8787)

  const run = (record: FakeSandboxRecord) => {
    record.state = "starting"
    const starting = (async () => {
      const runtime = await startRuntime({
        ...record.create.env,
        ...options.env,
        BOSUN_RUNTIME_HOST: "127.0.0.1",
        BOSUN_RUNTIME_PORT: String(await freePort()),
        BOSUN_RUNTIME_DATA_DIR: path.join(dataRoot, record.id)
      })
      // Deleted or stopped while it came up: it does not stay.
      if (record.state !== "starting") return runtime.stop()
      record.runtime = runtime
      record.state = "started"
    })().catch((error: unknown) => {
      if (record.state !== "starting") return
      record.state = "error"
      record.errorReason = error instanceof Error ? error.message.slice(0, 500) : "the runtime did not start"
    })
    record.starting = starting.finally(() => {
      record.starting = undefined
    })
  }

  const halt = async (record: FakeSandboxRecord, state: string) => {
    record.state = state
    await record.starting
    const runtime = record.runtime
    record.runtime = undefined
    await runtime?.stop()
  }

  const view = (record: FakeSandboxRecord) => ({
    id: record.id,
    organizationId: "fake-organization",
    name: record.id,
    user: "daytona",
    snapshot: record.create.snapshot,
    env: record.create.env,
    labels: record.create.labels,
    public: record.create.public ?? false,
    networkBlockAll: record.create.networkBlockAll ?? false,
    networkAllowList: record.create.networkAllowList,
    target: record.create.target ?? "us",
    cpu: record.create.cpu ?? 1,
    gpu: 0,
    memory: record.create.memory ?? 1,
    disk: record.create.disk ?? 3,
    state: record.state,
    desiredState: record.state === "stopped" ? "stopped" : record.state === "destroyed" ? "destroyed" : "started",
    errorReason: record.errorReason,
    autoStopInterval: record.create.autoStopInterval ?? 15,
    autoArchiveInterval: 10080,
    autoDeleteInterval: record.create.autoDeleteInterval ?? -1,
    createdAt: record.createdAt,
    updatedAt: new Date().toISOString(),
    toolboxProxyUrl: `${gatewayUrl}/toolbox`
  })

  const json = (res: ServerResponse, status: number, value: unknown) => {
    res.writeHead(status, { "content-type": "application/json; charset=utf-8" })
    res.end(JSON.stringify(value))
  }
  /** Daytona's error envelope. */
  const error = (res: ServerResponse, status: number, message: string) =>
    json(res, status, { statusCode: status, message, error: statusText[status] ?? "Error" })

  const createSandbox = (res: ServerResponse, body: Record<string, unknown>) => {
    const buildInfo = typeof body.buildInfo === "object" && body.buildInfo !== null ? body.buildInfo : undefined
    const dockerfile =
      buildInfo !== undefined && "dockerfileContent" in buildInfo ? stringOr(buildInfo.dockerfileContent) : undefined
    const snapshot = stringOr(body.snapshot)
    const fromImage = dockerfile === undefined ? undefined : /^FROM\s+(\S+)/m.exec(dockerfile)?.[1]
    const create: FakeSandboxCreate = {
      image: snapshot ?? fromImage,
      snapshot,
      dockerfile,
      cpu: numberOr(body.cpu),
      memory: numberOr(body.memory),
      disk: numberOr(body.disk),
      env: stringRecord(body.env),
      labels: stringRecord(body.labels),
      networkAllowList: stringOr(body.networkAllowList),
      networkBlockAll: booleanOr(body.networkBlockAll),
      public: booleanOr(body.public),
      autoStopInterval: numberOr(body.autoStopInterval),
      autoDeleteInterval: numberOr(body.autoDeleteInterval),
      ttlMinutes: numberOr(body.ttlMinutes),
      target: stringOr(body.target),
      body
    }
    creates.push(create)
    if (snapshot !== undefined && !snapshots.has(snapshot)) {
      return error(res, 400, `Snapshot ${snapshot} not found. Did you add it through the Daytona Dashboard?`)
    }
    if (snapshot === undefined && fromImage === undefined) {
      return error(res, 400, "Either snapshot or buildInfo must be provided")
    }
    const bad = (create.networkAllowList ?? "").split(",").filter((entry) => entry !== "" && !isCidr(entry))
    if (bad.length > 0) return error(res, 400, `Invalid networkAllowList: ${bad.join(", ")} is not a CIDR`)
    const record: FakeSandboxRecord = {
      id: randomUUID(),
      create,
      previewToken: randomBytes(16).toString("hex"),
      createdAt: new Date().toISOString(),
      state: "creating",
      errorReason: undefined,
      runtime: undefined,
      starting: undefined
    }
    records.set(record.id, record)
    if (fromImage !== undefined && !images.has(fromImage)) {
      record.state = "build_failed"
      record.errorReason = `Failed to build snapshot: pull access denied for ${fromImage}`
    } else {
      run(record)
      // The answer says what Daytona's does: not started yet.
      return json(res, 200, { ...view(record), state: "creating" })
    }
    return json(res, 200, view(record))
  }

  const api = createServer(async (req, res) => {
    const body = await readBody(req)
    const url = new URL(req.url ?? "/", "http://fake")
    requests.push({ method: req.method ?? "", path: `${url.pathname}${url.search}` })
    if (req.headers.authorization !== `Bearer ${options.apiKey}`) return error(res, 401, "Unauthorized")
    if (failure !== undefined) return error(res, failure.status, failure.message)
    const parts = url.pathname.split("/").filter((part) => part !== "")
    if (parts[0] !== "api" || parts[1] !== "sandbox") return error(res, 404, `Cannot ${req.method} ${url.pathname}`)
    const [, , id, action, port, leaf] = parts
    if (id === undefined) {
      if (req.method === "POST") {
        const parsed = parseJson(body)
        if (typeof parsed !== "object" || parsed === null) return error(res, 400, "A sandbox is required")
        return createSandbox(res, parsed as Record<string, unknown>)
      }
      if (req.method === "GET") {
        const wanted = stringRecord(parseJson(url.searchParams.get("labels") ?? "{}"))
        const items = [...records.values()]
          .filter((record) => Object.entries(wanted).every(([key, value]) => record.create.labels[key] === value))
          .map(view)
        return json(res, 200, { items, nextCursor: null })
      }
      return error(res, 404, `Cannot ${req.method} ${url.pathname}`)
    }
    const record = records.get(id)
    if (record === undefined) return error(res, 404, `Sandbox with ID or name ${id} not found`)
    if (action === undefined && req.method === "GET") return json(res, 200, view(record))
    if (action === undefined && req.method === "DELETE") {
      records.delete(id)
      await halt(record, "destroyed")
      return json(res, 200, view(record))
    }
    if (action === "start" && req.method === "POST") {
      if (record.state === "stopped") run(record)
      return json(res, 200, view(record))
    }
    if (action === "stop" && req.method === "POST") {
      await halt(record, "stopped")
      return json(res, 200, view(record))
    }
    if (action === "ports" && leaf === "preview-url" && req.method === "GET") {
      return json(res, 200, { sandboxId: id, url: `${gatewayUrl}/${port}-${id}`, token: record.previewToken })
    }
    return error(res, 404, `Cannot ${req.method} ${url.pathname}`)
  })

  /** `/<port>-<sandbox id>/<path>` → the sandbox's runtime, bodies streamed both ways. */
  const gateway = createServer((req, res) => {
    const match = /^\/(\d+)-([^/?]+)(\/[^?]*)?(\?.*)?$/.exec(req.url ?? "/")
    const record = match === null ? undefined : records.get(match[2] ?? "")
    if (match === null || record === undefined) return error(res, 404, "Sandbox not found")
    if (req.headers["x-daytona-preview-token"] !== record.previewToken) return error(res, 401, "Unauthorized")
    const runtime = record.runtime
    if (runtime === undefined || record.state !== "started" || Number(match[1]) !== declaredPort(record)) {
      return error(res, 502, `Nothing is listening on port ${match[1]} of sandbox ${record.id}`)
    }
    // Like Daytona's proxy, the preview token stops at the gateway.
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name]) => name !== "x-daytona-preview-token" && name !== "host")
    )
    const upstream = httpRequest(
      {
        host: "127.0.0.1",
        port: new URL(runtime.base).port,
        method: req.method,
        path: `${match[3] ?? "/"}${match[4] ?? ""}`,
        headers
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      }
    )
    upstream.on("error", () => {
      if (!res.headersSent) error(res, 502, `Sandbox ${record.id} did not answer`)
      else res.destroy()
    })
    // A client that goes away (a tail it stops reading) closes the upstream too.
    res.on("close", () => upstream.destroy())
    req.pipe(upstream)
  })

  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve))
  await new Promise<void>((resolve) => gateway.listen(gatewayPort, "127.0.0.1", resolve))
  const apiPort = (api.address() as AddressInfo).port

  return {
    url: `http://127.0.0.1:${apiPort}/api`,
    gatewayUrl,
    creates,
    requests,
    sandboxes: () =>
      [...records.values()].map((record) => ({
        id: record.id,
        state: record.state,
        labels: record.create.labels,
        pid: record.runtime?.child.pid
      })),
    stop: async (id) => {
      const record = records.get(id)
      if (record !== undefined) await halt(record, "stopped")
    },
    failWith: (next) => {
      failure = next
    },
    close: async () => {
      const all = [...records.values()]
      records.clear()
      await Promise.all(all.map((record) => halt(record, "destroyed")))
      api.closeAllConnections()
      gateway.closeAllConnections()
      await Promise.all([
        new Promise((resolve) => api.close(resolve)),
        new Promise((resolve) => gateway.close(resolve))
      ])
      fs.rmSync(ownData, { recursive: true, force: true })
    }
  }
}

/**
 * A local OAuth 2.0 device authorization server for tests (test code only), on 127.0.0.1, speaking
 * the public wire format — form-encoded requests, JSON answers:
 * - `POST /oauth/device/code` (RFC 8628 §3.1–3.2): `client_id`, `scope` → `device_code`,
 *   `user_code`, `verification_uri`, `verification_uri_complete`, `expires_in`, `interval`;
 * - `POST /oauth/token` with `grant_type=urn:ietf:params:oauth:grant-type:device_code`
 *   (RFC 8628 §3.4–3.5): `authorization_pending` until the user code is approved, `slow_down` (and
 *   5 s more interval) when polled faster than the interval or when a test asks, `access_denied`,
 *   `expired_token` past `expires_in` or when a test expires the code; once approved, tokens, once
 *   (the code is then spent: `invalid_grant`);
 * - `POST /oauth/token` with `grant_type=refresh_token` (RFC 6749 §6): refresh tokens rotate — each
 *   answer carries a new one and the used one is `invalid_grant` from then on.
 * An unknown `client_id` is `invalid_client` (401). Tests approve, deny or expire a user code,
 * revoke refresh tokens, make the next calls of a kind fail (5xx or a dropped connection), change
 * lifetimes, and read the request log (arrival times included) and every secret handed out.
 */
import { randomBytes } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer } from "effect"

export const DEVICE_CODE_GRANT_TYPE = "urn:ietf:params:oauth:grant-type:device_code"

/** The kinds of call a test can count or make fail. */
export type FakeDeviceAuthCall = "device_authorization" | "device_code" | "refresh_token"

export interface FakeDeviceAuthOptions {
  /** The only client id accepted (default `bosun-test-client`). */
  readonly clientId?: string
  /** Polling interval handed out, in seconds (default 1; RFC 8628's own default is 5). */
  readonly interval?: number
  /** Device code lifetime in seconds (default 600). */
  readonly expiresIn?: number
  /** Access token lifetime in seconds (default 3600). */
  readonly accessTokenTtl?: number
  /** Whether token answers carry a refresh token (default true). */
  readonly issueRefreshTokens?: boolean
}

export interface FakeDeviceAuthRequest {
  /** Arrival, `Date.now()`. */
  readonly at: number
  readonly call: FakeDeviceAuthCall | "other"
  readonly clientId: string | null
  /** For device_code polls: the user code of the polled device code. */
  readonly userCode: string | null
  readonly status: number
  /** The OAuth error answered, `tokens`, `device_code`, or `failure`/`hang-up` for a forced failure. */
  readonly answer: string
}

export interface FakeDeviceAuthServerHandle {
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string
  readonly deviceAuthorizationUrl: URL
  readonly tokenUrl: URL
  readonly clientId: string
  readonly requests: ReadonlyArray<FakeDeviceAuthRequest>
  /** How many calls of a kind arrived (forced failures included). */
  readonly count: (call: FakeDeviceAuthCall) => number
  /** The device_code polls of one user code, oldest first. */
  readonly polls: (userCode: string) => ReadonlyArray<FakeDeviceAuthRequest>
  /** Polls answered `slow_down` because they came sooner than the interval allowed. */
  readonly tooFastPolls: () => number
  readonly approve: (userCode: string) => void
  readonly deny: (userCode: string) => void
  /** The next poll (and every later one) answers `expired_token`. */
  readonly expire: (userCode: string) => void
  /** The next `times` polls answer `slow_down`, each adding 5 s to the code's interval. */
  readonly slowDown: (userCode: string, times?: number) => void
  /** Every refresh token issued so far becomes `invalid_grant`. */
  readonly revokeRefreshTokens: () => void
  /** The next `times` calls of a kind get this HTTP status (default 503) or a dropped connection. */
  readonly failNext: (call: FakeDeviceAuthCall, failure?: number | "hang-up", times?: number) => void
  /** Changes lifetimes and interval for what is handed out from now on. */
  readonly configure: (options: Omit<FakeDeviceAuthOptions, "clientId">) => void
  /** The interval the server holds for a user code now (raised by each `slow_down`). */
  readonly intervalOf: (userCode: string) => number | undefined
  /** Every device code, access token and refresh token handed out, in order. */
  readonly issued: () => {
    readonly deviceCodes: ReadonlyArray<string>
    readonly accessTokens: ReadonlyArray<string>
    readonly refreshTokens: ReadonlyArray<string>
  }
  /** The refresh tokens still accepted. */
  readonly validRefreshTokens: () => ReadonlyArray<string>
  readonly close: () => Promise<void>
}

interface DeviceGrant {
  readonly deviceCode: string
  readonly userCode: string
  readonly expiresAt: number
  interval: number
  state: "pending" | "approved" | "denied" | "spent"
  expired: boolean
  slowDowns: number
  lastPollAt: number | null
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    req.on("data", (chunk: Buffer) => (body += chunk.toString()))
    req.on("end", () => resolve(body))
  })

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, {
    "content-type": "application/json",
    "cache-control": "no-store",
    pragma: "no-cache",
    ...headers
  })
  res.end(JSON.stringify(body))
}

const secret = (prefix: string) => `${prefix}-${randomBytes(16).toString("hex")}`

/** RFC 8628 §6.1: a short code from an alphabet without vowels, easy to type. */
const userCode = () => {
  const alphabet = "BCDFGHJKLMNPQRSTVWXZ"
  const bytes = randomBytes(8)
  const chars = Array.from(bytes, (byte) => alphabet[byte % alphabet.length])
  return `${chars.slice(0, 4).join("")}-${chars.slice(4).join("")}`
}

/** Polls may arrive this much before the interval is over without counting as too fast (timer jitter). */
const POLL_TOLERANCE_MS = 20

export const startFakeDeviceAuthServer = async (options: FakeDeviceAuthOptions = {}) => {
  const clientId = options.clientId ?? "bosun-test-client"
  let settings = {
    interval: options.interval ?? 1,
    expiresIn: options.expiresIn ?? 600,
    accessTokenTtl: options.accessTokenTtl ?? 3600,
    issueRefreshTokens: options.issueRefreshTokens ?? true
  }
  const requests: Array<FakeDeviceAuthRequest> = []
  const grants = new Map<string, DeviceGrant>()
  const byUserCode = new Map<string, DeviceGrant>()
  const refreshTokens = new Map<string, boolean>()
  const issued = {
    deviceCodes: [] as Array<string>,
    accessTokens: [] as Array<string>,
    refreshTokens: [] as Array<string>
  }
  const failures = new Map<FakeDeviceAuthCall, { failure: number | "hang-up"; times: number }>()
  let tooFast = 0

  const grantOf = (code: string) => {
    const grant = byUserCode.get(code)
    if (grant === undefined) throw new Error(`the fake issued no user code ${code}`)
    return grant
  }

  const tokens = () => {
    const accessToken = secret("fake-at")
    issued.accessTokens.push(accessToken)
    const body: Record<string, unknown> = {
      access_token: accessToken,
      token_type: "Bearer",
      expires_in: settings.accessTokenTtl
    }
    if (settings.issueRefreshTokens) {
      const refreshToken = secret("fake-rt")
      issued.refreshTokens.push(refreshToken)
      refreshTokens.set(refreshToken, true)
      body.refresh_token = refreshToken
    }
    return body
  }

  const server = createServer(async (req, res) => {
    const at = Date.now()
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    const text = await readBody(req)
    const form = new URLSearchParams(text)
    const grantType = form.get("grant_type")
    const call: FakeDeviceAuthCall | "other" =
      url.pathname === "/oauth/device/code"
        ? "device_authorization"
        : url.pathname === "/oauth/token" && grantType === DEVICE_CODE_GRANT_TYPE
          ? "device_code"
          : url.pathname === "/oauth/token" && grantType === "refresh_token"
            ? "refresh_token"
            : "other"
    const polled = call === "device_code" ? grants.get(form.get("device_code") ?? "") : undefined
    const log = (status: number, answer: string) =>
      requests.push({ at, call, clientId: form.get("client_id"), userCode: polled?.userCode ?? null, status, answer })
    const refuse = (status: number, error: string) => {
      log(status, error)
      json(res, status, { error, error_description: `The fake says ${error}` })
    }

    if (call !== "other") {
      const forced = failures.get(call)
      if (forced !== undefined && forced.times > 0) {
        forced.times--
        if (forced.failure === "hang-up") {
          log(0, "hang-up")
          return req.socket.destroy()
        }
        log(forced.failure, "failure")
        return json(res, forced.failure, { error: "server_error" })
      }
    }
    if (req.method !== "POST") return refuse(405, "invalid_request")
    if (!(req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded")) {
      return refuse(400, "invalid_request")
    }
    if (url.pathname !== "/oauth/device/code" && url.pathname !== "/oauth/token") {
      log(404, "not_found")
      return json(res, 404, { error: "not_found" })
    }
    if (form.get("client_id") !== clientId) return refuse(401, "invalid_client")

    switch (call) {
      case "device_authorization": {
        const grant: DeviceGrant = {
          deviceCode: secret("fake-dc"),
          userCode: userCode(),
          expiresAt: at + settings.expiresIn * 1000,
          interval: settings.interval,
          state: "pending",
          expired: false,
          slowDowns: 0,
          lastPollAt: null
        }
        grants.set(grant.deviceCode, grant)
        byUserCode.set(grant.userCode, grant)
        issued.deviceCodes.push(grant.deviceCode)
        log(200, "device_code")
        return json(res, 200, {
          device_code: grant.deviceCode,
          user_code: grant.userCode,
          verification_uri: `${origin}/device`,
          verification_uri_complete: `${origin}/device?user_code=${grant.userCode}`,
          expires_in: settings.expiresIn,
          interval: settings.interval
        })
      }
      case "device_code": {
        if (polled === undefined || polled.state === "spent") return refuse(400, "invalid_grant")
        const tooSoon =
          polled.lastPollAt !== null && at - polled.lastPollAt < polled.interval * 1000 - POLL_TOLERANCE_MS
        polled.lastPollAt = at
        if (polled.expired || at >= polled.expiresAt) return refuse(400, "expired_token")
        if (polled.slowDowns > 0 || tooSoon) {
          if (polled.slowDowns > 0) polled.slowDowns--
          else tooFast++
          polled.interval += 5
          return refuse(400, "slow_down")
        }
        if (polled.state === "denied") return refuse(400, "access_denied")
        if (polled.state === "pending") return refuse(400, "authorization_pending")
        polled.state = "spent"
        log(200, "tokens")
        return json(res, 200, tokens())
      }
      case "refresh_token": {
        const presented = form.get("refresh_token") ?? ""
        if (refreshTokens.get(presented) !== true) return refuse(400, "invalid_grant")
        refreshTokens.set(presented, false)
        log(200, "tokens")
        return json(res, 200, tokens())
      }
      default:
        return refuse(400, "unsupported_grant_type")
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const origin = `http://127.0.0.1:${port}`

  const handle: FakeDeviceAuthServerHandle = {
    origin,
    deviceAuthorizationUrl: new URL("/oauth/device/code", origin),
    tokenUrl: new URL("/oauth/token", origin),
    clientId,
    requests,
    count: (call) => requests.filter((request) => request.call === call).length,
    polls: (code) => requests.filter((request) => request.call === "device_code" && request.userCode === code),
    tooFastPolls: () => tooFast,
    approve: (code) => {
      grantOf(code).state = "approved"
    },
    deny: (code) => {
      grantOf(code).state = "denied"
    },
    expire: (code) => {
      grantOf(code).expired = true
    },
    slowDown: (code, times = 1) => {
      grantOf(code).slowDowns += times
    },
    revokeRefreshTokens: () => {
      for (const token of refreshTokens.keys()) refreshTokens.set(token, false)
    },
    failNext: (call, failure = 503, times = 1) => {
      failures.set(call, { failure, times })
    },
    configure: (next) => {
      settings = { ...settings, ...next }
    },
    intervalOf: (code) => byUserCode.get(code)?.interval,
    issued: () => ({
      deviceCodes: [...issued.deviceCodes],
      accessTokens: [...issued.accessTokens],
      refreshTokens: [...issued.refreshTokens]
    }),
    validRefreshTokens: () => [...refreshTokens].filter(([, valid]) => valid).map(([token]) => token),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return handle
}

/** The same fake for Effect tests: started with the layer, closed with its scope. */
export class FakeDeviceAuthServer extends Context.Service<FakeDeviceAuthServer, FakeDeviceAuthServerHandle>()(
  "bosun/testing/FakeDeviceAuthServer"
) {
  static readonly layer = (options: FakeDeviceAuthOptions = {}) =>
    Layer.effect(
      FakeDeviceAuthServer,
      Effect.acquireRelease(
        Effect.promise(() => startFakeDeviceAuthServer(options)),
        (handle) => Effect.promise(() => handle.close())
      )
    )
}

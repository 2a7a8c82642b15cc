/**
 * `POST /v1/tools/agent-auth/fetch` on the real runtime process (docs/interface.md: Agent runtime
 * protocol, the fallback agent OAuth): the one request reaches an allowed origin (a local stand-in
 * for a sign-in host) as asked, hop-by-hop headers dropped; its answer comes back whole; redirects
 * are returned, not followed; any other origin is refused.
 */
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { AgentAuthFetchResult } from "@bosun/domain"
import { call, makeFixtures, protocolHeaders, type RuntimeProcess, startRuntime } from "@bosun/testing/RuntimeProcess"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

interface Seen {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
}

const seen: Array<Seen> = []
const signIn = createServer((req, res) => {
  let body = ""
  req.on("data", (chunk: Buffer) => (body += chunk.toString()))
  req.on("end", () => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body })
    if (req.url === "/redirect") {
      res.writeHead(302, { location: "https://elsewhere.example/next" })
      return res.end()
    }
    res.writeHead(200, { "content-type": "application/json", "x-request-id": "sign-in-1" })
    res.end(JSON.stringify({ device_code: "dc-123", user_code: "ABCD-EFGH", interval: 5 }))
  })
})

const fixtures = makeFixtures()
let runtime: RuntimeProcess
let origin: string
const decodeResult = Schema.decodeUnknownSync(AgentAuthFetchResult)

beforeAll(async () => {
  await new Promise<void>((resolve) => signIn.listen(0, "127.0.0.1", resolve))
  origin = `http://127.0.0.1:${(signIn.address() as AddressInfo).port}`
  runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data"),
    BOSUN_RUNTIME_AGENT_AUTH_ORIGINS: `https://auth.openai.com, ${origin}`
  })
})

afterAll(async () => {
  await runtime?.stop()
  signIn.close()
})

describe("agent-auth fallback", () => {
  it("makes the request to an allowed origin and answers its status, headers and body", async () => {
    const response = await call(runtime.base, "POST", "/v1/tools/agent-auth/fetch", {
      method: "POST",
      url: `${origin}/oauth/device/code`,
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        connection: "close",
        "proxy-authorization": "Basic c2VjcmV0"
      },
      body: "client_id=app_123&scope=openid"
    })
    expect(response.status).toBe(200)
    const result = decodeResult(response.json)
    expect(result.status).toBe(200)
    expect(JSON.parse(result.body)).toEqual({ device_code: "dc-123", user_code: "ABCD-EFGH", interval: 5 })
    expect(result.headers["content-type"]).toBe("application/json")
    expect(result.headers["x-request-id"]).toBe("sign-in-1")
    const request = seen.at(-1)
    expect(request?.method).toBe("POST")
    expect(request?.url).toBe("/oauth/device/code")
    expect(request?.body).toBe("client_id=app_123&scope=openid")
    expect(request?.headers["content-type"]).toBe("application/x-www-form-urlencoded")
    expect(request?.headers["proxy-authorization"]).toBeUndefined()
    // The runtime's own token never travels on.
    expect(JSON.stringify(request?.headers)).not.toContain("runtime-test-token")
  })

  it("returns a redirect instead of following it", async () => {
    const response = await call(runtime.base, "POST", "/v1/tools/agent-auth/fetch", {
      method: "GET",
      url: `${origin}/redirect`
    })
    const result = decodeResult(response.json)
    expect(result.status).toBe(302)
    expect(result.headers.location).toBe("https://elsewhere.example/next")
  })

  it("refuses another origin with 403, a malformed call with 400, and a call without the token with 401", async () => {
    const before = seen.length
    const elsewhere = await call(runtime.base, "POST", "/v1/tools/agent-auth/fetch", {
      method: "GET",
      url: "http://127.0.0.1:9/steal"
    })
    expect(elsewhere.status).toBe(403)
    expect(elsewhere.json.error.code).toBe("origin_not_allowed")
    const sneaky = await call(runtime.base, "POST", "/v1/tools/agent-auth/fetch", {
      method: "GET",
      url: `${origin}@evil.example/`
    })
    expect(sneaky.status).toBe(403)
    const malformed = await call(runtime.base, "POST", "/v1/tools/agent-auth/fetch", { method: "DELETE", url: origin })
    expect(malformed.status).toBe(400)
    expect(malformed.json.error.code).toBe("invalid_body")
    const anonymous = await fetch(`${runtime.base}/v1/tools/agent-auth/fetch`, {
      method: "POST",
      headers: { ...protocolHeaders, authorization: "Bearer nope" },
      body: JSON.stringify({ method: "GET", url: `${origin}/x` })
    })
    expect(anonymous.status).toBe(401)
    expect(seen.length).toBe(before)
  })
})

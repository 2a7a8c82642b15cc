/**
 * The credential-injection egress proxy for real on loopback: the agent side sees only
 * placeholders, the upstream fake sees the real token, a host outside the tier is refused. The
 * agent side is undici through the proxy, trusting only the deployment CA; the upstream is an HTTPS
 * server with a certificate of its own CA, which the proxy is told to trust.
 */
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { ProxyAgent, request } from "undici"
import { generateCa, InjectionProxy, issueCertificate } from "../src/sandbox/InjectionProxy.ts"

interface Seen {
  readonly url: string
  readonly authorization: string | undefined
  readonly proxyAuthorization: string | undefined
}

const AGENT_PLACEHOLDER = "bosun-inject-run-1:1-agent"
const REPO_PLACEHOLDER = "bosun-inject-run-1:1-repo-1"
const ELSEWHERE_PLACEHOLDER = "bosun-inject-run-1:1-mcp-docs"
const REAL_AGENT_KEY = "sk-real-agent-key-5f2a"
const REAL_REPO_TOKEN = "ghs_realRepoToken9c1d"
const PROXY_SECRET = "proxy-secret-0b7e"

const upstreamSeen: Array<Seen> = []
const outsiderSeen: Array<Seen> = []
const upstreams: Array<https.Server> = []

/** An HTTPS upstream on loopback recording what arrives; it echoes the Authorization header back. */
const startUpstream = async (tlsMaterial: { certificate: string; privateKey: string }, seen: Array<Seen>) => {
  const server = https.createServer({ key: tlsMaterial.privateKey, cert: tlsMaterial.certificate }, (req, res) => {
    seen.push({
      url: req.url ?? "",
      authorization: req.headers.authorization,
      proxyAuthorization: req.headers["proxy-authorization"]
    })
    res.writeHead(200, { "content-type": "application/json", "x-echo-authorization": req.headers.authorization ?? "" })
    res.end(JSON.stringify({ ok: true }))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  upstreams.push(server)
  return (server.address() as AddressInfo).port
}

let deploymentCa: { certificate: string; privateKey: string }
let upstreamPort = 0
let outsiderPort = 0
let proxyUrl = ""
const scope = Effect.runSync(Scope.make())

beforeAll(async () => {
  deploymentCa = await generateCa("Bosun test egress CA")
  const upstreamCa = await generateCa("Upstream test CA")
  const upstreamTls = await issueCertificate(upstreamCa, "127.0.0.1")
  upstreamPort = await startUpstream(upstreamTls, upstreamSeen)
  outsiderPort = await startUpstream(upstreamTls, outsiderSeen)
  const layer = InjectionProxy.layer({
    host: "127.0.0.1",
    port: 0,
    ca: { certificate: deploymentCa.certificate, privateKey: Redacted.make(deploymentCa.privateKey) },
    tiers: { STRICT: [`127.0.0.1:${upstreamPort}`], BUILD: [`127.0.0.1:${upstreamPort}`], DEEP_SCAN: [] },
    upstreamCa: [upstreamCa.certificate]
  })
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const proxy = Context.get(context, InjectionProxy)
  proxyUrl = `http://${proxy.address.host}:${proxy.address.port}`
  await Effect.runPromise(
    proxy.register({
      attemptId: "run-1:1",
      secret: Redacted.make(PROXY_SECRET),
      tier: "STRICT",
      grants: [
        { placeholder: AGENT_PLACEHOLDER, value: Redacted.make(REAL_AGENT_KEY), hosts: ["127.0.0.1"] },
        { placeholder: REPO_PLACEHOLDER, value: Redacted.make(REAL_REPO_TOKEN), hosts: ["127.0.0.1"] },
        { placeholder: ELSEWHERE_PLACEHOLDER, value: Redacted.make("mcp-real-secret"), hosts: ["docs.example.com"] }
      ]
    })
  )
})

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  for (const server of upstreams) server.close()
})

/** The agent's HTTP client: through the proxy with its credentials, trusting only the deployment CA. */
const agentClient = (secret = PROXY_SECRET) =>
  new ProxyAgent({
    uri: proxyUrl,
    token: `Basic ${Buffer.from(`run-1:1:${secret}`).toString("base64")}`,
    requestTls: { ca: deploymentCa.certificate }
  })

describe("credential-injection egress proxy", () => {
  it("swaps the placeholder for the real token on the way out and back again in the answer's headers", async () => {
    const dispatcher = agentClient()
    const response = await request(`https://127.0.0.1:${upstreamPort}/v1/models`, {
      dispatcher,
      headers: { authorization: `Bearer ${AGENT_PLACEHOLDER}` }
    })
    expect(response.statusCode).toBe(200)
    expect(await response.body.json()).toEqual({ ok: true })
    const seen = upstreamSeen.at(-1)
    expect(seen?.url).toBe("/v1/models")
    expect(seen?.authorization).toBe(`Bearer ${REAL_AGENT_KEY}`)
    expect(seen?.proxyAuthorization).toBeUndefined()
    // The upstream echoed the real token; the agent sees the placeholder.
    expect(response.headers["x-echo-authorization"]).toBe(`Bearer ${AGENT_PLACEHOLDER}`)
    await dispatcher.close()
  })

  it("swaps a placeholder inside Basic credentials (git over HTTPS), and leaves one meant for another host alone", async () => {
    const dispatcher = agentClient()
    const basic = Buffer.from(`x-access-token:${REPO_PLACEHOLDER}`).toString("base64")
    await request(`https://127.0.0.1:${upstreamPort}/acme/api.git/info/refs?service=git-upload-pack`, {
      dispatcher,
      headers: { authorization: `Basic ${basic}` }
    }).then((response) => response.body.dump())
    expect(upstreamSeen.at(-1)?.authorization).toBe(
      `Basic ${Buffer.from(`x-access-token:${REAL_REPO_TOKEN}`).toString("base64")}`
    )
    await request(`https://127.0.0.1:${upstreamPort}/mcp`, {
      dispatcher,
      headers: { authorization: `Bearer ${ELSEWHERE_PLACEHOLDER}` }
    }).then((response) => response.body.dump())
    expect(upstreamSeen.at(-1)?.authorization).toBe(`Bearer ${ELSEWHERE_PLACEHOLDER}`)
    await dispatcher.close()
  })

  it("refuses a host outside the tier, and a pod without its proxy credentials", async () => {
    const before = outsiderSeen.length
    const dispatcher = agentClient()
    const outside = await request(`https://127.0.0.1:${outsiderPort}/`, { dispatcher }).then(
      (response) => response.statusCode,
      (error: Error) => error.message
    )
    expect(String(outside)).toContain("(403)")
    expect(outsiderSeen.length).toBe(before)
    await dispatcher.close()

    const stranger = agentClient("wrong-secret")
    const refused = await request(`https://127.0.0.1:${upstreamPort}/`, { dispatcher: stranger }).then(
      (response) => response.statusCode,
      (error: Error) => error.message
    )
    expect(String(refused)).toContain("(407)")
    await stranger.close()
  })

  it("presents certificates of the deployment CA: a client that does not trust it refuses the tunnel", async () => {
    const untrusting = new ProxyAgent({
      uri: proxyUrl,
      token: `Basic ${Buffer.from(`run-1:1:${PROXY_SECRET}`).toString("base64")}`
    })
    const outcome = await request(`https://127.0.0.1:${upstreamPort}/`, { dispatcher: untrusting }).then(
      () => "connected",
      (error: Error & { code?: string }) => error.code ?? error.message
    )
    expect(outcome).not.toBe("connected")
    await untrusting.close()
  })
})

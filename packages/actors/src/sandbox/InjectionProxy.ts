/**
 * Bosun's credential-injection egress proxy (PLATFORM_CONTAINER, `credential_mode: INJECTED`;
 * docs/interface.md: Trust boundaries). The agent in a platform container never holds a real
 * credential: its run request carries placeholders (`bosun-inject-{attempt}-{repositoryId}`,
 * `bosun-inject-{attempt}-agent`, one per MCP header), and every request it makes leaves the pod
 * through this proxy, which
 * - knows the pod by its `Proxy-Authorization` (Basic `<attempt id>:<proxy secret>`; 407 without);
 * - lets it reach only the hosts of its egress tier (STRICT, BUILD, DEEP_SCAN: host allow-lists
 *   in configuration; 403 for anything else, deny by default);
 * - terminates TLS for an allowed `CONNECT` with a certificate for that host issued on the fly by
 *   the deployment's CA (which the pod trusts), reads the request, swaps each placeholder in its
 *   headers — plain, or inside `Authorization: Basic` — for the real value, only on the way to a
 *   host that credential is for, and forwards it over verified TLS;
 * - swaps real values in the response headers back to placeholders. Response bodies pass as they
 *   are: an upstream that echoes a credential into a body is outside what this proxy can see to.
 * Plain-HTTP requests (absolute-form) are handled the same way without the TLS step.
 */
// @peculiar/x509 resolves its ASN.1 codecs through tsyringe, which needs the Reflect metadata API.
import "reflect-metadata"
import { randomBytes, timingSafeEqual, webcrypto } from "node:crypto"
import * as http from "node:http"
import * as https from "node:https"
import { isIP } from "node:net"
import type { Duplex } from "node:stream"
import * as tls from "node:tls"
import * as x509 from "@peculiar/x509"
import { Context, Effect, Layer, Redacted } from "effect"

export type EgressTier = "STRICT" | "BUILD" | "DEEP_SCAN"

export interface InjectionGrant {
  /** What the agent holds, e.g. `bosun-inject-run-1:1-agent`. */
  readonly placeholder: string
  readonly value: Redacted.Redacted<string>
  /** Hosts the real value may go to: `api.github.com`, or `*.github.com` for any subdomain. */
  readonly hosts: ReadonlyArray<string>
}

export interface ProxyClient {
  readonly attemptId: string
  readonly secret: Redacted.Redacted<string>
  readonly tier: EgressTier
  readonly grants: ReadonlyArray<InjectionGrant>
}

export interface InjectionProxySettings {
  readonly host: string
  readonly port: number
  /** The deployment's CA, PEM: the certificate pods trust and its PKCS#8 ECDSA P-256 key. */
  readonly ca: { readonly certificate: string; readonly privateKey: Redacted.Redacted<string> }
  /** Per tier, `host` or `host:port` entries (`*.example.com` matches subdomains); port 443 when omitted. */
  readonly tiers: Readonly<Record<EgressTier, ReadonlyArray<string>>>
  /** CAs to trust for upstream TLS besides the system ones (a corporate proxy; tests). */
  readonly upstreamCa?: ReadonlyArray<string>
}

const SIGNING = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const

/** A new CA for a deployment (operators may also bring one): certificate and PKCS#8 key, PEM. */
export const generateCa = async (commonName = "Bosun egress CA") => {
  const keys = await webcrypto.subtle.generateKey(SIGNING, true, ["sign", "verify"])
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString("hex"),
    name: `CN=${commonName}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 5 * 365 * 86_400_000),
    signingAlgorithm: SIGNING,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true)
    ]
  })
  const pkcs8 = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey)
  return { certificate: certificate.toString("pem"), privateKey: x509.PemConverter.encode(pkcs8, "PRIVATE KEY") }
}

/** A server certificate for `host` (a DNS name or an IP) issued by `ca`, with its key; PEM. */
export const issueCertificate = async (
  ca: { readonly certificate: string; readonly privateKey: string },
  host: string,
  days = 7
) => {
  const caKey = await webcrypto.subtle.importKey(
    "pkcs8",
    x509.PemConverter.decodeFirst(ca.privateKey),
    SIGNING,
    false,
    ["sign"]
  )
  const keys = await webcrypto.subtle.generateKey(SIGNING, true, ["sign", "verify"])
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: randomBytes(8).toString("hex"),
    subject: `CN=${host}`,
    issuer: new x509.X509Certificate(ca.certificate).subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + days * 86_400_000),
    signingAlgorithm: SIGNING,
    publicKey: keys.publicKey,
    signingKey: caKey,
    extensions: [
      new x509.SubjectAlternativeNameExtension([{ type: isIP(host) ? "ip" : "dns", value: host }]),
      new x509.BasicConstraintsExtension(false),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth])
    ]
  })
  const pkcs8 = await webcrypto.subtle.exportKey("pkcs8", keys.privateKey)
  return { certificate: certificate.toString("pem"), privateKey: x509.PemConverter.encode(pkcs8, "PRIVATE KEY") }
}

const hostMatches = (pattern: string, host: string) =>
  pattern.startsWith("*.") ? host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1 : pattern === host

/** Whether `host:port` is in the tier's list. */
const allowed = (entries: ReadonlyArray<string>, host: string, port: number) =>
  entries.some((entry) => {
    const [pattern = "", entryPort] = entry.split(/:(?=\d+$)/)
    return hostMatches(pattern.toLowerCase(), host) && Number(entryPort ?? 443) === port
  })

const HOP_BY_HOP = ["proxy-authorization", "proxy-connection", "connection", "keep-alive", "te", "trailer", "upgrade"]

/** Placeholders swapped for real values, in plain header values and inside Basic credentials. */
const inject = (value: string, swaps: ReadonlyArray<readonly [string, string]>) => {
  const swap = (text: string) => swaps.reduce((out, [from, to]) => out.split(from).join(to), text)
  const basic = /^Basic\s+(\S+)$/i.exec(value)
  if (basic?.[1] !== undefined) {
    const decoded = Buffer.from(basic[1], "base64").toString("utf8")
    const swapped = swap(decoded)
    if (swapped !== decoded) return `Basic ${Buffer.from(swapped, "utf8").toString("base64")}`
  }
  return swap(value)
}

const refuse = (res: http.ServerResponse, status: number, message: string, headers: http.OutgoingHttpHeaders = {}) => {
  res.writeHead(status, { "content-type": "text/plain", ...headers })
  res.end(`Bosun egress proxy: ${message}\n`)
}

/** What the proxy's handlers share: its settings, the pods registered with it, and its TLS contexts. */
interface Proxy {
  readonly settings: InjectionProxySettings
  readonly clients: Map<string, ProxyClient>
  /** The CAs upstream TLS is verified with, when more than the system's. */
  readonly upstreamCa: Array<string> | undefined
  /** A TLS context for `host`, its certificate issued by the deployment CA (one per host, reused). */
  readonly contextFor: (host: string) => Promise<tls.SecureContext>
}

/** Decrypted requests of CONNECT tunnels, keyed by their TLS socket. */
type Tunnels = WeakMap<Duplex, { readonly client: ProxyClient; readonly host: string; readonly port: number }>

const makeProxy = (settings: InjectionProxySettings): Proxy => {
  const ca = { certificate: settings.ca.certificate, privateKey: Redacted.value(settings.ca.privateKey) }
  const contexts = new Map<string, Promise<tls.SecureContext>>()
  const contextFor = (host: string) => {
    const known = contexts.get(host)
    if (known !== undefined) return known
    const made = issueCertificate(ca, host).then((issued) =>
      tls.createSecureContext({
        key: issued.privateKey,
        cert: `${issued.certificate}\n${settings.ca.certificate}`
      })
    )
    contexts.set(host, made)
    return made
  }
  return {
    settings,
    clients: new Map<string, ProxyClient>(),
    upstreamCa: settings.upstreamCa === undefined ? undefined : [...tls.rootCertificates, ...settings.upstreamCa],
    contextFor
  }
}

/** The registered pod a `Proxy-Authorization` header names, when its secret matches. */
const authenticate = (proxy: Proxy, header: string | undefined): ProxyClient | undefined => {
  const credentials = /^Basic\s+(\S+)$/i.exec(header ?? "")?.[1]
  if (credentials === undefined) return undefined
  const decoded = Buffer.from(credentials, "base64").toString("utf8")
  const colon = decoded.lastIndexOf(":")
  const client = proxy.clients.get(decoded.slice(0, colon))
  if (client === undefined) return undefined
  const given = Buffer.from(decoded.slice(colon + 1))
  const expected = Buffer.from(Redacted.value(client.secret))
  return given.length === expected.length && timingSafeEqual(given, expected) ? client : undefined
}

/** Forwards one request to `target`, placeholders swapped in, real values swapped out of the answer. */
const forward = (
  proxy: Proxy,
  client: ProxyClient,
  target: {
    readonly protocol: "http:" | "https:"
    readonly host: string
    readonly port: number
    readonly path: string
  },
  req: http.IncomingMessage,
  res: http.ServerResponse
) => {
  const grants = client.grants.filter((grant) => grant.hosts.some((pattern) => hostMatches(pattern, target.host)))
  const toReal = grants.map((grant) => [grant.placeholder, Redacted.value(grant.value)] as const)
  const toPlaceholder = grants.map((grant) => [Redacted.value(grant.value), grant.placeholder] as const)
  const headers: http.OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP_BY_HOP.includes(name)) continue
    headers[name] = Array.isArray(value) ? value.map((v) => inject(v, toReal)) : inject(value, toReal)
  }
  const options = {
    host: target.host,
    port: target.port,
    method: req.method,
    path: target.path,
    headers,
    servername: isIP(target.host) ? undefined : target.host,
    ...(proxy.upstreamCa === undefined ? {} : { ca: proxy.upstreamCa })
  }
  const upstream = (target.protocol === "https:" ? https : http).request(options, (answer) => {
    const back: http.OutgoingHttpHeaders = {}
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined || HOP_BY_HOP.includes(name)) continue
      back[name] = Array.isArray(value) ? value.map((v) => inject(v, toPlaceholder)) : inject(value, toPlaceholder)
    }
    res.writeHead(answer.statusCode ?? 502, back)
    answer.pipe(res)
  })
  upstream.on("error", () => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" })
    res.end("Bosun egress proxy: the upstream could not be reached\n")
  })
  req.pipe(upstream)
}

/** Plain HTTP through the proxy: the request line holds an absolute URL. */
const servePlain = (proxy: Proxy) => (req: http.IncomingMessage, res: http.ServerResponse) => {
  const client = authenticate(proxy, req.headers["proxy-authorization"])
  if (client === undefined) {
    return refuse(res, 407, "proxy credentials required", { "proxy-authenticate": 'Basic realm="bosun"' })
  }
  const url = URL.canParse(req.url ?? "") ? new URL(req.url ?? "") : undefined
  if (url === undefined || url.protocol !== "http:") return refuse(res, 400, "an absolute http:// URL is required")
  const host = url.hostname.toLowerCase()
  const port = Number(url.port || 80)
  if (!allowed(proxy.settings.tiers[client.tier], host, port)) {
    return refuse(res, 403, `${host}:${port} is not allowed for egress tier ${client.tier}`)
  }
  forward(proxy, client, { protocol: "http:", host, port, path: `${url.pathname}${url.search}` }, req, res)
}

/** A requested CONNECT tunnel: allowed, it is answered, its TLS terminated and its requests handed to `inner`. */
const openTunnel =
  (proxy: Proxy, tunnels: Tunnels, inner: http.Server) => (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const reject = (status: number, reason: string, extra = "") => {
      socket.end(`HTTP/1.1 ${status} ${reason}\r\n${extra}Content-Length: 0\r\nConnection: close\r\n\r\n`)
    }
    socket.on("error", () => socket.destroy())
    const client = authenticate(proxy, req.headers["proxy-authorization"])
    if (client === undefined) {
      return reject(407, "Proxy Authentication Required", 'Proxy-Authenticate: Basic realm="bosun"\r\n')
    }
    const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(req.url ?? "")
    const host = match?.[1]?.toLowerCase()
    const port = Number(match?.[2])
    if (host === undefined || !allowed(proxy.settings.tiers[client.tier], host, port)) {
      return reject(403, "Forbidden")
    }
    proxy.contextFor(host).then(
      (secureContext) => {
        socket.write("HTTP/1.1 200 Connection Established\r\n\r\n")
        if (head.length > 0) socket.unshift(head)
        const secure = new tls.TLSSocket(socket, { isServer: true, secureContext })
        secure.on("error", () => secure.destroy())
        tunnels.set(secure, { client, host, port })
        inner.emit("connection", secure)
      },
      () => reject(502, "Bad Gateway")
    )
  }

/** Listens on the configured address for as long as the scope lasts; answers where it is bound. */
const listen = (settings: InjectionProxySettings, outer: http.Server, inner: http.Server) =>
  Effect.acquireRelease(
    Effect.callback<{ host: string; port: number }>((resume) => {
      outer.listen(settings.port, settings.host, () => {
        const bound = outer.address()
        resume(
          Effect.succeed({
            host: settings.host,
            port: typeof bound === "object" && bound !== null ? bound.port : settings.port
          })
        )
      })
    }),
    () =>
      Effect.callback<void>((resume) => {
        outer.close(() => resume(Effect.void))
        outer.closeAllConnections()
        inner.closeAllConnections()
      })
  )

export class InjectionProxy extends Context.Service<
  InjectionProxy,
  {
    /** `host:port` pods are told to use as their HTTP(S) proxy. */
    readonly address: { readonly host: string; readonly port: number }
    readonly register: (client: ProxyClient) => Effect.Effect<void>
    readonly unregister: (attemptId: string) => Effect.Effect<void>
  }
>()("bosun/actors/InjectionProxy") {
  static readonly layer = (settings: InjectionProxySettings) =>
    Layer.effect(
      InjectionProxy,
      Effect.gen(function* () {
        const proxy = makeProxy(settings)
        const tunnels: Tunnels = new WeakMap()
        const inner = http.createServer((req, res) => {
          const tunnel = tunnels.get(req.socket)
          if (tunnel === undefined) return refuse(res, 500, "unknown tunnel")
          forward(
            proxy,
            tunnel.client,
            { protocol: "https:", host: tunnel.host, port: tunnel.port, path: req.url ?? "/" },
            req,
            res
          )
        })
        const outer = http.createServer(servePlain(proxy))
        outer.on("connect", openTunnel(proxy, tunnels, inner))
        const address = yield* listen(settings, outer, inner)
        return InjectionProxy.of({
          address,
          register: (client) => Effect.sync(() => void proxy.clients.set(client.attemptId, client)),
          unregister: (attemptId) => Effect.sync(() => void proxy.clients.delete(attemptId))
        })
      })
    )
}

/**
 * A local stand-in for Composio's API (`/api/v3.1`, what `@composio/client` speaks) covering the
 * connected-app flow, bound to 127.0.0.1, for tests only. Every call needs the `x-api-key` it was
 * made with (401 otherwise, as Composio answers):
 * - `GET /api/v3.1/toolkits/:slug`: a registered toolkit, with `auth_config_details` listing
 *   OAUTH2 unless it needs no authentication and `composio_managed_auth_schemes` naming OAUTH2 when
 *   Composio manages it; 404 for any other slug;
 * - `GET /api/v3.1/auth_configs?toolkit_slug=&is_composio_managed=`: the auth configs created here;
 * - `POST /api/v3.1/auth_configs` `{toolkit: {slug}, auth_config: {type: "use_composio_managed_auth"}}`:
 *   201 with a new `ac_…` id for a managed toolkit, 400 for a toolkit Composio does not manage;
 * - `POST /api/v3.1/connected_accounts/link` `{auth_config_id, user_id, callback_url?}`: 201
 *   `{link_token, redirect_url, expires_at, connected_account_id}`, the link valid ten minutes.
 * Every request is recorded so tests can assert what was sent; `failWith` simulates an outage.
 */
import { randomBytes } from "node:crypto"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer } from "effect"

export interface FakeComposioToolkit {
  readonly slug: string
  /** Needs no authentication: no auth mode listed. */
  readonly noAuth?: boolean
  /** Composio manages its OAuth2 app (default true); false: an auth config must be made by hand. */
  readonly managed?: boolean
}

export interface FakeComposioRequest {
  readonly method: string
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  readonly apiKey: string | undefined
  readonly body: unknown
}

export interface FakeComposioAuthConfig {
  readonly id: string
  readonly toolkitSlug: string
}

export interface FakeComposioLink {
  readonly authConfigId: string
  readonly userId: string
  readonly callbackUrl: string | undefined
  readonly connectedAccountId: string
  readonly redirectUrl: string
  readonly expiresAt: string
}

/** What `failWith` simulates: an HTTP status for every call, or connections dropped unanswered. */
export type FakeComposioFailure = number | "connection-reset"

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    req.on("data", (chunk: Buffer) => (body += chunk.toString()))
    req.on("end", () => resolve(body))
  })

const parse = (text: string): unknown => {
  try {
    return text === "" ? undefined : JSON.parse(text)
  } catch {
    return undefined
  }
}

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>)[key] : undefined

/** Composio's error body. */
const errorBody = (status: number, message: string) => ({
  error: { message, code: status * 10, status, request_id: randomBytes(8).toString("hex") }
})

const id = (prefix: string) => `${prefix}_${randomBytes(6).toString("hex")}`

export class FakeComposio extends Context.Service<
  FakeComposio,
  {
    /** `http://127.0.0.1:<port>`: what `BOSUN_COMPOSIO_API_URL` is set to. */
    readonly url: string
    /** The only API key it accepts. */
    readonly apiKey: string
    readonly requests: ReadonlyArray<FakeComposioRequest>
    readonly authConfigs: ReadonlyArray<FakeComposioAuthConfig>
    readonly links: ReadonlyArray<FakeComposioLink>
    readonly addToolkit: (toolkit: FakeComposioToolkit) => void
    /** Fail every call this way (an outage); undefined to stop. */
    readonly failWith: (failure: FakeComposioFailure | undefined) => void
  }
>()("bosun/testing/FakeComposio") {
  static readonly layer = Layer.effect(
    FakeComposio,
    Effect.acquireRelease(
      Effect.promise(async () => {
        const apiKey = `ak_fake_${randomBytes(12).toString("hex")}`
        const toolkits = new Map<string, FakeComposioToolkit>()
        const requests: Array<FakeComposioRequest> = []
        const authConfigs: Array<FakeComposioAuthConfig> = []
        const links: Array<FakeComposioLink> = []
        let failure: FakeComposioFailure | undefined
        const server = createServer(async (req, res) => {
          const text = await readBody(req)
          const url = new URL(req.url ?? "/", "http://fake")
          const body = parse(text)
          const header = req.headers["x-api-key"]
          requests.push({
            method: req.method ?? "",
            path: url.pathname,
            query: Object.fromEntries(url.searchParams),
            apiKey: Array.isArray(header) ? header.join(",") : header,
            body
          })
          const json = (status: number, value: unknown) => {
            res.writeHead(status, { "content-type": "application/json" })
            res.end(JSON.stringify(value))
          }
          if (failure === "connection-reset") return req.socket.destroy()
          if (failure !== undefined) return json(failure, errorBody(failure, "Service unavailable"))
          if (header !== apiKey) return json(401, errorBody(401, "Invalid API key"))

          const toolkit = /^\/api\/v3\.1\/toolkits\/([^/]+)$/.exec(url.pathname)
          if (req.method === "GET" && toolkit !== null) {
            const slug = decodeURIComponent(toolkit[1] ?? "")
            const found = toolkits.get(slug)
            if (found === undefined) return json(404, errorBody(404, `Toolkit ${slug} not found`))
            const managed = found.noAuth !== true && found.managed !== false
            return json(200, {
              slug,
              name: slug.toUpperCase(),
              type: "native",
              enabled: true,
              composio_managed_auth_schemes: managed ? ["OAUTH2"] : [],
              composio_managed_auth: managed ? [{ mode: "OAUTH2", scopes: { available: [] } }] : [],
              is_local_toolkit: false,
              auth_config_details: found.noAuth
                ? []
                : [
                    {
                      mode: "OAUTH2",
                      name: `${slug} OAuth2`,
                      fields: {
                        auth_config_creation: { required: [], optional: [] },
                        connected_account_initiation: { required: [], optional: [] }
                      }
                    }
                  ],
              meta: {
                created_at: "2026-01-01T00:00:00.000Z",
                updated_at: "2026-01-01T00:00:00.000Z",
                description: `The ${slug} toolkit`,
                logo: `https://logos.example/${slug}.png`,
                categories: [],
                triggers_count: 0,
                tools_count: 3,
                version: "20260101_00",
                available_versions: ["20260101_00"]
              },
              deprecated: { toolkitId: id("tk"), rawProxyInfoByAuthSchemes: [] }
            })
          }

          if (req.method === "GET" && url.pathname === "/api/v3.1/auth_configs") {
            const slugs = (url.searchParams.get("toolkit_slug") ?? "").split(",").filter((s) => s !== "")
            const items = authConfigs
              .filter((config) => slugs.length === 0 || slugs.includes(config.toolkitSlug))
              .map((config) => ({
                id: config.id,
                uuid: randomBytes(16).toString("hex"),
                type: "default",
                toolkit: { slug: config.toolkitSlug, logo: "" },
                name: `${config.toolkitSlug} auth config`,
                auth_scheme: "OAUTH2",
                is_composio_managed: true,
                status: "ENABLED",
                no_of_connections: links.filter((link) => link.authConfigId === config.id).length,
                tool_access_config: {}
              }))
            return json(200, {
              items,
              next_cursor: null,
              total_pages: 1,
              current_page: 1,
              total_items: items.length
            })
          }

          if (req.method === "POST" && url.pathname === "/api/v3.1/auth_configs") {
            const slug = field(field(body, "toolkit"), "slug")
            const found = typeof slug === "string" ? toolkits.get(slug) : undefined
            if (found === undefined) return json(404, errorBody(404, "Toolkit not found"))
            if (field(field(body, "auth_config"), "type") !== "use_composio_managed_auth") {
              return json(400, errorBody(400, "Only Composio-managed auth configs are faked"))
            }
            if (found.noAuth === true || found.managed === false) {
              return json(400, errorBody(400, `Default auth config not found for toolkit ${found.slug}`))
            }
            const created = { id: id("ac"), toolkitSlug: found.slug }
            authConfigs.push(created)
            return json(201, {
              toolkit: { slug: found.slug },
              auth_config: { id: created.id, auth_scheme: "OAUTH2", is_composio_managed: true }
            })
          }

          if (req.method === "POST" && url.pathname === "/api/v3.1/connected_accounts/link") {
            const authConfigId = field(body, "auth_config_id")
            const userId = field(body, "user_id")
            const callbackUrl = field(body, "callback_url")
            if (typeof userId !== "string" || userId === "") return json(400, errorBody(400, "user_id is required"))
            if (!authConfigs.some((config) => config.id === authConfigId) || typeof authConfigId !== "string") {
              return json(400, errorBody(400, "Auth config not found"))
            }
            const token = id("lt")
            const link: FakeComposioLink = {
              authConfigId,
              userId,
              callbackUrl: typeof callbackUrl === "string" ? callbackUrl : undefined,
              connectedAccountId: id("ca"),
              redirectUrl: `https://connect.composio.example/link/${token}`,
              expiresAt: new Date(Date.now() + 10 * 60_000).toISOString()
            }
            links.push(link)
            return json(201, {
              link_token: token,
              redirect_url: link.redirectUrl,
              expires_at: link.expiresAt,
              connected_account_id: link.connectedAccountId
            })
          }

          return json(404, errorBody(404, "Not found"))
        })
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const { port } = server.address() as AddressInfo
        return {
          server,
          service: FakeComposio.of({
            url: `http://127.0.0.1:${port}`,
            apiKey,
            requests,
            authConfigs,
            links,
            addToolkit: (toolkit) => {
              toolkits.set(toolkit.slug, toolkit)
            },
            failWith: (next) => {
              failure = next
            }
          })
        }
      }),
      ({ server }) =>
        Effect.promise(
          () =>
            new Promise<void>((resolve) => {
              server.closeAllConnections()
              server.close(() => resolve())
            })
        )
    ).pipe(Effect.map(({ service }) => service))
  )
}

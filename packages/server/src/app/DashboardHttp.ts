/**
 * The dashboard under `/` (docs/interface.md: What the service does 2): the built SPA of
 * `packages/dashboard` (`BOSUN_DASHBOARD_DIR`, default its `dist/`), same origin as the API so the
 * session cookie needs no CORS. Any GET that is not a file and asks for HTML gets `index.html`, so
 * the app's own paths (`/orgs/acme/runs/…`) load on reload; hashed files under `/assets/` are
 * cached for a year, `index.html` never. Under `/api/` nothing falls back to the app: an unknown
 * API path stays the 404 envelope, as does any path that is neither a file nor a page request. When
 * the dashboard was not built a page request says how to build it. Every response it answers
 * carries `DashboardPolicy.ts`'s security headers; the policy's hashes of `index.html`'s inline
 * script come from the file as it is on disk, re-read whenever its modification time or size
 * changes, so a rebuild under a running server never breaks the policy.
 */
import * as path from "node:path"
import { ErrorCodes } from "@bosun/domain"
import { Effect, FileSystem, Layer, Option, Ref } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerRespondable, HttpServerResponse, HttpStaticServer } from "effect/http"
import { AppConfig } from "../platform/config/AppConfig.ts"
import { errorResponse } from "../platform/http/RequestPipeline.ts"
import { contentSecurityPolicy, dashboardSecurityHeaders } from "./DashboardPolicy.ts"

const IMMUTABLE = "public, max-age=31536000, immutable"

const notBuilt = (dir: string) =>
  HttpServerResponse.text(
    `<!doctype html><meta charset="utf-8"><title>Bosun</title><h1>Bosun</h1>` +
      `<p>The dashboard is not built. Run <code>npm run build</code> in the Bosun checkout (it writes ` +
      `<code>${dir.replace(/[<>&]/g, "")}</code>), then reload. The API is served under <code>/api/v1</code>.</p>`,
    { status: 503, contentType: "text/html; charset=utf-8" }
  )

const routeNotFound = errorResponse(404, ErrorCodes.routeNotFound, "No route matches this method and path")

export const DashboardRoute = Layer.effectDiscard(
  Effect.gen(function* () {
    const { dashboardDir } = yield* AppConfig
    const fs = yield* FileSystem.FileSystem
    const router = yield* HttpRouter.HttpRouter
    const built = yield* fs.exists(path.join(dashboardDir, "index.html")).pipe(Effect.orElseSucceed(() => false))
    const files = built ? yield* HttpStaticServer.make({ root: dashboardDir, spa: true }) : undefined

    const indexPath = path.join(dashboardDir, "index.html")
    const withoutInlineCode = dashboardSecurityHeaders(contentSecurityPolicy(undefined))
    // The headers for the `index.html` last read, keyed by its modification time and size.
    const current = yield* Ref.make({ version: "", headers: withoutInlineCode })
    const readHeaders = (version: string) =>
      fs.readFileString(indexPath).pipe(
        Effect.map((html) => ({ version, headers: dashboardSecurityHeaders(contentSecurityPolicy(html)) })),
        Effect.tap((read) => Ref.set(current, read)),
        Effect.map((read) => read.headers)
      )
    // One stat per response; `index.html` is read again only after it changed. While a rebuild
    // has it missing, the headers last read stand.
    const securityHeaders = built
      ? fs.stat(indexPath).pipe(
          Effect.flatMap((info) => {
            const version = `${Option.getOrUndefined(info.mtime)?.getTime() ?? ""}:${info.size}`
            return Effect.flatMap(Ref.get(current), (last) =>
              last.version === version ? Effect.succeed(last.headers) : readHeaders(version)
            )
          }),
          Effect.catch(() => Effect.map(Ref.get(current), (last) => last.headers))
        )
      : Effect.succeed(withoutInlineCode)

    const handle = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const pathname = request.url.split("?")[0] ?? "/"
      if (pathname === "/api" || pathname.startsWith("/api/")) return routeNotFound
      if (files === undefined) {
        return (request.headers.accept ?? "").includes("text/html") ? notBuilt(dashboardDir) : routeNotFound
      }
      const response = yield* files
      return HttpServerResponse.setHeader(
        response,
        "cache-control",
        pathname.startsWith("/assets/") ? IMMUTABLE : "no-cache"
      )
    }).pipe(
      Effect.catch((error) =>
        error.reason._tag === "RouteNotFound" ? Effect.succeed(routeNotFound) : HttpServerRespondable.toResponse(error)
      ),
      Effect.flatMap((response) =>
        Effect.map(securityHeaders, (headers) => HttpServerResponse.setHeaders(response, headers))
      )
    )
    yield* router.add("GET", "/*", handle)
  })
)

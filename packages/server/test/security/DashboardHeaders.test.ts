/**
 * The dashboard route's security headers without a browser: the policy's hashes follow the
 * `index.html` on disk (its inline scripts and styles as the browser hashes them, and again after
 * a rebuild under the running server), and the build hint of a dashboard not built carries the
 * same headers with no hash. The browser half is `DashboardHeaders.browser.test.ts`.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { HttpClient, HttpClientRequest, HttpRouter } from "effect/http"
import { DashboardRoute } from "../../src/app/DashboardHttp.ts"
import { AppConfig } from "../../src/platform/config/AppConfig.ts"
import { testSettings } from "../support/TestServer.ts"

class DashboardDir extends Context.Service<DashboardDir, string>()("bosun/test/DashboardDir") {}

/** The dashboard route alone on a loopback port, serving `dashboardDir`; the client is prefixed with its URL. */
const dashboardAt = (dashboardDir: string) =>
  HttpRouter.serve(DashboardRoute, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(Layer.succeed(AppConfig, AppConfig.of(testSettings({ dashboardDir })))),
    Layer.provideMerge(NodeHttpServer.layerTest),
    Layer.provideMerge(Layer.succeed(DashboardDir, dashboardDir))
  )

const FIRST = [
  "<!doctype html><html><head>",
  '<script type="module" crossorigin src="/assets/index-1.js"></script>',
  "<script>window.first = 1</script>",
  "<style>body { margin: 0 }</style>",
  // The HTML parser turns CR LF into LF before the browser hashes the text.
  '<script type="text/javascript">\r\nwindow.second = 2\r\n</script>',
  '</head><body><div id="root"></div></body></html>'
].join("\n")

const REBUILT = [
  "<!doctype html><html><head>",
  '<script type="module" crossorigin src="/assets/index-2.js"></script>',
  "<script>window.rebuilt = true</script>",
  '</head><body><div id="root"></div></body></html>'
].join("\n")

const hashSource = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`

const Built = Layer.unwrap(
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-dashboard-headers-"))
        fs.mkdirSync(path.join(dir, "assets"))
        fs.writeFileSync(path.join(dir, "index.html"), FIRST)
        fs.writeFileSync(path.join(dir, "assets", "index-1.js"), "export {}\n")
        return dir
      }),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    ),
    dashboardAt
  )
)

const get = (url: string) =>
  Effect.flatMap(HttpClient.HttpClient, (client) =>
    client.execute(HttpClientRequest.get(url, { headers: { accept: "text/html" } }))
  ).pipe(Effect.orDie)

const directives = (policy: string | undefined) =>
  Object.fromEntries(
    (policy ?? "").split("; ").map((directive) => [directive.split(" ")[0], directive.split(" ").slice(1)])
  )

/** Every header field but the hash lists, which each test states. */
const assertHeaders = (
  headers: Readonly<Record<string, string | undefined>>,
  hashes: { readonly scripts: ReadonlyArray<string>; readonly styles: ReadonlyArray<string> },
  what: string
) => {
  assert.deepStrictEqual(
    directives(headers["content-security-policy"]),
    {
      "default-src": ["'none'"],
      "script-src": ["'self'", ...hashes.scripts],
      "style-src": ["'self'", ...hashes.styles],
      "img-src": ["'self'", "data:"],
      "connect-src": ["'self'"],
      "object-src": ["'none'"],
      "base-uri": ["'none'"],
      "form-action": ["'self'"],
      "frame-ancestors": ["'none'"]
    },
    what
  )
  assert.strictEqual(headers["x-content-type-options"], "nosniff", what)
  assert.strictEqual(headers["referrer-policy"], "same-origin", what)
  assert.strictEqual(headers["x-frame-options"], "DENY", what)
}

describe("dashboard security headers", () => {
  layer(Built)("a built dashboard", (it) => {
    it.effect(
      "lists the sha256 of each inline script and style of the index.html served, and after a rebuild those of the new one",
      () =>
        Effect.gen(function* () {
          const first = {
            scripts: [hashSource("window.first = 1"), hashSource("\nwindow.second = 2\n")],
            styles: [hashSource("body { margin: 0 }")]
          }
          for (const url of ["/", "/orgs/acme/pull-requests", "/assets/index-1.js", "/assets/missing.js"]) {
            const response = yield* get(url)
            assert.strictEqual(response.status, url === "/assets/missing.js" ? 404 : 200, url)
            assertHeaders(response.headers, first, url)
          }

          const dir = yield* DashboardDir
          fs.writeFileSync(path.join(dir, "index.html"), REBUILT)
          fs.writeFileSync(path.join(dir, "assets", "index-2.js"), "export {}\n")
          const rebuilt = { scripts: [hashSource("window.rebuilt = true")], styles: [] }
          const page = yield* get("/orgs/acme/runs")
          assert.strictEqual(yield* Effect.orDie(page.text), REBUILT)
          assertHeaders(page.headers, rebuilt, "the page after the rebuild")
          assertHeaders((yield* get("/assets/index-2.js")).headers, rebuilt, "an asset after the rebuild")
        })
    )
  })

  layer(dashboardAt("/nonexistent/bosun-dashboard"))("a dashboard not built", (it) => {
    it.effect("answers the build hint with the same headers, its policy listing no hash", () =>
      Effect.gen(function* () {
        const response = yield* get("/")
        assert.strictEqual(response.status, 503)
        assert.include(yield* Effect.orDie(response.text), "The dashboard is not built")
        assertHeaders(response.headers, { scripts: [], styles: [] }, "the build hint")
      })
    )
  })
})

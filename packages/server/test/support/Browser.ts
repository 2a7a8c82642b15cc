/**
 * The dashboard in a real browser: the SPA built by Vite into a temporary directory
 * the test server serves, and Debian's Chromium driven by `playwright-core` with the flags in
 * `CHROMIUM_FLAGS`. Screenshots go to `.artifacts/dashboard/` at the repository root, the folder CI
 * keeps. `.ci/run` installs Chromium when it is missing; outside CI a machine without it skips the
 * browser tests with that reason.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Context, Effect, Layer } from "effect"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { build } from "vite"

export const CHROMIUM = "/usr/bin/chromium"
export const chromiumInstalled = fs.existsSync(CHROMIUM)

const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run"
]

const dashboardRoot = fileURLToPath(new URL("../../../dashboard/", import.meta.url))
export const artifactsDir = fileURLToPath(new URL("../../../../.artifacts/dashboard/", import.meta.url))

/** Builds the dashboard into a temporary directory, removed with the scope; answers the directory. */
export const builtDashboard = Effect.acquireRelease(
  Effect.promise(async () => {
    const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-dashboard-"))
    await build({
      root: dashboardRoot,
      configFile: path.join(dashboardRoot, "vite.config.ts"),
      logLevel: "warn",
      build: { outDir, emptyOutDir: true }
    })
    return outDir
  }),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

export class TestBrowser extends Context.Service<TestBrowser, Browser>()("bosun/test/TestBrowser") {
  static readonly layer = Layer.effect(
    TestBrowser,
    Effect.acquireRelease(
      Effect.promise(() => chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS })),
      (browser) => Effect.promise(() => browser.close())
    )
  )
}

/** A fresh browser context carrying `cookie` (`bosun_session=…`) for `baseUrl`, and a page in it. */
export const pageWithSession = (baseUrl: string, cookie: string | null, viewport = { width: 1280, height: 900 }) =>
  Effect.gen(function* () {
    const browser = yield* TestBrowser
    const context: BrowserContext = yield* Effect.acquireRelease(
      Effect.promise(() => browser.newContext({ viewport })),
      (context) => Effect.promise(() => context.close())
    )
    if (cookie !== null) {
      const [name = "", value = ""] = cookie.split(";")[0]?.split("=") ?? []
      yield* Effect.promise(() => context.addCookies([{ name, value, url: baseUrl }]))
    }
    const page: Page = yield* Effect.promise(() => context.newPage())
    // The page's own errors go to the test's output, where a failing browser test is read.
    page.on("pageerror", (error) => console.error(`[browser] page error: ${error.message}`))
    page.on("console", (message) => {
      if (message.type() === "error") console.error(`[browser] console: ${message.text()}`)
    })
    return page
  })

/** Saves the page as `.artifacts/dashboard/<name>.png`. */
export const screenshot = (page: Page, name: string) =>
  Effect.promise(async () => {
    fs.mkdirSync(artifactsDir, { recursive: true })
    await page.screenshot({ path: path.join(artifactsDir, `${name}.png`), fullPage: true })
  })

/** Runs a Playwright step as an Effect (its rejection is a defect: the test fails with it). */
export const step = <A>(run: () => Promise<A>) => Effect.promise(run)

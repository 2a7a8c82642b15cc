/**
 * The dashboard's security headers, in Chromium against a real Bosun serving the dashboard Vite
 * built for this run: the document, its scripts and stylesheet and the API answers carry them,
 * field by field, and the app renders every main screen (rows present, a run's live log
 * streaming) without Chromium reporting a single Content Security Policy violation — seen both
 * as `securitypolicyviolation` events in the page and as Chromium's console messages.
 */
import { createHash } from "node:crypto"
import { eventually } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import type { Locator, Page, Response } from "playwright-core"
import { MemoriesRepo } from "../../src/features/memories/MemoriesRepo.ts"
import { PullRequestsRepo } from "../../src/features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { WorkItemsRepo } from "../../src/features/workItems/WorkItemsRepo.ts"
import { chromiumInstalled, pageWithSession, step, TestBrowser } from "../support/Browser.ts"
import { countReaches, dashboardServerSettings } from "../support/DashboardServer.ts"
import { signIn } from "../support/Identity.ts"
import { runWithWriter } from "../support/RunEventWriter.ts"
import { baseUrl, layerTestServer } from "../support/TestServer.ts"

const ORG = "csp"

const Server = Layer.unwrap(Effect.map(dashboardServerSettings, (settings) => layerTestServer({ settings }))).pipe(
  Layer.provideMerge(TestBrowser.layer)
)

/** Reports every violation the page sees to the test (`bosunCspViolation` is exposed per page). */
const VIOLATION_PROBE = `
document.addEventListener("securitypolicyviolation", (event) => {
  window.bosunCspViolation(event.effectiveDirective + " blocked " + (event.blockedURI || "inline") + " (" + event.sourceFile + ":" + event.lineNumber + ")")
}, true)`

interface Watched {
  readonly page: Page
  /** Violations reported by the page and Chromium's console messages about the policy. */
  readonly violations: Array<string>
  /** Every response the page received, documents, assets and API answers alike. */
  readonly responses: Array<Response>
}

const watched = (base: string, cookie: string | null) =>
  Effect.gen(function* () {
    const page = yield* pageWithSession(base, cookie)
    const violations: Array<string> = []
    const responses: Array<Response> = []
    yield* step(() => page.exposeFunction("bosunCspViolation", (text: string) => violations.push(`event: ${text}`)))
    yield* step(() => page.addInitScript(VIOLATION_PROBE))
    page.on("console", (message) => {
      if (/Content[ -]Security[ -]Policy/i.test(message.text())) violations.push(`console: ${message.text()}`)
    })
    page.on("response", (response) => responses.push(response))
    return { page, violations, responses } satisfies Watched
  })

/** A policy as directive → its values, in the order sent. */
const directives = (policy: string): Record<string, ReadonlyArray<string>> =>
  Object.fromEntries(
    policy
      .split(";")
      .map((directive) => directive.trim().split(/\s+/))
      .filter(([name]) => name !== undefined && name !== "")
      .map(([name = "", ...values]) => [name, values])
  )

/** The CSP source of each inline `<script>` of a document, hashed as the browser hashes it. */
const inlineScriptHashes = (html: string) =>
  [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi)]
    .filter((match) => !/\bsrc\s*=/i.test(match[1] ?? ""))
    .map(
      (match) =>
        `'sha256-${createHash("sha256")
          .update(match[2] ?? "", "utf8")
          .digest("base64")}'`
    )

/** The headers every dashboard response carries: the policy (its script hashes given), and the rest. */
const assertDashboardHeaders = (headers: Record<string, string>, scriptHashes: ReadonlyArray<string>, what: string) => {
  assert.deepStrictEqual(
    directives(headers["content-security-policy"] ?? ""),
    {
      "default-src": ["'none'"],
      "script-src": ["'self'", ...scriptHashes],
      "style-src": ["'self'"],
      "img-src": ["'self'", "data:"],
      "connect-src": ["'self'"],
      "object-src": ["'none'"],
      "base-uri": ["'none'"],
      "form-action": ["'self'"],
      "frame-ancestors": ["'none'"]
    },
    `${what}: Content-Security-Policy`
  )
  assert.strictEqual(headers["x-content-type-options"], "nosniff", `${what}: X-Content-Type-Options`)
  assert.strictEqual(headers["referrer-policy"], "same-origin", `${what}: Referrer-Policy`)
  assert.strictEqual(headers["x-frame-options"], "DENY", `${what}: X-Frame-Options`)
}

const MARKER = "window.bosunInjected = true"

/**
 * Asserts the page reported no violation but the one a marker causes: an inline script the
 * policy does not list, added now, is refused, and its event and console message arrive after
 * any the page reported before (so none is missed by asserting too early).
 */
const noViolationBut = (marker: string, { page, violations }: Watched, what: string) =>
  Effect.gen(function* () {
    yield* step(() =>
      page.evaluate(
        `document.head.append(Object.assign(document.createElement("script"), { textContent: ${JSON.stringify(marker)} }))`
      )
    )
    yield* Effect.orDie(
      eventually(
        Effect.sync(() => violations.length),
        (count) => count >= 2,
        Duration.seconds(10)
      )
    )
    assert.isFalse(yield* step(() => page.evaluate(`"bosunInjected" in window`)), "the marker did not run")
    const markerHash = `sha256-${createHash("sha256").update(marker).digest("base64")}`
    const events = violations.filter((text) => text.startsWith("event: "))
    const messages = violations.filter((text) => text.startsWith("console: "))
    assert.deepStrictEqual(
      { events: events.length, messages: messages.length },
      { events: 1, messages: 1 },
      `${what}: only the marker's violation, but Chromium reported ${JSON.stringify(violations, null, 2)}`
    )
    assert.match(events[0] ?? "", /^event: script-src-elem blocked inline /, what)
    assert.include(messages[0] ?? "", markerHash, what)
  })

/** Opens `url` as a fresh load; answers the document's response. */
const open = (page: Page, url: string) =>
  Effect.flatMap(
    step(() => page.goto(url)),
    (response) =>
      response === null ? Effect.die(new Error(`no document response for ${url}`)) : Effect.succeed(response)
  )

const rows = (page: Page, testId: string): Locator => page.locator(`[data-testid=${testId}] tbody tr`)

describe.skipIf(!chromiumInstalled && process.env.CI !== "true")(
  "dashboard security headers (needs /usr/bin/chromium)",
  () => {
    layer(Server, { excludeTestServices: true, timeout: Duration.minutes(3) })(
      "the dashboard's security headers in Chromium",
      (it) => {
        it.effect(
          "every main screen renders under the policy with no violation reported, and the document, its assets and the API answers carry the headers field by field",
          () =>
            Effect.gen(function* () {
              const repositories = yield* RepositoriesRepo
              const pullRequests = yield* PullRequestsRepo
              const memories = yield* MemoriesRepo
              const items = yield* WorkItemsRepo
              const admin = yield* signIn("csp-admin", [[ORG, "ADMIN"]])
              const repository = yield* repositories.upsert(ORG, {
                githubRepositoryId: null,
                owner: ORG,
                name: "api",
                defaultBranch: "main"
              })
              for (const number of [1, 2, 3]) {
                yield* pullRequests.upsert(ORG, {
                  repositoryId: repository.id,
                  number,
                  title: `Harden ${number}`,
                  authorLogin: "ada"
                })
              }
              const memory = yield* memories.propose(ORG, { repositoryId: null, convention: "Headers are set once" })
              yield* memories.decide(ORG, memory.id, true, admin.userId)
              yield* items.create(ORG, {
                kind: "TASK",
                source: "API",
                title: "Send security headers",
                state: "WAITING",
                phase: "PLANNING",
                waitingReason: "APPROVAL"
              })
              const { runId, emit } = yield* runWithWriter(ORG, (n) => ({ text: `checked ${n}` }))
              yield* emit(3)

              const base = yield* baseUrl
              const { page, violations, responses } = yield* watched(base, admin.cookie)

              const indexHtml = yield* open(page, `${base}/`)
              yield* step(() => page.waitForURL(`${base}/orgs/${ORG}/pull-requests`))
              yield* countReaches(rows(page, "pull-requests"), (n) => n === 3)
              const html = yield* step(() => indexHtml.text())
              const hashes = inlineScriptHashes(html)
              assert.strictEqual(hashes.length, 1, "index.html inlines exactly one script, the early requests")
              assertDashboardHeaders(yield* step(() => indexHtml.allHeaders()), hashes, "index.html")

              const asset = (suffix: string) => {
                const found = responses.find((response) => {
                  const url = new URL(response.url())
                  return url.pathname.startsWith("/assets/") && url.pathname.endsWith(suffix)
                })
                return found === undefined ? Effect.die(new Error(`no ${suffix} asset loaded`)) : Effect.succeed(found)
              }
              for (const suffix of [".js", ".css"]) {
                const response = yield* asset(suffix)
                assert.strictEqual(response.status(), 200, response.url())
                assertDashboardHeaders(yield* step(() => response.allHeaders()), hashes, response.url())
              }
              const me = responses.find((response) => new URL(response.url()).pathname === "/api/v1/me")
              assert.isDefined(me, "the early script asked for /api/v1/me")
              const apiHeaders = yield* step(() => (me as Response).allHeaders())
              assert.strictEqual(apiHeaders["x-content-type-options"], "nosniff", "API: X-Content-Type-Options")
              assert.strictEqual(apiHeaders["x-frame-options"], "DENY", "API: X-Frame-Options")

              // A page path the server answers with the app (the SPA fallback), loaded cold.
              const fallback = yield* open(page, `${base}/orgs/${ORG}/repositories`)
              assertDashboardHeaders(yield* step(() => fallback.allHeaders()), hashes, "the SPA fallback")
              yield* countReaches(rows(page, "repositories"), (n) => n === 1)

              yield* open(page, `${base}/orgs/${ORG}/repositories/${repository.id}`)
              yield* countReaches(page.locator("[data-testid=source-agent]"), (n) => n === 1)
              yield* open(page, `${base}/orgs/${ORG}/work-items`)
              yield* countReaches(rows(page, "work-items"), (n) => n === 1)
              yield* open(page, `${base}/orgs/${ORG}/memories`)
              yield* step(() => page.getByTestId(`memory-${memory.id}`).getByText("Headers are set once").waitFor())
              yield* open(page, `${base}/orgs/${ORG}/runs`)
              yield* countReaches(rows(page, "runs"), (n) => n === 1)
              // A run's page streams its events over EventSource.
              yield* open(page, `${base}/orgs/${ORG}/runs/${runId}`)
              yield* countReaches(page.locator("[data-testid=event-log] .line"), (n) => n === 3)
              yield* emit(2)
              yield* countReaches(page.locator("[data-testid=event-log] .line"), (n) => n === 5)
              yield* open(page, `${base}/orgs/${ORG}/deep-scans`)
              yield* step(() => page.getByRole("form", { name: "Launch a deep scan" }).waitFor())
              yield* open(page, `${base}/orgs/${ORG}/agent`)
              yield* step(() => page.getByRole("heading", { name: "Credentials" }).waitFor())

              // Without a session and with no GitHub App yet: the first-run sign-in page.
              const signedOut = yield* watched(base, null)
              yield* open(signedOut.page, `${base}/`)
              yield* step(() =>
                signedOut.page.getByRole("heading", { name: "First run: connect a GitHub App" }).waitFor()
              )

              yield* noViolationBut(MARKER, { page, violations, responses }, "the signed-in screens")
              yield* noViolationBut(MARKER, signedOut, "the sign-in page")
            })
        )
      }
    )
  }
)

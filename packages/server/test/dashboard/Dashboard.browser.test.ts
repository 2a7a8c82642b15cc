/**
 * The dashboard in a real browser (docs/interface.md: What the service does 2): Debian's Chromium
 * driven by playwright-core against a real Bosun (the test server, its database seeded through
 * the repositories) serving the dashboard Vite built for this run. Signing in is the session
 * cookie the operator CLI mints. Each test leaves a screenshot in `.artifacts/dashboard/`.
 *
 * The budget (README, Dashboard): the first screen's JavaScript under 300 kB gzipped (asserted),
 * and the pull-request list of an organization with 1,000 pull requests interactive within 1 s
 * of navigation, the median of five cold browser contexts (measured and written to
 * `.bench/dashboard.json`; see the README for how reliably it is met).
 */
import { generateKeyPairSync } from "node:crypto"
import * as fs from "node:fs"
import { gzipSync } from "node:zlib"
import { FakeGithub, TestDatabase } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Redacted } from "effect"
import type { Page } from "playwright-core"
import { MemoriesRepo } from "../../src/features/memories/MemoriesRepo.ts"
import { PullRequestsRepo } from "../../src/features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { WorkItemsRepo } from "../../src/features/workItems/WorkItemsRepo.ts"
import { GithubAppsRepo } from "../../src/outbound/github/GithubAppsRepo.ts"
import { chromiumInstalled, pageWithSession, screenshot, step, TestBrowser } from "../support/Browser.ts"
import { countReaches, dashboardServerSettings, organizationApi } from "../support/DashboardServer.ts"
import { signIn } from "../support/Identity.ts"
import { runCli } from "../support/Process.ts"
import { runWithWriter } from "../support/RunEventWriter.ts"
import { baseUrl, generateMasterKey, layerTestServer, request } from "../support/TestServer.ts"

const MASTER_KEY = generateMasterKey()
const ORG = "acme"
const OTHER_ORG = "globex"
const HEAD = "c".repeat(40)
const APP_ID = 5151

const Server = Layer.unwrap(
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    return layerTestServer({
      settings: {
        ...(yield* dashboardServerSettings),
        githubApiUrl: new URL(fake.apiUrl),
        // Streams end every 2 s, so the run page reconnects during its test.
        sseStreamDuration: Duration.seconds(2)
      },
      secrets: { masterKey: { key: Redacted.make(MASTER_KEY), version: 1, previous: new Map() } }
    })
  })
).pipe(Layer.provideMerge(FakeGithub.layer), Layer.provideMerge(TestBrowser.layer))

/** `bosun sessions create`, as an operator runs it: answers the cookie it prints last. */
const cliSession = (org: string, login: string, role: "MEMBER" | "ADMIN") =>
  Effect.gen(function* () {
    const database = yield* TestDatabase
    const result = yield* runCli(["sessions", "create", "--org", org, "--login", login, "--role", role], {
      DATABASE_URL: database.url,
      BOSUN_MASTER_KEY: MASTER_KEY,
      BOSUN_DATA_DIR: "/nonexistent/never-created"
    })
    assert.strictEqual(result.code, 0, result.stderr)
    const cookie = result.stdout.trimEnd().split("\n").at(-1) ?? ""
    assert.match(cookie, /^bosun_session=[A-Za-z0-9_-]{43}$/)
    return cookie
  })

const seedPullRequests = (org: string, repositoryName: string, count: number, title: (n: number) => string) =>
  Effect.gen(function* () {
    const repositories = yield* RepositoriesRepo
    const pullRequests = yield* PullRequestsRepo
    const repository = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: org,
      name: repositoryName,
      defaultBranch: "main"
    })
    for (let n = 1; n <= count; n++) {
      yield* pullRequests.upsert(org, {
        repositoryId: repository.id,
        number: n,
        title: title(n),
        authorLogin: `dev${n % 4}`
      })
    }
    return repository
  })

/**
 * Time to interactive of the pull-request list, taken in the page rather than by the test's
 * polling: when the 50th row is in the DOM (React attaches the rows' and pager's handlers in
 * that same commit), then one frame painted and the main thread free again for input.
 */
const LIST_INTERACTIVE_PROBE = `
new MutationObserver((_, observer) => {
  if (document.querySelectorAll('[data-testid="pull-requests"] tbody tr').length < 50) return
  observer.disconnect()
  requestAnimationFrame(() => setTimeout(() => console.info("bosun:list-interactive", performance.now())))
}).observe(document, { childList: true, subtree: true })`

const PR_ROWS = "[data-testid=pull-requests] tbody tr"

/** Cold loads measured for the budget; their median is the figure (as Lighthouse advises). */
const COLD_LOADS = 5

/**
 * One cold load of `/` (a fresh browser context: no cache, no cookies but the session): ms
 * from navigation to the list being interactive, and to DOMContentLoaded. The test only waits
 * on the page's own probe, so no polling of its competes with the app for the main thread.
 */
const coldListLoad = (base: string, cookie: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const page = yield* pageWithSession(base, cookie)
      yield* step(() => page.addInitScript(LIST_INTERACTIVE_PROBE))
      const reported = page.waitForEvent("console", {
        predicate: (message) => message.text().startsWith("bosun:list-interactive")
      })
      yield* step(() => page.goto(`${base}/`, { waitUntil: "commit" }))
      const interactive = yield* step(() =>
        reported.then((message) => message.args()[1]?.jsonValue() as Promise<number>)
      )
      const domContentLoaded = yield* step(
        () =>
          page.evaluate(
            "performance.getEntriesByType('navigation')[0]?.domContentLoadedEventEnd ?? 0"
          ) as Promise<number>
      )
      return { interactive, domContentLoaded }
    })
  )

/**
 * The first screen's JavaScript, gzipped: the scripts `index.html` loads (its entry module and
 * the chunks it preloads) as the server serves them. The chunks loaded later on demand (other
 * screens, the HTTP client the shell preloads once the list is up) are not counted.
 */
const firstScreenJs = Effect.gen(function* () {
  const html = (yield* request("/", { headers: { accept: "text/html" } })).text
  const paths = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.js)"/g)].flatMap((match) => match[1] ?? [])
  assert.isAbove(paths.length, 0, "index.html loads the app's scripts")
  const sizes = yield* Effect.forEach(paths, (path) =>
    Effect.map(request(path), (response) => gzipSync(Buffer.from(response.text)).length)
  )
  return sizes.reduce((sum, size) => sum + size, 0)
})

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0

const rowsOf = (page: Page, testId: string) =>
  step(() => page.locator(`[data-testid=${testId}] tbody tr`).allInnerTexts())

describe.skipIf(!chromiumInstalled && process.env.CI !== "true")("dashboard (needs /usr/bin/chromium)", () => {
  layer(Server, { excludeTestServices: true, timeout: Duration.minutes(3) })("the dashboard in Chromium", (it) => {
    it.effect(
      "serves the app for page paths, caches hashed assets for good, and leaves /api and missing files 404",
      () =>
        Effect.gen(function* () {
          const page = yield* request("/orgs/acme/runs/some-run", { headers: { accept: "text/html" } })
          assert.strictEqual(page.status, 200)
          assert.strictEqual(page.headers.get("cache-control"), "no-cache")
          assert.include(page.text, '<div id="root"></div>')
          const script = /src="(\/assets\/[^"]+\.js)"/.exec(page.text)?.[1] ?? ""
          const asset = yield* request(script)
          assert.strictEqual(asset.status, 200)
          assert.strictEqual(asset.headers.get("cache-control"), "public, max-age=31536000, immutable")
          assert.match(asset.headers.get("content-type") ?? "", /^text\/javascript/)
          for (const path of ["/api/v1/nope", "/api", "/assets/missing.js", "/favicon.png"]) {
            const missing = yield* request(path, { headers: { accept: "text/html" } })
            assert.strictEqual(missing.status, 404, path)
            assert.strictEqual((missing.json as { error: { code: string } }).error.code, "route_not_found", path)
          }
        })
    )

    it.effect("without a session and with no GitHub App yet, the first-run page says what the operator must do", () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const page = yield* pageWithSession(base, null)
        yield* step(() => page.goto(`${base}/`))
        yield* step(() => page.getByRole("heading", { name: "First run: connect a GitHub App" }).waitFor())
        const text = yield* step(() => page.locator("main").innerText())
        assert.include(text, "No GitHub App is configured yet")
        assert.include(text, `${base}/api/v1/auth/github/callback`)
        assert.include(text, "sessions create")
        yield* screenshot(page, "first-run")
      })
    )

    it.effect(
      "signs in with the CLI-minted cookie and pages through 1,000 pull requests; the first screen's JS meets its budget and its time to interactive is recorded",
      () =>
        Effect.gen(function* () {
          const cookie = yield* cliSession(ORG, "ada", "ADMIN")
          yield* seedPullRequests(ORG, "api", 1000, (n) => `Change ${n}`)
          const base = yield* baseUrl
          const page = yield* pageWithSession(base, cookie)

          const asked: Array<string> = []
          page.on("request", (request) => {
            const url = new URL(request.url())
            if (url.pathname.startsWith("/api/")) asked.push(`${request.method()} ${url.pathname}${url.search}`)
          })

          yield* step(() => page.goto(`${base}/`))
          yield* step(() => page.waitForURL(`${base}/orgs/${ORG}/pull-requests`))
          yield* step(() => page.locator(PR_ROWS).nth(49).waitFor())
          const first = yield* rowsOf(page, "pull-requests")
          // index.html's early script asks for both while the bundle loads; the app takes those
          // answers rather than asking again.
          assert.deepStrictEqual(asked, [
            "GET /api/v1/me",
            `GET /api/v1/organizations/${ORG}/pull-requests?page_size=50`
          ])
          const loads = yield* Effect.forEach(Array.from({ length: COLD_LOADS }), () => coldListLoad(base, cookie))
          const interactiveMs = median(loads.map((load) => load.interactive))
          const domContentLoadedMs = median(loads.map((load) => load.domContentLoaded))
          const clicked = yield* step(() => page.evaluate(() => performance.now()))
          yield* step(() => page.getByRole("button", { name: "Older →" }).click())
          yield* step(() => page.locator(PR_ROWS).first().filter({ hasText: "Change 950" }).waitFor())
          const nextPageMs = (yield* step(() => page.evaluate(() => performance.now()))) - clicked
          const gzippedJs = yield* firstScreenJs

          const second = yield* rowsOf(page, "pull-requests")
          assert.strictEqual(first.length, 50)
          assert.strictEqual(second.length, 50)
          assert.include(first[0] ?? "", "Change 1000")
          assert.include(second[0] ?? "", "Change 950")
          assert.deepStrictEqual(
            first.filter((row) => second.includes(row)),
            [],
            "a page repeats no row of the one before"
          )
          assert.include(page.url(), "cursor=")
          yield* step(() => page.getByRole("button", { name: "← Newer" }).click())
          yield* step(() => page.getByText("Change 1000").first().waitFor())
          assert.deepStrictEqual(yield* rowsOf(page, "pull-requests"), first)

          yield* step(() => page.getByLabel("Search").fill("Change 999"))
          yield* step(() => page.waitForURL(/search=Change\+999/))
          yield* countReaches(page.locator(PR_ROWS), (n) => n === 1)
          assert.include((yield* rowsOf(page, "pull-requests"))[0] ?? "", "Change 999")

          fs.mkdirSync(".bench", { recursive: true })
          fs.writeFileSync(
            ".bench/dashboard.json",
            JSON.stringify(
              {
                pull_requests: 1000,
                cold_loads: COLD_LOADS,
                interactive_ms_median: Math.round(interactiveMs),
                interactive_ms_each: loads.map((load) => Math.round(load.interactive)),
                dom_content_loaded_ms_median: Math.round(domContentLoadedMs),
                next_page_ms: Math.round(nextPageMs),
                first_screen_js_gzip_bytes: gzippedJs
              },
              null,
              2
            )
          )
          console.log(
            `dashboard budget: list interactive ${Math.round(interactiveMs)} ms median of ${COLD_LOADS} cold loads (${loads.map((load) => Math.round(load.interactive)).join(", ")}; DOMContentLoaded ${Math.round(domContentLoadedMs)} ms), next page ${Math.round(nextPageMs)} ms, first-screen JS ${gzippedJs} B gzipped`
          )
          assert.isBelow(gzippedJs, 300 * 1024, "first screen's JS under 300 kB gzipped")
          // The 1 s target is met by the median on a quiet machine but not in this VM's slow spells
          // (README, Dashboard budget), so the figure is recorded and bounded here against
          // regressions, such as a development build of React, which measured 1.4–1.9 s.
          assert.isBelow(interactiveMs, 1500, "the list of 1,000 pull requests is interactive within 1.5 s (median)")
          yield* screenshot(page, "pull-requests")

          const phone = yield* pageWithSession(base, cookie, { width: 390, height: 844 })
          yield* step(() => phone.goto(`${base}/orgs/${ORG}/pull-requests`))
          yield* step(() => phone.getByText("Change 1000").first().waitFor())
          yield* screenshot(phone, "pull-requests-phone")
        })
    )

    it.effect("a run's page shows live events as they arrive, across the server's reconnects, each line once", () =>
      Effect.gen(function* () {
        const { member, runId, emit } = yield* runWithWriter(ORG, (n) => ({ text: `step ${n} done` }))
        const base = yield* baseUrl
        const page = yield* pageWithSession(base, member.cookie)
        yield* emit(5)
        yield* step(() => page.goto(`${base}/orgs/${ORG}/runs/${runId}`))
        const lines = () =>
          step(() =>
            page
              .locator("[data-testid=event-log] .line")
              .evaluateAll((rows) => rows.map((row) => Number(row.getAttribute("data-seq"))))
          )
        const waitForLines = (n: number) =>
          countReaches(page.locator("[data-testid=event-log] .line"), (count) => count >= n)
        yield* waitForLines(5)
        yield* emit(10)
        yield* waitForLines(15)
        // Past the 2 s stream duration: the page reopened after `event: reconnect`.
        yield* Effect.sleep(Duration.millis(2500))
        yield* emit(10)
        yield* waitForLines(25)
        yield* Effect.sleep(Duration.millis(2500))
        yield* emit(5)
        yield* waitForLines(30)
        yield* Effect.sleep(Duration.millis(500))
        assert.deepStrictEqual(
          yield* lines(),
          Array.from({ length: 30 }, (_, i) => i + 1),
          "every event once, in order"
        )
        const log = yield* step(() => page.locator("[data-testid=event-log]").innerText())
        assert.include(log, "step 30 done")
        assert.match(yield* step(() => page.getByTestId("stream-state").innerText()), /30 events/)
        yield* screenshot(page, "run-live-events")
      })
    )

    it.effect("changing a repository's review policy in its form is persisted, as the API then shows", () =>
      Effect.gen(function* () {
        const repositories = yield* RepositoriesRepo
        const admin = yield* signIn("policy-admin", [[ORG, "ADMIN"]])
        const repository = yield* repositories.upsert(ORG, {
          githubRepositoryId: null,
          owner: ORG,
          name: "web",
          defaultBranch: "main"
        })
        const base = yield* baseUrl
        const page = yield* pageWithSession(base, admin.cookie)
        yield* step(() => page.goto(`${base}/orgs/${ORG}/repositories/${repository.id}`))
        yield* step(() => page.getByLabel("Strictness").selectOption("HIGH"))
        yield* step(() => page.getByLabel("Comment limit").fill("3"))
        yield* step(() => page.getByRole("button", { name: "Save configuration" }).click())
        yield* step(() => page.getByText("Saved").first().waitFor())
        const saved = (yield* organizationApi(admin.cookie, `${ORG}/repositories/${repository.id}/configuration`)) as {
          review_policy: { strictness: string; comment_limit: number }
          sources: { review_policy: string }
        }
        assert.strictEqual(saved.review_policy.strictness, "HIGH")
        assert.strictEqual(saved.review_policy.comment_limit, 3)
        assert.strictEqual(saved.sources.review_policy, "REPOSITORY")
        yield* screenshot(page, "repository-configuration")
      })
    )

    it.effect("enabling an approved memory from its card turns it on in the API", () =>
      Effect.gen(function* () {
        const memories = yield* MemoriesRepo
        const admin = yield* signIn("memory-admin", [[ORG, "ADMIN"]])
        const memory = yield* memories.propose(ORG, { repositoryId: null, convention: "Queries go through db.query" })
        yield* memories.decide(ORG, memory.id, true, admin.userId)
        const base = yield* baseUrl
        const page = yield* pageWithSession(base, admin.cookie)
        yield* step(() => page.goto(`${base}/orgs/${ORG}/memories`))
        const card = page.getByTestId(`memory-${memory.id}`)
        yield* step(() => card.getByText("Queries go through db.query").waitFor())
        yield* step(() => card.getByRole("button", { name: "Enable" }).click())
        yield* step(() => card.getByRole("button", { name: "Disable" }).waitFor())
        const after = (yield* organizationApi(admin.cookie, `${ORG}/memories/${memory.id}`)) as { enabled: boolean }
        assert.isTrue(after.enabled)
        yield* screenshot(page, "memories")
      })
    )

    it.effect("approving a work item that waits for approval moves it on, as the API then shows", () =>
      Effect.gen(function* () {
        const items = yield* WorkItemsRepo
        const member = yield* signIn("item-member", [[ORG, "MEMBER"]])
        const item = yield* items.create(ORG, {
          kind: "TASK",
          source: "API",
          title: "Add retries to the uploader",
          state: "WAITING",
          phase: "PLANNING",
          waitingReason: "APPROVAL"
        })
        const base = yield* baseUrl
        const page = yield* pageWithSession(base, member.cookie)
        yield* step(() => page.goto(`${base}/orgs/${ORG}/work-items/${item.id}`))
        yield* step(() => page.getByRole("button", { name: "Approve" }).click())
        yield* step(() => page.getByText("IN_PROGRESS").first().waitFor())
        const after = (yield* organizationApi(member.cookie, `${ORG}/work-items/${item.id}`)) as {
          state: string
          phase: string
        }
        assert.deepStrictEqual(
          { state: after.state, phase: after.phase },
          { state: "IN_PROGRESS", phase: "IMPLEMENTING" }
        )
        yield* screenshot(page, "work-item-approved")
      })
    )

    it.effect("launching a deep scan from the dashboard pins it to the default branch's head", () =>
      Effect.gen(function* () {
        const fake = yield* FakeGithub
        const apps = yield* GithubAppsRepo
        const repositories = yield* RepositoriesRepo
        const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
        fake.addApp({
          clientId: "Iv1.dashboard",
          clientSecret: "dashboard-client-secret",
          appId: APP_ID,
          publicKey: publicKey.export({ type: "spki", format: "pem" }).toString()
        })
        fake.addInstallation({
          id: 8080,
          appId: APP_ID,
          account: { id: 7001, login: ORG, type: "Organization" },
          repositories: [`${ORG}/scanned`]
        })
        fake.setBranch(`${ORG}/scanned`, "main", HEAD)
        yield* apps.upsert(ORG, {
          githubAppId: APP_ID,
          slug: "bosun-dashboard",
          clientId: "Iv1.dashboard",
          clientSecret: Redacted.make("dashboard-client-secret"),
          privateKey: Redacted.make(privateKey.export({ type: "pkcs8", format: "pem" }).toString()),
          webhookSecret: Redacted.make("dashboard-webhook-secret")
        })
        const repository = yield* repositories.upsert(ORG, {
          githubRepositoryId: 9090,
          owner: ORG,
          name: "scanned",
          defaultBranch: "main"
        })
        const member = yield* signIn("scan-member", [[ORG, "MEMBER"]])
        const base = yield* baseUrl
        const page = yield* pageWithSession(base, member.cookie)
        yield* step(() => page.goto(`${base}/orgs/${ORG}/deep-scans`))
        yield* step(() =>
          page.getByRole("form", { name: "Launch a deep scan" }).getByRole("combobox").selectOption(repository.id)
        )
        yield* step(() => page.getByRole("button", { name: "Launch deep scan" }).click())
        yield* step(() => page.waitForURL(new RegExp(`/orgs/${ORG}/deep-scans/[^/]+$`)))
        const id = page.url().split("/").at(-1) ?? ""
        yield* step(() => page.getByText(HEAD.slice(0, 12)).first().waitFor())
        const scan = (yield* organizationApi(member.cookie, `${ORG}/deep-scans/${id}`)) as {
          head_sha: string
          status: string
        }
        assert.deepStrictEqual({ head_sha: scan.head_sha, status: scan.status }, { head_sha: HEAD, status: "QUEUED" })
        yield* screenshot(page, "deep-scan-launched")
      })
    )

    it.effect("a member of one organization never sees another organization's data", () =>
      Effect.gen(function* () {
        const outsider = yield* signIn("acme-only", [[ORG, "MEMBER"]])
        const insider = yield* signIn("globex-only", [[OTHER_ORG, "MEMBER"]])
        yield* seedPullRequests(OTHER_ORG, "vault", 3, (n) => `Globex secret ${n}`)
        const base = yield* baseUrl

        const page = yield* pageWithSession(base, outsider.cookie)
        const asked: Array<string> = []
        page.on("request", (sent) => {
          if (sent.url().includes(`/organizations/${OTHER_ORG}`)) asked.push(sent.url())
        })
        yield* step(() => page.goto(`${base}/orgs/${OTHER_ORG}/pull-requests`))
        yield* step(() => page.getByText("You are not a member of this organization").waitFor())
        const options = yield* step(() => page.getByLabel("Organization").locator("option").allInnerTexts())
        assert.isFalse(
          options.some((option) => option.includes(OTHER_ORG)),
          options.join(", ")
        )
        for (const path of ["runs", "memories", "work-items", "deep-scans", "repositories"]) {
          yield* step(() => page.goto(`${base}/orgs/${OTHER_ORG}/${path}`))
          yield* step(() => page.getByText("You are not a member of this organization").waitFor())
        }
        const seen = yield* step(() => page.locator("body").innerText())
        assert.notInclude(seen, "Globex secret")
        assert.deepStrictEqual(asked, [], "the dashboard never asks the API about an organization the user is not in")
        yield* screenshot(page, "isolation-outsider")

        const own = yield* pageWithSession(base, insider.cookie)
        yield* step(() => own.goto(`${base}/`))
        yield* step(() => own.getByText("Globex secret 3").waitFor())
        const rows = yield* rowsOf(own, "pull-requests")
        assert.strictEqual(rows.length, 3)
        assert.isFalse(
          rows.some((row) => row.includes("Change ")),
          "no pull request of acme"
        )
        yield* screenshot(own, "isolation-insider")
      })
    )
  })
})

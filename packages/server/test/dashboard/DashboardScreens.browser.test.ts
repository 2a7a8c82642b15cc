/**
 * The dashboard's remaining screens in a real browser (docs/interface.md: What the service does 2),
 * beside `Dashboard.browser.test.ts`, which covers the first screen, a run's live log, the
 * configuration form, memories, work items and launching a deep scan. Here each test drives one
 * screen in Debian's Chromium against a real Bosun (the test server, its database seeded through
 * the repositories) and then reads what it did back through the API, field by field: an admin
 * setting an agent API key (the page shows its fingerprint, never the key), deciding context
 * suggestions, switching a Slack channel's passive listening, triaging a finished deep scan's
 * findings, and paging the pull-request list with the keyboard alone. Each test leaves a
 * screenshot in `.artifacts/dashboard/`.
 */
import type {
  AgentConnection,
  ChatChannel,
  ContextSuggestion,
  DeepScan,
  DeepScanFinding,
  RepositoryConfiguration
} from "@bosun/domain"
import { eventually, FakeSlack } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { Locator, Page } from "playwright-core"
import { ContextSuggestionsRepo } from "../../src/features/contextSuggestions/ContextSuggestionsRepo.ts"
import { DeepScanFindingsRepo, type NewFinding } from "../../src/features/deepScans/DeepScanFindingsRepo.ts"
import { DeepScansRepo } from "../../src/features/deepScans/DeepScansRepo.ts"
import { fingerprintOf } from "../../src/features/deepScans/FindingVerification.ts"
import { PullRequestsRepo } from "../../src/features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { ChatChannelsRepo } from "../../src/features/workItems/ChatChannelsRepo.ts"
import { chromiumInstalled, pageWithSession, screenshot, step, TestBrowser } from "../support/Browser.ts"
import { countReaches, dashboardServerSettings, organizationApi } from "../support/DashboardServer.ts"
import { signIn } from "../support/Identity.ts"
import { baseUrl, layerTestServer } from "../support/TestServer.ts"

const HEAD = "d".repeat(40)
const SLACK_TEAM = "T0SCREENS"
const SLACK_BOT = "U0BOSUN"
const SLACK_TOKEN = "xoxb-dashboard-screens-4f1a"
const SLACK_SECRET = "dashboard-screens-signing-secret-9c2e"

// No lane runs anything (dashboardServerSettings): the catalog discovery an API key queues and the
// deep scan's run stay where the tests put them.
const Server = Layer.unwrap(
  Effect.gen(function* () {
    const slack = yield* FakeSlack
    return layerTestServer({
      settings: { ...(yield* dashboardServerSettings), slackApiUrl: new URL(slack.apiUrl) }
    })
  })
).pipe(Layer.provideMerge(FakeSlack.layer), Layer.provideMerge(TestBrowser.layer))

const upsertRepository = (org: string, name: string) =>
  Effect.flatMap(RepositoriesRepo, (repositories) =>
    repositories.upsert(org, { githubRepositoryId: null, owner: org, name, defaultBranch: "main" })
  )

const bodyText = (page: Page) => step(async () => (await page.locator("body").textContent()) ?? "")

/** Waits (up to 20 s) until the checkbox is enabled and `checked` is its state. */
const settles = (checkbox: Locator, checked: boolean) =>
  Effect.orDie(
    eventually(
      step(async () => (await checkbox.isEnabled()) && (await checkbox.isChecked()) === checked),
      (done) => done,
      Duration.seconds(20)
    )
  )

/** One finding as a deep scan's publish records it. */
const finding = (
  repositoryId: string,
  symbol: string,
  severity: NewFinding["severity"],
  title: string
): NewFinding => ({
  fingerprint: fingerprintOf(repositoryId, { cwe: "CWE-89", category: "sql_injection", path: "src/db.ts", symbol }),
  title,
  severity,
  category: "sql_injection",
  cwe: "CWE-89",
  path: "src/db.ts",
  startLine: 12,
  endLine: 14,
  symbol,
  evidence: [{ path: "src/db.ts", line: 12, note: "the query string is built from the request" }],
  proposedFix: "Pass the value as a query parameter.",
  verification: "NOT_REQUIRED",
  verificationReason: null,
  reproduction: null
})

const PR_ROWS = "[data-testid=pull-requests] tbody tr"

describe.skipIf(!chromiumInstalled && process.env.CI !== "true")("dashboard screens (needs /usr/bin/chromium)", () => {
  layer(Server, { excludeTestServices: true, timeout: Duration.minutes(3) })(
    "the dashboard's screens in Chromium",
    (it) => {
      it.effect(
        "an admin's API key set on the agent connection screen shows as its fingerprint, never as the key, and the API reports it configured",
        () =>
          Effect.gen(function* () {
            const org = "screens-agent"
            const key = "sk-dashboard-plaintext-7e3b91"
            const admin = yield* signIn("agent-admin", [[org, "ADMIN"]])
            const base = yield* baseUrl
            const page = yield* pageWithSession(base, admin.cookie)
            const answers: Array<Promise<string>> = []
            page.on("response", (response) => {
              if (new URL(response.url()).pathname.startsWith("/api/")) answers.push(response.text())
            })

            yield* step(() => page.goto(`${base}/orgs/${org}/agent`))
            yield* step(() => page.getByText("Not ready: runs cannot start").waitFor())
            yield* step(() => page.getByLabel("Provider id").fill("openai"))
            yield* step(() => page.getByLabel("API key", { exact: true }).fill(key))
            yield* step(() => page.getByRole("button", { name: "Save API key" }).click())
            const notice = page.getByRole("status").filter({ hasText: "Saved. Credential fingerprint now" })
            yield* step(() => notice.waitFor())
            const fingerprint =
              /fp:[0-9a-f]{16}/.exec(yield* step(async () => (await notice.textContent()) ?? ""))?.[0] ?? ""
            assert.match(fingerprint, /^fp:[0-9a-f]{16}$/)
            // The credentials card, reloaded after the write, shows the same fingerprint.
            const credentials = page
              .locator(".card")
              .filter({ has: page.getByRole("heading", { name: "Credentials" }) })
            yield* step(() => credentials.getByText(fingerprint).waitFor())
            const card = yield* step(async () => (await credentials.textContent()) ?? "")
            assert.include(card, "openai")
            assert.match(card, /Configured\s*Yes/)
            assert.match(card, /Mode\s*CREDENTIALS/)

            assert.strictEqual(
              yield* step(() => page.getByLabel("API key", { exact: true }).inputValue()),
              "",
              "the typed key is cleared"
            )
            assert.notInclude(yield* bodyText(page), key)
            assert.notInclude(yield* step(() => page.content()), key)
            const bodies = yield* step(() => Promise.all(answers))
            assert.isAbove(bodies.length, 0)
            assert.isFalse(
              bodies.some((body) => body.includes(key)),
              "no API answer the page received carries the key"
            )

            const connection = yield* organizationApi<AgentConnection>(admin.cookie, `${org}/opencode-connection`)
            assert.deepStrictEqual(connection.auth, {
              active_version: 1,
              configured: true,
              fingerprint,
              inherited: false,
              mode: "CREDENTIALS",
              provider_ids: ["openai"],
              source_scope: "ORGANIZATION"
            })
            assert.strictEqual(connection.catalog.status, "QUEUED")
            assert.strictEqual(connection.catalog.credential_fingerprint, fingerprint)
            assert.isFalse(connection.ready)
            assert.strictEqual(connection.organization_id, org)
            assert.isNull(connection.repository_id)
            yield* screenshot(page, "agent-connection")
          })
      )

      it.effect(
        "approving one context suggestion and rejecting another on the repository screen records both decisions, as the API then shows",
        () =>
          Effect.gen(function* () {
            const org = "screens-context"
            const suggestions = yield* ContextSuggestionsRepo
            const admin = yield* signIn("context-admin", [[org, "ADMIN"]])
            const primary = yield* upsertRepository(org, "app")
            const lib = yield* upsertRepository(org, "lib")
            const sdk = yield* upsertRepository(org, "sdk")
            const propose = (secondary: typeof lib, reason: string) =>
              suggestions
                .propose(org, {
                  primaryRepositoryId: primary.id,
                  secondaryRepositoryId: secondary.id,
                  secondaryOwner: org,
                  secondaryName: secondary.name,
                  source: "IMPORT_ANALYSIS",
                  reason
                })
                .pipe(Effect.map(Option.getOrThrow))
            const toApprove = yield* propose(lib, "app imports lib")
            const toReject = yield* propose(sdk, "app mentions sdk in a comment")

            const base = yield* baseUrl
            const page = yield* pageWithSession(base, admin.cookie)
            yield* step(() => page.goto(`${base}/orgs/${org}/repositories/${primary.id}`))
            const table = page.getByTestId("context-suggestions")
            const row = (name: string) => table.locator("tbody tr").filter({ hasText: `${org}/${name}` })
            yield* countReaches(table.locator("tbody tr"), (n) => n === 2)
            yield* step(() => row("lib").getByRole("button", { name: "Approve" }).click())
            yield* step(() => row("lib").getByText("APPROVED", { exact: true }).waitFor())
            yield* step(() => row("sdk").getByRole("button", { name: "Reject" }).click())
            yield* step(() => row("sdk").getByText("REJECTED", { exact: true }).waitFor())
            yield* countReaches(table.getByRole("button"), (n) => n === 0)
            // The configuration, reloaded after the decision, lists the approved repository.
            yield* step(() =>
              page
                .locator("dl.facts")
                .getByRole("link", { name: `${org}/lib` })
                .waitFor()
            )

            const listed = yield* organizationApi<ReadonlyArray<ContextSuggestion>>(
              admin.cookie,
              `${org}/repositories/${primary.id}/context-suggestions`
            )
            const byId = new Map(listed.map((suggestion) => [suggestion.id, suggestion]))
            assert.strictEqual(listed.length, 2)
            for (const [proposed, state] of [
              [toApprove, "APPROVED"],
              [toReject, "REJECTED"]
            ] as const) {
              const decided = byId.get(proposed.id)
              assert.isDefined(decided)
              assert.match(decided?.decided_at ?? "", /^\d{4}-\d\d-\d\dT/)
              assert.deepStrictEqual(
                { ...decided, decided_at: "t" },
                { ...proposed, state, decided_by: admin.userId, decided_at: "t" }
              )
            }
            const configuration = yield* organizationApi<RepositoryConfiguration>(
              admin.cookie,
              `${org}/repositories/${primary.id}/configuration`
            )
            assert.deepStrictEqual(configuration.secondary_repository_ids, [lib.id])
            yield* screenshot(page, "context-suggestions")
          })
      )

      it.effect(
        "switching passive listening on and off on the Slack channels screen is persisted per channel, as the API then shows",
        () =>
          Effect.gen(function* () {
            const org = "screens-slack"
            const slack = yield* FakeSlack
            const channels = yield* ChatChannelsRepo
            const admin = yield* signIn("slack-admin", [[org, "ADMIN"]])
            slack.addWorkspace({ token: SLACK_TOKEN, teamId: SLACK_TEAM, teamName: "Screens", botUserId: SLACK_BOT })
            yield* organizationApi(admin.cookie, `${org}/slack-connection`, {
              method: "PUT",
              body: JSON.stringify({ bot_token: SLACK_TOKEN, signing_secret: SLACK_SECRET })
            })
            yield* channels.upsert(org, { id: "C0REVIEWS", name: "reviews", isPrivate: false })
            yield* channels.upsert(org, { id: "G0INCIDENTS", name: "incidents", isPrivate: true })
            yield* channels.setPassive(org, "G0INCIDENTS", true)

            const base = yield* baseUrl
            const page = yield* pageWithSession(base, admin.cookie)
            yield* step(() => page.goto(`${base}/orgs/${org}/slack`))
            yield* step(() => page.getByText(`Connected to Screens as bot ${SLACK_BOT}`).waitFor())
            const reviews = page.getByRole("checkbox", { name: "Passive listening in reviews" })
            const incidents = page.getByRole("checkbox", { name: "Passive listening in incidents" })
            yield* step(() => reviews.waitFor())
            assert.isFalse(yield* step(() => reviews.isChecked()))
            assert.isTrue(yield* step(() => incidents.isChecked()))
            // A box is controlled by the channel as the API answers it: it shows the new state once
            // the list is reloaded after the write, and is enabled again then.
            yield* step(() => reviews.click())
            yield* settles(reviews, true)
            yield* step(() => incidents.click())
            yield* settles(incidents, false)

            const listed = yield* organizationApi<ReadonlyArray<ChatChannel>>(admin.cookie, `${org}/slack/channels`)
            assert.deepStrictEqual(listed, [
              { id: "G0INCIDENTS", is_private: true, name: "incidents", passive_enabled: false },
              { id: "C0REVIEWS", is_private: false, name: "reviews", passive_enabled: true }
            ])
            yield* screenshot(page, "slack-channels")
          })
      )

      it.effect(
        "accepting one finding and rejecting another with a reason on a finished deep scan's screen records both, as the API then shows",
        () =>
          Effect.gen(function* () {
            const org = "screens-scan"
            const scans = yield* DeepScansRepo
            const findings = yield* DeepScanFindingsRepo
            const sql = yield* SqlClient.SqlClient
            const member = yield* signIn("scan-triager", [[org, "MEMBER"]])
            const repository = yield* upsertRepository(org, "billing")
            const scan = yield* scans.create(org, {
              repositoryId: repository.id,
              defaultBranch: "main",
              headSha: HEAD,
              requestedBy: member.userId
            })
            yield* findings.record(
              org,
              { id: scan.id, repositoryId: repository.id },
              {
                summary: "Two SQL injections in the invoice queries.",
                complete: true,
                skipped: [],
                suppressedCount: 0,
                findings: [
                  finding(repository.id, "findInvoice", "HIGH", "SQL injection in findInvoice"),
                  finding(repository.id, "listInvoices", "MEDIUM", "SQL injection in listInvoices")
                ]
              }
            )
            // The scan's run finished, as the scheduler's settle step records a succeeded attempt
            // (no lane runs here, so the test writes what it would).
            yield* sql`UPDATE jobs SET status = 'SUCCEEDED', updated_at = now() WHERE run_id = ${scan.runId}`
            yield* sql`
            UPDATE workflow_runs SET status = 'SUCCEEDED', current_phase = 'finished',
                   started_at = now() - interval '5 minutes', finished_at = now(), updated_at = now()
            WHERE id = ${scan.runId}`

            const base = yield* baseUrl
            const page = yield* pageWithSession(base, member.cookie)
            yield* step(() => page.goto(`${base}/orgs/${org}/deep-scans/${scan.id}`))
            yield* step(() => page.getByRole("heading", { name: `Deep scan of ${org}/billing` }).waitFor())
            yield* step(() => page.getByText("0 accepted · 2 pending · 0 rejected").waitFor())
            assert.notInclude(yield* bodyText(page), "this page refreshes by itself", "a finished scan is not polled")
            const card = (title: string) => page.locator("article.card").filter({ hasText: title })
            const accepted = card("SQL injection in findInvoice")
            const rejected = card("SQL injection in listInvoices")

            yield* step(() => accepted.getByRole("button", { name: "Accept" }).click())
            yield* step(() => accepted.getByText("ACCEPTED", { exact: true }).waitFor())
            yield* step(() => rejected.getByRole("button", { name: "Reject" }).click())
            yield* step(() => rejected.getByLabel("Reason").selectOption("wont_fix"))
            yield* step(() => rejected.getByLabel("Note (optional)").fill("The invoice service is retired next month."))
            yield* step(() => rejected.getByRole("button", { name: "Confirm rejection" }).click())
            yield* step(() => rejected.getByText("Rejected as Won't fix").waitFor())
            yield* step(() => page.getByText("1 accepted · 0 pending · 1 rejected").waitFor())
            yield* step(() => page.getByRole("button", { name: "Create fix work item" }).waitFor())

            const after = yield* organizationApi<DeepScan>(member.cookie, `${org}/deep-scans/${scan.id}`)
            assert.deepStrictEqual(
              {
                status: after.status,
                completion_status: after.completion_status,
                finding_count: after.finding_count,
                decision_counts: after.decision_counts,
                risk_level: after.risk_level,
                fix_work_item_id: after.fix_work_item_id
              },
              {
                status: "SUCCEEDED",
                completion_status: "COMPLETE",
                finding_count: 2,
                decision_counts: { accepted: 1, pending: 0, rejected: 1 },
                risk_level: "HIGH",
                fix_work_item_id: null
              }
            )
            const decided = yield* organizationApi<ReadonlyArray<DeepScanFinding>>(
              member.cookie,
              `${org}/deep-scans/${scan.id}/findings`
            )
            assert.deepStrictEqual(
              decided.map((one) => ({
                title: one.title,
                decision: one.decision,
                reason_code: one.reason_code,
                reason_note: one.reason_note,
                decided_by: one.decided_by
              })),
              [
                {
                  title: "SQL injection in findInvoice",
                  decision: "ACCEPTED",
                  reason_code: null,
                  reason_note: null,
                  decided_by: member.userId
                },
                {
                  title: "SQL injection in listInvoices",
                  decision: "REJECTED",
                  reason_code: "wont_fix",
                  reason_note: "The invoice service is retired next month.",
                  decided_by: member.userId
                }
              ]
            )
            for (const one of decided) assert.match(one.decided_at ?? "", /^\d{4}-\d\d-\d\dT/, one.title)
            yield* screenshot(page, "deep-scan-triaged")
          })
      )

      it.effect(
        "the pull-request list's “Older →” is reached with Tab alone and Enter on it shows the second page",
        () =>
          Effect.gen(function* () {
            const org = "screens-keys"
            const pullRequests = yield* PullRequestsRepo
            const member = yield* signIn("keyboard-member", [[org, "MEMBER"]])
            const repository = yield* upsertRepository(org, "api")
            for (let n = 1; n <= 60; n++) {
              yield* pullRequests.upsert(org, {
                repositoryId: repository.id,
                number: n,
                title: `Change ${n}`,
                authorLogin: `dev${n % 4}`
              })
            }
            const base = yield* baseUrl
            const page = yield* pageWithSession(base, member.cookie)
            yield* step(() => page.goto(`${base}/orgs/${org}/pull-requests`))
            yield* countReaches(page.locator(PR_ROWS), (n) => n === 50)
            assert.include(yield* step(() => page.locator(PR_ROWS).first().textContent()), "Change 60")

            // What has the keyboard's focus (this package's types have no DOM, hence the string).
            const focused = () =>
              step(
                () =>
                  page.evaluate(
                    "({ tag: document.activeElement?.tagName ?? '', text: document.activeElement?.textContent?.trim() ?? '' })"
                  ) as Promise<{ tag: string; text: string }>
              )
            let presses = 0
            let current = yield* focused()
            while (current.text !== "Older →" && presses < 200) {
              yield* step(() => page.keyboard.press("Tab"))
              presses++
              current = yield* focused()
            }
            assert.deepStrictEqual(current, { tag: "BUTTON", text: "Older →" }, `after ${presses} presses of Tab`)
            // Past the section links, the filters and each row's "Runs" link, and never on "← Newer",
            // which is disabled on the first page.
            assert.isAbove(presses, 50)

            yield* step(() => page.keyboard.press("Enter"))
            yield* step(() => page.waitForURL(/cursor=/))
            yield* countReaches(page.locator(PR_ROWS), (n) => n === 10)
            const second = yield* step(() => page.locator(PR_ROWS).allInnerTexts())
            assert.deepStrictEqual(
              second.map((row) => /Change (\d+)/.exec(row)?.[1]),
              ["10", "9", "8", "7", "6", "5", "4", "3", "2", "1"]
            )
            assert.isTrue(yield* step(() => page.getByRole("button", { name: "Older →" }).isDisabled()))
            assert.isTrue(yield* step(() => page.getByRole("button", { name: "← Newer" }).isEnabled()))
            yield* screenshot(page, "pull-requests-keyboard")
          })
      )
    }
  )
})

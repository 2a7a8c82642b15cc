/**
 * The configuration screens in a real browser: Debian's Chromium driven by playwright-core against
 * the test server serving the dashboard built for this run, each change read back through the API
 * field by field. An admin picks a model from the discovered catalog on Organization settings (the
 * save sends only what changed) and sees the server's own message for a refused MCP server; a
 * member sees the same values with no way to change them; a repository's screen shows where each
 * group comes from (Bosun's default, the organization, set here, `.bosun.yaml`) and "Reset to
 * organization" drops the repository's values of a group; the agent connection's Test records a
 * model turn and the Getting started checklist follows. Each test leaves a screenshot in
 * `.artifacts/dashboard/`.
 */
import type { AgentCatalog, ModelTurnResult, RepositoryConfiguration, SetupChecklist } from "@bosun/domain"
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Layer } from "effect"
import type { Locator, Page } from "playwright-core"
import { ConfigurationRepo } from "../../src/features/agentConnections/ConfigurationRepo.ts"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { chromiumInstalled, pageWithSession, screenshot, step, TestBrowser } from "../support/Browser.ts"
import { recordDiscoveredCatalog } from "../support/Catalog.ts"
import { countReaches, dashboardServerSettings, organizationApi } from "../support/DashboardServer.ts"
import { signIn } from "../support/Identity.ts"
import { baseUrl, layerTestServer, request } from "../support/TestServer.ts"

const Server = Layer.unwrap(
  Effect.gen(function* () {
    return layerTestServer({ settings: yield* dashboardServerSettings })
  })
).pipe(Layer.provideMerge(TestBrowser.layer))

const catalog: AgentCatalog = {
  runtime_version: "bosun-runtime 0.1.0",
  providers: [
    {
      id: "openai",
      name: "OpenAI",
      models: [
        {
          id: "gpt-5",
          name: "GPT-5",
          variants: ["minimal", "high"],
          capabilities: { attachment: true, reasoning: true, temperature: false, tool_call: true },
          limits: { context: 400_000, output: 128_000 }
        },
        {
          id: "gpt-4o",
          name: "GPT-4o",
          variants: [],
          capabilities: { attachment: true, reasoning: false, temperature: true, tool_call: true },
          limits: { context: 128_000, output: 16_384 }
        }
      ]
    },
    {
      id: "anthropic",
      name: "Anthropic",
      models: [
        {
          id: "claude-sonnet-4",
          name: "Claude Sonnet 4",
          variants: ["high", "max"],
          capabilities: { attachment: true, reasoning: true, temperature: true, tool_call: true },
          limits: { context: 200_000, output: 64_000 }
        }
      ]
    }
  ]
}

/** A successful discovery of the organization's credentials, as the catalog_discovery run records one. */
const discovered = (org: string) => recordDiscoveredCatalog(org, catalog)

const upsertRepository = (org: string, name: string) =>
  Effect.flatMap(RepositoriesRepo, (repositories) =>
    repositories.upsert(org, { githubRepositoryId: null, owner: org, name, defaultBranch: "main" })
  )

/** A write through the API that answers 204 (`PUT .../configuration`). */
const put = (cookie: string, path: string, body: unknown) =>
  Effect.map(
    request(`/api/v1/organizations/${path}`, {
      method: "PUT",
      headers: { cookie, "content-type": "application/json" },
      body: JSON.stringify(body)
    }),
    (response) => assert.strictEqual(response.status, 204, response.text)
  )

const text = (locator: Locator) => step(async () => ((await locator.textContent()) ?? "").trim())

/** Waits until the element shows exactly `expected` (whitespace trimmed). */
const shows = (locator: Locator, expected: string) =>
  Effect.gen(function* () {
    yield* step(() => locator.filter({ hasText: expected }).waitFor())
    assert.strictEqual(yield* text(locator), expected)
  })

const source = (page: Page, group: string) => page.getByTestId(`source-${group}`)
const group = (page: Page, name: string) => page.getByTestId(`group-${name}`)
const bodyText = (page: Page) => step(async () => (await page.locator("body").textContent()) ?? "")
const optionTexts = (select: Locator) => step(() => select.locator("option").allInnerTexts())

/** The steps of the Getting started checklist on the page, as `id: done`. */
const checklistOnPage = (page: Page) =>
  step(() =>
    page
      .getByTestId("setup-steps")
      .locator("li")
      .evaluateAll((items) =>
        items.map((item) => `${item.getAttribute("data-step")}: ${item.getAttribute("data-done")}`)
      )
  )

const ORG = "settings-acme"

describe.skipIf(!chromiumInstalled && process.env.CI !== "true")("settings screens (needs /usr/bin/chromium)", () => {
  layer(Server, { excludeTestServices: true, timeout: Duration.minutes(3) })(
    "the settings screens in Chromium",
    (it) => {
      it.effect(
        "an admin picks a model from the catalog on Organization settings; the save sends only the changed fields and the API then has them, set by the organization",
        () =>
          Effect.gen(function* () {
            const admin = yield* signIn("settings-admin", [[ORG, "ADMIN"]])
            yield* discovered(ORG)
            const base = yield* baseUrl
            const page = yield* pageWithSession(base, admin.cookie)
            const sent: Array<unknown> = []
            const answered: Array<number> = []
            const isPut = (method: string, url: string) =>
              method === "PUT" && url.endsWith(`/organizations/${ORG}/configuration`)
            page.on("request", (request) => {
              if (isPut(request.method(), request.url())) sent.push(request.postDataJSON())
            })
            page.on("response", (response) => {
              if (isPut(response.request().method(), response.url())) answered.push(response.status())
            })

            yield* step(() => page.goto(`${base}/orgs/${ORG}/pull-requests`))
            yield* step(() => page.getByRole("navigation").getByRole("link", { name: "Organization settings" }).click())
            yield* step(() => page.waitForURL(`${base}/orgs/${ORG}/settings`))
            yield* step(() => page.getByRole("heading", { name: "Organization settings", level: 1 }).waitFor())

            // Nothing is set yet: every group is Bosun's default, and nothing offers a reset.
            for (const name of ["agent", "instructions", "mcp", "review_policy", "sandbox", "skills"]) {
              yield* shows(source(page, name), "inherited: Bosun's default")
            }
            assert.strictEqual(yield* step(() => page.getByRole("button", { name: "Reset to default" }).count()), 0)

            // The catalog, grouped by provider, each model with its capabilities and context window.
            const model = page.getByLabel("Model", { exact: true })
            yield* step(() => page.locator("optgroup[label=Anthropic] option").first().waitFor({ state: "attached" }))
            yield* step(() => page.getByTestId("model-default").filter({ hasText: "In use" }).waitFor())
            assert.strictEqual(
              yield* text(page.getByTestId("model-default")),
              "Default: openai/gpt-5 · In use: openai/gpt-5 (tool calls, reasoning, attachments · 400k context, 128k output)"
            )
            assert.deepStrictEqual(yield* step(() => page.locator("optgroup[label=OpenAI] option").allInnerTexts()), [
              "openai/gpt-5 (GPT-5) — tool calls, reasoning, attachments · 400k context",
              "openai/gpt-4o (GPT-4o) — tool calls, attachments, temperature · 128k context"
            ])
            assert.deepStrictEqual(
              yield* step(() => page.locator("optgroup[label=Anthropic] option").allInnerTexts()),
              [
                "anthropic/claude-sonnet-4 (Claude Sonnet 4) — tool calls, reasoning, attachments, temperature · 200k context"
              ]
            )
            assert.strictEqual((yield* optionTexts(model))[0], "Use Bosun's default (openai/gpt-5)")
            assert.strictEqual(yield* step(() => model.inputValue()), "")
            // Only the sandbox providers this instance is set up for (the test server: the runtime alone).
            assert.deepStrictEqual(yield* optionTexts(page.getByLabel("Sandbox provider")), [
              "Bosun runtime (this machine or BOSUN_RUNTIME_URL)"
            ])
            assert.deepStrictEqual(yield* optionTexts(page.getByLabel("Agent provider")), ["OpenCode", "Codex CLI"])

            // A model that does not reason has no reasoning effort, and one without variants no variant.
            yield* step(() => model.selectOption("openai/gpt-4o"))
            yield* countReaches(page.getByLabel("Reasoning effort"), (n) => n === 0)
            assert.strictEqual(yield* step(() => page.getByLabel("Model variant").count()), 0)
            yield* step(() => model.selectOption("anthropic/claude-sonnet-4"))
            const variant = page.getByLabel("Model variant")
            yield* step(() => variant.waitFor())
            assert.deepStrictEqual(yield* optionTexts(variant), ["The model's default", "high", "max"])
            yield* step(() => variant.selectOption("max"))
            yield* step(() => page.getByLabel("Reasoning effort").selectOption("high"))
            yield* shows(group(page, "agent").locator(".badge.warn"), "changed, not yet sent")

            yield* step(() => page.getByRole("button", { name: "Save configuration" }).click())
            yield* step(() => page.getByRole("status").filter({ hasText: "Saved" }).waitFor())
            assert.deepStrictEqual(sent, [
              { model: "anthropic/claude-sonnet-4", model_variant: "max", reasoning_effort: "high" }
            ])
            // The form is what the server now holds: the agent group is this organization's.
            yield* shows(source(page, "agent"), "set here")
            yield* step(() => group(page, "agent").getByRole("button", { name: "Reset to default" }).waitFor())
            assert.strictEqual(yield* step(() => model.inputValue()), "anthropic/claude-sonnet-4")
            assert.strictEqual(yield* step(() => variant.inputValue()), "max")
            assert.strictEqual(yield* step(() => page.getByLabel("Reasoning effort").inputValue()), "high")

            const saved = yield* organizationApi<RepositoryConfiguration>(admin.cookie, `${ORG}/configuration`)
            assert.strictEqual(saved.model, "anthropic/claude-sonnet-4")
            assert.strictEqual(saved.model_variant, "max")
            assert.strictEqual(saved.reasoning_effort, "high")
            assert.strictEqual(saved.sources.agent, "ORGANIZATION")
            assert.isTrue(saved.overrides.agent)
            assert.deepStrictEqual(
              { ...saved.sources, agent: "-" },
              {
                agent: "-",
                instructions: "DEFAULT",
                mcp: "DEFAULT",
                review_policy: "DEFAULT",
                sandbox: "DEFAULT",
                skills: "DEFAULT"
              }
            )
            // Fields the admin did not touch were not written.
            assert.strictEqual(saved.agent_provider, "OPENCODE")
            assert.strictEqual(saved.speed_mode, "STANDARD")

            // A body the contract refuses is stopped in the browser by the contract's own Schema, with its
            // message: an MCP server on plain http elsewhere than loopback.
            const secret = "Bearer mcp-secret-5f0c1a"
            yield* step(() => page.getByRole("button", { name: "Add MCP server" }).click())
            yield* step(() => page.getByLabel("MCP server 1 name").fill("docs"))
            yield* step(() => page.getByLabel("MCP server 1 URL").fill("http://mcp.example.com/v1"))
            yield* step(() => page.getByRole("button", { name: "Add header" }).click())
            yield* step(() => page.getByLabel("Header name of docs").fill("Authorization"))
            yield* step(() => page.getByLabel("Value of header Authorization of docs").fill(secret))
            yield* step(() => page.getByRole("button", { name: "Save configuration" }).click())
            const refusal = page.getByRole("alert").filter({ hasText: "mcp_servers" })
            yield* step(() => refusal.waitFor())
            assert.include(yield* text(refusal), "must be an https:// URL")
            assert.strictEqual(sent.length, 1, "nothing was sent")
            yield* step(() => page.getByLabel("MCP server 1 URL").fill("https://mcp.example.com/v1"))
            yield* step(() => page.getByRole("button", { name: "Save configuration" }).click())
            yield* step(() => page.getByRole("status").filter({ hasText: "Saved" }).waitFor())
            yield* shows(source(page, "mcp"), "set here")
            assert.deepStrictEqual(sent[1], {
              mcp_servers: [{ name: "docs", url: "https://mcp.example.com/v1", headers: { Authorization: secret } }]
            })
            // The header's value is write-only: the page shows its name, never the value.
            yield* step(() => group(page, "mcp").getByText("Authorization", { exact: true }).waitFor())
            assert.strictEqual(
              yield* step(() => page.getByLabel("Value of header Authorization of docs").inputValue()),
              ""
            )
            assert.notInclude(yield* step(() => page.content()), "mcp-secret")
            const withMcp = yield* organizationApi<RepositoryConfiguration>(admin.cookie, `${ORG}/configuration`)
            assert.deepStrictEqual(withMcp.mcp_servers, [
              { name: "docs", url: "https://mcp.example.com/v1", header_names: ["Authorization"] }
            ])
            assert.strictEqual(withMcp.model, "anthropic/claude-sonnet-4", "the MCP save left the model alone")

            // What only the server checks comes back as its own message: two skills of one name.
            yield* step(() => page.getByRole("button", { name: "Add skill" }).click())
            yield* step(() => page.getByRole("button", { name: "Add skill" }).click())
            for (const n of [1, 2]) {
              yield* step(() => page.getByLabel(`Skill ${n} name`).fill("style"))
              yield* step(() => page.getByLabel(`Skill ${n} content (SKILL.md)`).fill(`Write plainly (${n}).`))
            }
            yield* step(() => page.getByLabel("Skill 1 description").fill("House style"))
            yield* step(() => page.getByRole("button", { name: "Save configuration" }).click())
            const duplicate = page.getByRole("alert").filter({ hasText: "skills" })
            yield* step(() => duplicate.waitFor())
            assert.deepStrictEqual(answered, [204, 204, 400])
            const refused = yield* organizationApi<RepositoryConfiguration>(admin.cookie, `${ORG}/configuration`)
            assert.deepStrictEqual(refused.skills, [], "a refused write stores nothing")
            yield* step(() => page.getByTestId("skill").nth(1).getByRole("button", { name: "Remove skill" }).click())
            yield* step(() => page.getByRole("button", { name: "Save configuration" }).click())
            yield* step(() => page.getByRole("status").filter({ hasText: "Saved" }).waitFor())
            yield* shows(source(page, "skills"), "set here")
            assert.deepStrictEqual(sent[3], {
              skills: [{ name: "style", description: "House style", content: "Write plainly (1)." }]
            })
            const withSkill = yield* organizationApi<RepositoryConfiguration>(admin.cookie, `${ORG}/configuration`)
            assert.deepStrictEqual(withSkill.skills, [
              { name: "style", description: "House style", content: "Write plainly (1)." }
            ])
            assert.deepStrictEqual(withSkill.sources, {
              agent: "ORGANIZATION",
              instructions: "DEFAULT",
              mcp: "ORGANIZATION",
              review_policy: "DEFAULT",
              sandbox: "DEFAULT",
              skills: "ORGANIZATION"
            })
            yield* screenshot(page, "organization-settings")
          })
      )

      it.effect("a member sees the organization's settings read-only: the chosen model, no write controls at all", () =>
        Effect.gen(function* () {
          const org = "settings-readonly"
          const admin = yield* signIn("readonly-admin", [[org, "ADMIN"]])
          const member = yield* signIn("settings-member", [[org, "MEMBER"]])
          yield* discovered(org)
          yield* put(admin.cookie, `${org}/configuration`, {
            model: "anthropic/claude-sonnet-4",
            model_variant: "max",
            reasoning_effort: "high",
            mcp_servers: [
              { name: "docs", url: "https://mcp.example.com/v1", headers: { Authorization: "Bearer ro-1" } }
            ]
          })
          const base = yield* baseUrl
          const page = yield* pageWithSession(base, member.cookie)
          yield* step(() => page.goto(`${base}/orgs/${org}/settings`))
          yield* step(() => page.getByText("Only admins change the configuration; you see it read-only.").waitFor())
          const model = page.getByLabel("Model", { exact: true })
          yield* step(() => page.locator("optgroup[label=Anthropic] option").first().waitFor({ state: "attached" }))
          assert.strictEqual(yield* step(() => model.inputValue()), "anthropic/claude-sonnet-4")
          assert.isTrue(yield* step(() => model.isDisabled()))
          assert.strictEqual(yield* step(() => page.getByLabel("Model variant").inputValue()), "max")
          assert.strictEqual(yield* step(() => page.getByLabel("Reasoning effort").inputValue()), "high")
          yield* shows(source(page, "agent"), "set here")
          yield* shows(source(page, "mcp"), "set here")
          yield* step(() => group(page, "mcp").getByText("Authorization", { exact: true }).waitFor())

          const form = page.locator("form.configuration")
          assert.strictEqual(yield* step(() => form.locator("button").count()), 0, "no button in the form")
          for (const name of ["Save configuration", "Reset to default", "Add MCP server", "Add skill", "Test"]) {
            assert.strictEqual(yield* step(() => page.getByRole("button", { name, exact: true }).count()), 0, name)
          }
          const controls = form.locator("input, select, textarea")
          assert.isAbove(yield* step(() => controls.count()), 20)
          assert.strictEqual(
            yield* step(() => form.locator("input:enabled, select:enabled, textarea:enabled").count()),
            0,
            "every input is disabled"
          )
          assert.strictEqual(
            yield* step(() => form.locator("input[type=password]").count()),
            0,
            "no header value input"
          )
          yield* screenshot(page, "organization-settings-member")

          // The agent connection screen: neither the credential forms nor the Test.
          yield* step(() => page.goto(`${base}/orgs/${org}/agent`))
          yield* step(() => page.getByRole("heading", { name: "Test the model" }).waitFor())
          yield* step(() => page.getByText("Not tested yet.").waitFor())
          for (const name of ["Test", "Save API key", "Import credentials"]) {
            assert.strictEqual(yield* step(() => page.getByRole("button", { name, exact: true }).count()), 0, name)
          }
        })
      )

      it.effect(
        "a repository's screen shows each group's source (default, organization, set here, .bosun.yaml) and Reset to organization drops the repository's values",
        () =>
          Effect.gen(function* () {
            const org = "settings-repo"
            const configurations = yield* ConfigurationRepo
            const admin = yield* signIn("repo-settings-admin", [[org, "ADMIN"]])
            const app = yield* upsertRepository(org, "app")
            const legacy = yield* upsertRepository(org, "legacy")
            yield* put(admin.cookie, `${org}/configuration`, {
              review_policy: { comment_limit: 3 },
              mcp_servers: [
                { name: "tools", url: "https://mcp.example.com/org", headers: { "X-Api-Key": "org-secret-77aa" } }
              ]
            })
            yield* put(admin.cookie, `${org}/repositories/${app.id}/configuration`, {
              review_policy: { comment_limit: 7 }
            })
            yield* configurations.recordConfigFile(org, app.id, {
              path: ".bosun.yaml",
              ref: "main",
              found: true,
              settings: {
                custom_instructions: "File instructions",
                path_instructions: [{ path: "src/**/*.ts", instructions: "Check the types." }]
              },
              error: null
            })
            yield* configurations.recordConfigFile(org, legacy.id, {
              path: ".bosun.yaml",
              ref: "main",
              found: true,
              settings: null,
              error: 'line 2: unknown key "colour"'
            })

            const base = yield* baseUrl
            const page = yield* pageWithSession(base, admin.cookie)
            yield* step(() => page.goto(`${base}/orgs/${org}/repositories/${app.id}`))
            yield* shows(source(page, "agent"), "inherited: Bosun's default")
            yield* shows(source(page, "instructions"), "from .bosun.yaml")
            yield* shows(source(page, "mcp"), "inherited from the organization")
            yield* shows(source(page, "review_policy"), "set here")
            yield* shows(source(page, "sandbox"), "inherited: Bosun's default")
            yield* shows(source(page, "skills"), "inherited: Bosun's default")
            assert.strictEqual(
              yield* step(() => page.getByLabel("Custom instructions").inputValue()),
              "File instructions"
            )
            assert.strictEqual(yield* step(() => page.getByLabel("Comment limit").inputValue()), "7")
            const file = page.getByTestId("config-file")
            assert.include(yield* text(file), "Yes, .bosun.yaml on main")
            assert.deepStrictEqual(
              yield* step(() => page.getByTestId("path-instructions").locator("tbody td").allInnerTexts()),
              ["src/**/*.ts", "Check the types."]
            )
            assert.strictEqual(yield* step(() => file.locator("input, textarea, select, button").count()), 0)
            // The organization's MCP server, its header by name only.
            assert.strictEqual(yield* step(() => page.getByLabel("MCP server 1 name").inputValue()), "tools")
            yield* step(() => group(page, "mcp").getByText("X-Api-Key", { exact: true }).waitFor())
            assert.notInclude(yield* step(() => page.content()), "org-secret")
            // Only the group the repository sets itself can be reset to the organization's.
            const reset = page.getByRole("button", { name: "Reset to organization" })
            assert.strictEqual(yield* step(() => reset.count()), 1)
            assert.strictEqual(
              yield* step(() =>
                group(page, "review_policy").getByRole("button", { name: "Reset to organization" }).count()
              ),
              1
            )
            yield* screenshot(page, "repository-configuration-sources")

            yield* step(() => reset.click())
            yield* shows(source(page, "review_policy"), "inherited from the organization")
            yield* step(() =>
              page.getByRole("status").filter({ hasText: "Review policy follows the organization again." }).waitFor()
            )
            yield* countReaches(page.getByRole("button", { name: "Reset to organization" }), (n) => n === 0)
            assert.strictEqual(yield* step(() => page.getByLabel("Comment limit").inputValue()), "3")
            yield* shows(source(page, "instructions"), "from .bosun.yaml")

            const after = yield* organizationApi<RepositoryConfiguration>(
              admin.cookie,
              `${org}/repositories/${app.id}/configuration`
            )
            assert.strictEqual(after.sources.review_policy, "ORGANIZATION")
            assert.isFalse(after.overrides.review_policy)
            assert.strictEqual(after.review_policy.comment_limit, 3)
            assert.strictEqual(after.sources.instructions, "FILE")
            assert.strictEqual(after.custom_instructions, "File instructions")
            assert.deepStrictEqual(after.config_file && { ...after.config_file, read_at: "t" }, {
              path: ".bosun.yaml",
              ref: "main",
              found: true,
              read_at: "t",
              error: null
            })
            const organization = yield* organizationApi<RepositoryConfiguration>(admin.cookie, `${org}/configuration`)
            assert.strictEqual(organization.review_policy.comment_limit, 3, "the organization keeps its own")
            assert.strictEqual(organization.sources.review_policy, "ORGANIZATION")

            // A file that does not parse is ignored, with its reason.
            yield* step(() => page.goto(`${base}/orgs/${org}/repositories/${legacy.id}`))
            yield* shows(page.getByTestId("config-file-error"), 'Ignored: line 2: unknown key "colour"')
            yield* shows(source(page, "instructions"), "inherited: Bosun's default")
            yield* shows(source(page, "review_policy"), "inherited from the organization")
            yield* screenshot(page, "repository-configuration-file-error")
          })
      )

      it.effect(
        "an admin's Test on the agent connection records one model turn, shown in a line and by the API, and the Getting started checklist follows",
        () =>
          Effect.gen(function* () {
            const org = "settings-setup"
            const admin = yield* signIn("setup-admin", [[org, "ADMIN"]])
            const member = yield* signIn("setup-member", [[org, "MEMBER"]])
            yield* upsertRepository(org, "api")
            yield* organizationApi(admin.cookie, `${org}/opencode-connection/api-keys/openai`, {
              method: "PUT",
              body: JSON.stringify({ api_key: "sk-settings-test-91be" })
            })
            yield* discovered(org)

            const base = yield* baseUrl
            const page = yield* pageWithSession(base, admin.cookie)
            yield* step(() => page.goto(`${base}/orgs/${org}/settings`))
            yield* step(() => page.getByRole("heading", { name: "Getting started" }).waitFor())
            yield* countReaches(page.getByTestId("setup-steps").locator("li"), (n) => n === 5)
            const before = yield* organizationApi<SetupChecklist>(admin.cookie, `${org}/setup`)
            assert.deepStrictEqual(
              yield* checklistOnPage(page),
              before.steps.map((one) => `${one.id}: ${one.done}`)
            )
            assert.deepStrictEqual(
              before.steps.map((one) => [one.id, one.done]),
              [
                ["github_app", false],
                ["app_installed", true],
                ["agent_credentials", true],
                ["model_chosen", true],
                ["test_turn", false]
              ]
            )
            assert.isFalse(before.complete)
            for (const one of before.steps) {
              const item = page.locator(`[data-step=${one.id}]`)
              assert.include(yield* text(item), one.detail, one.id)
            }

            yield* step(() => page.getByRole("navigation").getByRole("link", { name: "Agent connection" }).click())
            yield* step(() => page.getByText("Not tested yet.").waitFor())
            yield* step(() => page.getByRole("button", { name: "Test", exact: true }).click())
            const line = page.getByTestId("test-result")
            yield* step(() => line.waitFor({ timeout: 60_000 }))
            const last = yield* organizationApi<ModelTurnResult | null>(admin.cookie, `${org}/opencode-connection/test`)
            assert.isNotNull(last)
            if (last === null) return
            // No runtime answers the test server, so the turn fails with the reason, which the line shows.
            assert.isFalse(last.ok)
            assert.strictEqual(last.model, "openai/gpt-5", "the default pick of the catalog")
            assert.isAbove(last.message.length, 0)
            assert.strictEqual(yield* step(() => line.getAttribute("data-ok")), "false")
            const shown = yield* text(line)
            assert.include(shown, "openai/gpt-5")
            assert.include(shown, last.message)
            assert.include(shown, "FAILED")

            const after = yield* organizationApi<SetupChecklist>(admin.cookie, `${org}/setup`)
            const testStep = after.steps.find((one) => one.id === "test_turn")
            assert.isFalse(testStep?.done)
            assert.include(testStep?.detail ?? "", "The last test failed")
            yield* step(() =>
              page.locator("[data-step=test_turn]").filter({ hasText: "The last test failed" }).waitFor()
            )
            yield* screenshot(page, "agent-connection-test")

            // A member sees the last result and no Test.
            const memberPage = yield* pageWithSession(base, member.cookie)
            yield* step(() => memberPage.goto(`${base}/orgs/${org}/agent`))
            yield* step(() => memberPage.getByTestId("test-result").waitFor())
            assert.include(yield* text(memberPage.getByTestId("test-result")), last.message)
            assert.strictEqual(
              yield* step(() => memberPage.getByRole("button", { name: "Test", exact: true }).count()),
              0
            )
            assert.notInclude(yield* bodyText(memberPage), "sk-settings-test")
          })
      )
    }
  )
})

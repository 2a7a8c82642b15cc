/**
 * The run settings a prepare step takes from configuration (`RunSettings.forRun`), over the real
 * repositories and configuration writes: the model checked against the newest successful catalog
 * or Bosun's default pick, the reasoning effort only for a model that reasons, MCP servers with
 * their sealed headers opened from the level in force, and skills as SKILL.md files.
 */
import type { AgentCatalog, ConfigurationUpdate } from "@bosun/domain"
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationWriter } from "../../../src/features/agentConnections/ConfigurationWriter.ts"
import { makeRunSettings, teamInstructions } from "../../../src/features/agentConnections/RunSettings.ts"
import { OrganizationsRepo } from "../../../src/features/identity/OrganizationsRepo.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { recordDiscoveredCatalog } from "../../support/Catalog.ts"
import { layerTestServer } from "../../support/TestServer.ts"

const capabilities = (reasoning: boolean) => ({ attachment: true, reasoning, temperature: !reasoning, tool_call: true })

const OPENAI: AgentCatalog["providers"][number] = {
  id: "openai",
  name: "OpenAI",
  models: [
    {
      id: "gpt-5",
      name: "GPT-5",
      variants: ["minimal", "high"],
      capabilities: capabilities(true),
      limits: { context: 400_000, output: 128_000 }
    },
    {
      id: "gpt-5-mini",
      name: "GPT-5 mini",
      variants: [],
      capabilities: capabilities(true),
      limits: { context: 400_000, output: 128_000 }
    },
    {
      id: "gpt-4o",
      name: "GPT-4o",
      variants: [],
      capabilities: capabilities(false),
      limits: { context: 128_000, output: 16_384 }
    }
  ]
}

const catalogOf = (...providers: AgentCatalog["providers"]): AgentCatalog => ({
  runtime_version: "bosun-runtime 0.1.0",
  providers
})

/** A successful discovery of the organization's credentials, recorded now: the newest is the catalog in force. */
const discovered = (org: string, catalog: AgentCatalog) => recordDiscoveredCatalog(org, catalog)

const organization = (org: string) => Effect.flatMap(OrganizationsRepo, (organizations) => organizations.ensure(org))

/** A configuration write as the API makes one, with its checks against the catalog. */
const configure = (org: string, repositoryId: string | null, patch: ConfigurationUpdate) =>
  Effect.flatMap(ConfigurationWriter, (writer) => writer.update(org, repositoryId, patch, { kind: "operator" }))

const forRun = (org: string, repositoryId: string | null = null) =>
  Effect.flatMap(makeRunSettings, (settings) => settings.forRun(org, repositoryId))

layer(layerTestServer(), { excludeTestServices: true })("run settings", (it) => {
  it.effect(
    "a configured model the newest catalog no longer lists fails with model_unavailable, naming it, its provider and close matches",
    () =>
      Effect.gen(function* () {
        yield* organization("rs-stale")
        yield* discovered("rs-stale", catalogOf(OPENAI))
        yield* configure("rs-stale", null, { model: "openai/gpt-4o" })
        assert.strictEqual((yield* forRun("rs-stale")).model, "openai/gpt-4o")

        yield* discovered(
          "rs-stale",
          catalogOf({ ...OPENAI, models: OPENAI.models.filter((model) => model.id !== "gpt-4o") })
        )
        const error = yield* Effect.flip(forRun("rs-stale"))
        assert.strictEqual(error._tag, "AttemptError")
        assert.strictEqual(error.code, "model_unavailable")
        assert.strictEqual(error.retryable, false)
        assert.strictEqual(
          error.message,
          "The configured model is no longer offered by the organization's agent credentials: " +
            'Model "openai/gpt-4o" is not in the catalog of provider "openai" (models are named provider/model); ' +
            "close matches: openai/gpt-5. Choose a model in the organization's settings"
        )
      })
  )

  it.effect("a run waits for the first catalog of credentials whose discovery is under way, then takes its pick", () =>
    Effect.gen(function* () {
      yield* organization("rs-first")
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO agent_catalog_discoveries (organization_id, status) VALUES ('rs-first', 'QUEUED')`
      const started = Date.now()
      const waiting = yield* Effect.forkChild(forRun("rs-first"))
      yield* Effect.sleep(Duration.millis(1500))
      yield* discovered("rs-first", catalogOf(OPENAI))
      const settings = yield* Fiber.join(waiting)
      assert.strictEqual(settings.model, "openai/gpt-5")
      assert.isAtLeast(Date.now() - started, 1500)
    })
  )

  it.effect("with no model configured and no catalog discovered, a run is refused with model_catalog_unavailable", () =>
    Effect.gen(function* () {
      yield* organization("rs-none")
      const error = yield* Effect.flip(forRun("rs-none"))
      assert.strictEqual(error.code, "model_catalog_unavailable")
      assert.strictEqual(error.retryable, false)
      assert.strictEqual(
        error.message,
        "No model is configured and no model catalog has been discovered for the organization's agent credentials: " +
          "connect agent credentials (their catalog is discovered from them) or choose a model"
      )
    })
  )

  it.effect("with no model configured and a catalog of providers without models, a run is refused", () =>
    Effect.gen(function* () {
      yield* organization("rs-empty")
      yield* discovered("rs-empty", catalogOf({ id: "local", name: "Local", models: [] }))
      const error = yield* Effect.flip(forRun("rs-empty"))
      assert.strictEqual(error.code, "model_catalog_unavailable")
      assert.strictEqual(
        error.message,
        "No model is configured and the catalog of the organization's agent credentials lists no models: choose a model in the settings"
      )
    })
  )

  it.effect(
    "with no model configured, a run takes Bosun's default pick from the catalog and the configured effort",
    () =>
      Effect.gen(function* () {
        yield* organization("rs-default")
        yield* discovered("rs-default", catalogOf(OPENAI))
        yield* configure("rs-default", null, { reasoning_effort: "high" })
        const settings = yield* forRun("rs-default")
        // Tool-calling, reasoning, the largest context and output, then the shortest id.
        assert.strictEqual(settings.model, "openai/gpt-5")
        assert.strictEqual(settings.reasoningEffort, "high")
        assert.strictEqual(settings.configuration.model, "")
        assert.deepStrictEqual(settings.mcpServers, [])
        assert.deepStrictEqual(settings.skills, [])
        assert.isNull(teamInstructions(settings.configuration), "no instructions configured: none appended")
      })
  )

  it.effect("a model the catalog says does not reason is sent no reasoning effort", () =>
    Effect.gen(function* () {
      yield* organization("rs-effort")
      yield* discovered("rs-effort", catalogOf(OPENAI))
      yield* configure("rs-effort", null, { model: "openai/gpt-5", reasoning_effort: "medium" })
      assert.strictEqual((yield* forRun("rs-effort")).reasoningEffort, "medium")

      // The effort stays configured; the model chosen after it does not take one.
      yield* configure("rs-effort", null, { model: "openai/gpt-4o" })
      const settings = yield* forRun("rs-effort")
      assert.strictEqual(settings.model, "openai/gpt-4o")
      assert.strictEqual(settings.configuration.reasoning_effort, "medium")
      assert.isUndefined(settings.reasoningEffort)
    })
  )

  it.effect("a provider the catalog lists without models takes any model id of it, with the configured effort", () =>
    Effect.gen(function* () {
      yield* organization("rs-unlisted")
      yield* discovered("rs-unlisted", catalogOf(OPENAI, { id: "local", name: "Local", models: [] }))
      yield* configure("rs-unlisted", null, { model: "local/house-model-7b", reasoning_effort: "low" })
      const settings = yield* forRun("rs-unlisted")
      assert.strictEqual(settings.model, "local/house-model-7b")
      assert.strictEqual(settings.reasoningEffort, "low")
    })
  )

  it.effect(
    "MCP servers come with the sealed headers of the level in force, skills as SKILL.md, and the team's instructions",
    () =>
      Effect.gen(function* () {
        yield* organization("rs-tools")
        const repository = yield* (yield* RepositoriesRepo).upsert("rs-tools", {
          githubRepositoryId: null,
          owner: "acme",
          name: "rs-tools-app",
          defaultBranch: "main"
        })
        yield* discovered("rs-tools", catalogOf(OPENAI))
        const framed = "---\nname: release-notes\ndescription: Writes release notes\n---\n\nOne line per change."
        yield* configure("rs-tools", null, {
          custom_instructions: "  Prefer small functions.  ",
          review_policy: { guidance: "Security first." },
          mcp_servers: [
            { name: "docs", url: "https://mcp.example.com/docs", headers: { Authorization: "Bearer org-docs-0123" } },
            { name: "tickets", url: "http://127.0.0.1:9000/mcp" }
          ],
          skills: [
            { name: "house-style", description: "How we write\n  error messages.", content: "Name the bad value." },
            { name: "checklist", content: "Run the tests." },
            { name: "release-notes", description: "ignored: the content has its own", content: framed }
          ]
        })

        const settings = yield* forRun("rs-tools")
        assert.deepStrictEqual(settings.mcpServers, [
          { name: "docs", url: "https://mcp.example.com/docs", headers: { Authorization: "Bearer org-docs-0123" } },
          { name: "tickets", url: "http://127.0.0.1:9000/mcp", headers: {} }
        ])
        assert.deepStrictEqual(settings.skills, [
          {
            name: "house-style",
            content: '---\nname: house-style\ndescription: "How we write error messages."\n---\n\nName the bad value.'
          },
          {
            name: "checklist",
            content: '---\nname: checklist\ndescription: "The checklist skill of this team"\n---\n\nRun the tests.'
          },
          { name: "release-notes", content: framed }
        ])
        assert.strictEqual(
          teamInstructions(settings.configuration),
          "Instructions from this team:\nPrefer small functions.\n\nGuidance for this repository:\nSecurity first."
        )

        // The repository's own servers replace the organization's, with their own headers.
        yield* configure("rs-tools", repository.id, {
          mcp_servers: [
            { name: "docs", url: "https://mcp.example.com/repo", headers: { "X-Api-Key": "repo-docs-4567" } }
          ]
        })
        assert.deepStrictEqual((yield* forRun("rs-tools", repository.id)).mcpServers, [
          { name: "docs", url: "https://mcp.example.com/repo", headers: { "X-Api-Key": "repo-docs-4567" } }
        ])
        assert.deepStrictEqual(
          (yield* forRun("rs-tools")).mcpServers.map((server) => server.headers),
          [{ Authorization: "Bearer org-docs-0123" }, {}]
        )
      })
  )
})

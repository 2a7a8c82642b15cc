/**
 * Configuration at two levels over real HTTP: the organization's GET/PUT, partial repository
 * PUTs where `null` inherits again, `DELETE .../configuration/{group}` at both levels, the
 * repository's `.bosun.yaml` values with source FILE — the inheritance matrix of every group —
 * the model checked against the discovered catalog, MCP headers sealed and never returned, and
 * every bad input refused with a 400 naming the field and nothing written.
 */
import {
  type AgentCatalog,
  bosunConfigJsonSchema,
  DEFAULT_CONFIGURATION,
  type RepositoryConfiguration
} from "@bosun/domain"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../../../src/features/agentConnections/ConfigurationRepo.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { recordDiscoveredCatalog } from "../../support/Catalog.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

type Json = Record<string, unknown>

const send = (method: string, cookie: string, path: string, body?: unknown) =>
  request(`/api/v1/organizations/${path}`, {
    method,
    headers: { cookie, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const read = (cookie: string, path: string) =>
  Effect.map(send("GET", cookie, path), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json as { data: RepositoryConfiguration }).data
  })

const expectStatus = (status: number, response: { readonly status: number; readonly text: string }) =>
  assert.strictEqual(response.status, status, response.text)

const fixture = (org: string) =>
  Effect.gen(function* () {
    const repositories = yield* RepositoriesRepo
    const admin = yield* signIn(`lvl-admin-${org}`, [[org, "ADMIN"]])
    const member = yield* signIn(`lvl-member-${org}`, [[org, "MEMBER"]])
    const repository = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: "acme",
      name: `${org}-app`,
      defaultBranch: "main"
    })
    const sibling = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: "acme",
      name: `${org}-lib`,
      defaultBranch: "main"
    })
    return {
      admin,
      member,
      repository,
      sibling,
      orgPath: `${org}/configuration`,
      repoPath: `${org}/repositories/${repository.id}/configuration`
    }
  })

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
          id: "gpt-5-mini",
          name: "GPT-5 mini",
          variants: [],
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
    }
  ]
}

/** A successful discovery of the organization's credentials, as the catalog_discovery run records one. */
const discovered = (org: string) => recordDiscoveredCatalog(org, catalog)

/** One field per group, with a value for each level that can set it (the file only sets two groups). */
const MATRIX: ReadonlyArray<{
  readonly group: keyof RepositoryConfiguration["sources"]
  readonly field: string
  readonly read: (c: RepositoryConfiguration) => unknown
  readonly organization: unknown
  readonly repository: unknown
  readonly file?: { readonly settings: Json; readonly value: unknown }
}> = [
  {
    group: "agent",
    field: "agent_behavior_custom",
    read: (c) => c.agent_behavior_custom,
    organization: "Org behaviour",
    repository: "Repo behaviour"
  },
  {
    group: "instructions",
    field: "custom_instructions",
    read: (c) => c.custom_instructions,
    organization: "Org instructions",
    repository: "Repo instructions",
    file: { settings: { custom_instructions: "File instructions" }, value: "File instructions" }
  },
  {
    group: "mcp",
    field: "mcp_servers",
    read: (c) => c.mcp_servers,
    organization: [{ name: "org-docs", url: "https://mcp.example.com/org" }],
    // Plain http is allowed on loopback (a tool server on the same machine).
    repository: [{ name: "repo-docs", url: "http://127.0.0.1:9000/mcp" }]
  },
  {
    group: "review_policy",
    field: "review_policy",
    read: (c) => c.review_policy.comment_limit,
    organization: { comment_limit: 3 },
    repository: { comment_limit: 7 },
    file: { settings: { review_policy: { comment_limit: 11 } }, value: 11 }
  },
  {
    group: "sandbox",
    field: "sandbox_config",
    read: (c) => c.sandbox_config,
    organization: { image: "node:24" },
    repository: { image: "python:3.13" }
  },
  {
    group: "skills",
    field: "skills",
    read: (c) => c.skills,
    organization: [{ name: "org-style", content: "Write like the org." }],
    repository: [{ name: "repo.style", description: "House style", content: "Write like the repo." }]
  }
]

/** What the read form shows for a written value (MCP servers show their header names). */
const shown = (field: string, value: unknown) =>
  field === "mcp_servers"
    ? (value as ReadonlyArray<Json>).map((server) => ({ ...server, header_names: [] }))
    : field === "review_policy"
      ? (value as { comment_limit: number }).comment_limit
      : value

const defaultOf = (group: string, read: (c: RepositoryConfiguration) => unknown) =>
  read({
    ...DEFAULT_CONFIGURATION.agent,
    ...DEFAULT_CONFIGURATION.instructions,
    ...DEFAULT_CONFIGURATION.mcp,
    ...DEFAULT_CONFIGURATION.review_policy,
    ...DEFAULT_CONFIGURATION.sandbox,
    ...DEFAULT_CONFIGURATION.skills
  } as unknown as RepositoryConfiguration) ?? group

layer(layerTestServer(), { excludeTestServices: true })("configuration levels", (it) => {
  it.effect("the inheritance matrix: each group from DEFAULT, ORGANIZATION, REPOSITORY and FILE, and reset", () =>
    Effect.gen(function* () {
      const f = yield* fixture("lvl-matrix")
      const configurations = yield* ConfigurationRepo
      for (const entry of MATRIX) {
        const at = async (label: string) => `${entry.group}: ${label}`
        const check = (
          label: string,
          level: "organization" | "repository",
          value: unknown,
          source: string,
          override: boolean
        ) =>
          Effect.gen(function* () {
            const path = level === "organization" ? f.orgPath : f.repoPath
            const configuration = yield* read(f.member.cookie, path)
            const why = yield* Effect.promise(() => at(label))
            assert.deepStrictEqual(entry.read(configuration), value, why)
            assert.strictEqual(configuration.sources[entry.group], source, why)
            assert.strictEqual(configuration.overrides[entry.group], override, why)
          })
        const initial = defaultOf(entry.group, entry.read)
        yield* check("default at the organization", "organization", initial, "DEFAULT", false)
        yield* check("default at the repository", "repository", initial, "DEFAULT", false)

        expectStatus(204, yield* send("PUT", f.admin.cookie, f.orgPath, { [entry.field]: entry.organization }))
        const organization = shown(entry.field, entry.organization)
        yield* check("set by the organization", "organization", organization, "ORGANIZATION", true)
        yield* check("inherited by the repository", "repository", organization, "ORGANIZATION", false)

        expectStatus(204, yield* send("PUT", f.admin.cookie, f.repoPath, { [entry.field]: entry.repository }))
        const repository = shown(entry.field, entry.repository)
        yield* check("overridden by the repository", "repository", repository, "REPOSITORY", true)
        yield* check("the organization keeps its own", "organization", organization, "ORGANIZATION", true)

        if (entry.file !== undefined) {
          yield* configurations.recordConfigFile("lvl-matrix", f.repository.id, {
            path: ".bosun.yaml",
            ref: "main",
            found: true,
            settings: entry.file.settings,
            error: null
          })
          yield* check("set by .bosun.yaml", "repository", entry.file.value, "FILE", true)
          yield* check("the file is the repository's alone", "organization", organization, "ORGANIZATION", true)
          yield* configurations.recordConfigFile("lvl-matrix", f.repository.id, {
            path: ".bosun.yaml",
            ref: "main",
            found: false,
            settings: null,
            error: null
          })
          yield* check("the file no longer sets it", "repository", repository, "REPOSITORY", true)
        }

        // null drops the repository's value of the field: it inherits again.
        expectStatus(204, yield* send("PUT", f.admin.cookie, f.repoPath, { [entry.field]: null }))
        yield* check("null inherits", "repository", organization, "ORGANIZATION", false)

        expectStatus(204, yield* send("PUT", f.admin.cookie, f.repoPath, { [entry.field]: entry.repository }))
        expectStatus(204, yield* send("DELETE", f.admin.cookie, `${f.repoPath}/${entry.group}`))
        yield* check("reset to the organization", "repository", organization, "ORGANIZATION", false)

        expectStatus(204, yield* send("DELETE", f.admin.cookie, `${f.orgPath}/${entry.group}`))
        yield* check("organization reset to the default", "organization", initial, "DEFAULT", false)
        yield* check("the repository follows to the default", "repository", initial, "DEFAULT", false)
      }
      const sql = yield* SqlClient.SqlClient
      const audits = yield* sql<{ action: string; n: number }>`
        SELECT action, count(*)::int AS n FROM audit_events WHERE organization_id = 'lvl-matrix'
        GROUP BY action ORDER BY action`
      assert.deepStrictEqual(audits, [
        { action: "organization.configure", n: 12 },
        { action: "repository.configure", n: 24 }
      ])
    })
  )

  it.effect("a PUT changes only the fields it names; review_policy field by field, guidance at either level", () =>
    Effect.gen(function* () {
      const f = yield* fixture("lvl-partial")
      expectStatus(
        204,
        yield* send("PUT", f.admin.cookie, f.orgPath, {
          custom_instructions: "Prefer small functions.",
          review_policy: { guidance: "Security first.", strictness: "HIGH" },
          speed_mode: "FAST"
        })
      )
      expectStatus(
        204,
        yield* send("PUT", f.admin.cookie, f.repoPath, {
          review_policy: { comment_limit: 2 },
          agent_provider: "AGENT_ONE",
          secondary_repository_ids: [f.sibling.id]
        })
      )
      const repository = yield* read(f.member.cookie, f.repoPath)
      assert.deepStrictEqual(repository.review_policy, {
        ...DEFAULT_CONFIGURATION.review_policy.review_policy,
        guidance: "Security first.",
        strictness: "HIGH",
        comment_limit: 2
      })
      assert.strictEqual(repository.custom_instructions, "Prefer small functions.")
      assert.strictEqual(repository.speed_mode, "FAST")
      assert.strictEqual(repository.agent_provider, "AGENT_ONE")
      assert.deepStrictEqual(repository.secondary_repository_ids, [f.sibling.id])
      assert.deepStrictEqual(repository.sources, {
        agent: "REPOSITORY",
        instructions: "ORGANIZATION",
        mcp: "DEFAULT",
        review_policy: "REPOSITORY",
        sandbox: "DEFAULT",
        skills: "DEFAULT"
      })
      // The organization changes a field the repository does not set: the repository follows.
      expectStatus(204, yield* send("PUT", f.admin.cookie, f.orgPath, { speed_mode: "STANDARD" }))
      assert.strictEqual((yield* read(f.member.cookie, f.repoPath)).speed_mode, "STANDARD")
      // A nested null drops one policy field of the level.
      expectStatus(204, yield* send("PUT", f.admin.cookie, f.orgPath, { review_policy: { strictness: null } }))
      assert.strictEqual((yield* read(f.member.cookie, f.repoPath)).review_policy.strictness, "LOW")
      assert.strictEqual((yield* read(f.member.cookie, f.repoPath)).review_policy.guidance, "Security first.")
    })
  )

  it.effect(
    "a model is checked against the catalog in force: 409 before any, 400 with close matches, variants, effort",
    () =>
      Effect.gen(function* () {
        const f = yield* fixture("lvl-model")
        const before = yield* send("PUT", f.admin.cookie, f.orgPath, { model: "openai/gpt-5" })
        expectStatus(409, before)
        assert.strictEqual(errorCode(before.json), "model_catalog_unavailable")
        assert.include(before.text, "connect agent credentials first")
        // Nothing was written by the refused PUT.
        assert.strictEqual((yield* read(f.member.cookie, f.orgPath)).sources.agent, "DEFAULT")

        yield* discovered("lvl-model")
        // With no model set, the default pick is in force: tool-calling, reasoning, largest context, shortest id.
        const unknown = yield* send("PUT", f.admin.cookie, f.orgPath, { model: "openai/gpt5" })
        expectStatus(400, unknown)
        assert.strictEqual(errorCode(unknown.json), "unknown_model")
        const message = (unknown.json as { error: { message: string } }).error.message
        assert.include(message, 'provider "openai"')
        assert.include(message, "close matches: openai/gpt-5")
        assert.include(message, '"model"')

        const otherProvider = yield* send("PUT", f.admin.cookie, f.orgPath, { model: "anthropic/claude-sonnet-4" })
        expectStatus(400, otherProvider)
        assert.include(otherProvider.text, 'no provider \\"anthropic\\"')

        expectStatus(
          204,
          yield* send("PUT", f.admin.cookie, f.orgPath, { model: "openai/gpt-5", model_variant: "high" })
        )
        const variant = yield* send("PUT", f.admin.cookie, f.orgPath, { model_variant: "turbo" })
        expectStatus(400, variant)
        assert.strictEqual(errorCode(variant.json), "unknown_model_variant")
        assert.include(variant.text, "minimal, high")
        // Changing the model to one without the variant needs the variant dropped too.
        const stale = yield* send("PUT", f.admin.cookie, f.orgPath, { model: "openai/gpt-5-mini" })
        expectStatus(400, stale)
        assert.include(stale.text, "set model_variant to null")
        expectStatus(
          204,
          yield* send("PUT", f.admin.cookie, f.orgPath, { model: "openai/gpt-5-mini", model_variant: null })
        )

        const effort = yield* send("PUT", f.admin.cookie, f.repoPath, {
          model: "openai/gpt-4o",
          reasoning_effort: "high"
        })
        expectStatus(400, effort)
        assert.strictEqual(errorCode(effort.json), "reasoning_not_supported")
        expectStatus(204, yield* send("PUT", f.admin.cookie, f.repoPath, { model: "openai/gpt-4o" }))
        const repository = yield* read(f.member.cookie, f.repoPath)
        assert.strictEqual(repository.model, "openai/gpt-4o")
        assert.strictEqual(repository.model_variant, "")
        assert.strictEqual((yield* read(f.member.cookie, f.orgPath)).model, "openai/gpt-5-mini")
      })
  )

  it.effect("MCP headers are sealed, never returned, kept by null, and refused when null names nothing stored", () =>
    Effect.gen(function* () {
      const f = yield* fixture("lvl-mcp")
      const secret = "Bearer mcp-secret-0123456789abcdef"
      expectStatus(
        204,
        yield* send("PUT", f.admin.cookie, f.orgPath, {
          mcp_servers: [{ name: "docs", url: "https://mcp.example.com/v1", headers: { Authorization: secret } }]
        })
      )
      const response = yield* send("GET", f.member.cookie, f.orgPath)
      assert.notInclude(response.text, "mcp-secret")
      assert.deepStrictEqual((response.json as { data: RepositoryConfiguration }).data.mcp_servers, [
        { name: "docs", url: "https://mcp.example.com/v1", header_names: ["Authorization"] }
      ])
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ headers: Uint8Array }>`
        SELECT headers FROM mcp_server_secrets WHERE organization_id = 'lvl-mcp'`
      assert.lengthOf(rows, 1)
      assert.notInclude(Buffer.from(rows[0]?.headers ?? []).toString("latin1"), "mcp-secret")
      const stored = yield* sql<{ value: string }>`
        SELECT value::text AS value FROM configuration_groups WHERE organization_id = 'lvl-mcp'`
      assert.notInclude(JSON.stringify(stored), "mcp-secret")

      // null keeps the stored value; the URL changes.
      expectStatus(
        204,
        yield* send("PUT", f.admin.cookie, f.orgPath, {
          mcp_servers: [{ name: "docs", url: "https://mcp.example.com/v2", headers: { Authorization: null } }]
        })
      )
      const configurations = yield* ConfigurationRepo
      assert.deepStrictEqual(yield* configurations.mcpServersForRun("lvl-mcp", f.repository.id), [
        { name: "docs", url: "https://mcp.example.com/v2", headers: { Authorization: secret } }
      ])
      const unknown = yield* send("PUT", f.admin.cookie, f.orgPath, {
        mcp_servers: [{ name: "docs", url: "https://mcp.example.com/v2", headers: { "X-Api-Key": null } }]
      })
      expectStatus(400, unknown)
      assert.strictEqual(errorCode(unknown.json), "mcp_header_unknown")
      // Dropping the servers drops their sealed headers.
      expectStatus(204, yield* send("PUT", f.admin.cookie, f.orgPath, { mcp_servers: [] }))
      assert.lengthOf(yield* sql`SELECT 1 FROM mcp_server_secrets WHERE organization_id = 'lvl-mcp'`, 0)
      assert.deepStrictEqual(yield* configurations.mcpServersForRun("lvl-mcp", f.repository.id), [])
    })
  )

  it.effect("serves the .bosun.yaml JSON Schema and the instance's sandbox providers without a session", () =>
    Effect.gen(function* () {
      const schema = yield* request("/api/v1/schemas/bosun-config.json")
      expectStatus(200, schema)
      assert.deepStrictEqual(schema.json, bosunConfigJsonSchema)
      const instance = yield* request("/api/v1/instance")
      expectStatus(200, instance)
      assert.deepStrictEqual((instance.json as { data: { sandbox_providers: unknown } }).data.sandbox_providers, [
        "EXTERNAL_RUNTIME"
      ])
    })
  )

  describe("refusals", () => {
    it.effect("answers 400 naming the field for every bad input and writes nothing; a member gets 403", () =>
      Effect.gen(function* () {
        const f = yield* fixture("lvl-bad")
        const long = "x".repeat(20_001)
        const cases: ReadonlyArray<readonly [string, string, Json]> = [
          ["custom_instructions", f.orgPath, { custom_instructions: long }],
          ["guidance", f.orgPath, { review_policy: { guidance: long } }],
          ["agent_behavior_custom", f.repoPath, { agent_behavior_custom: long }],
          ["excluded_paths", f.repoPath, { review_policy: { excluded_paths: ["src/[a"] } }],
          ["mcp_servers", f.orgPath, { mcp_servers: [{ name: "docs", url: "http://mcp.example.com/v1" }] }],
          ["mcp_servers", f.orgPath, { mcp_servers: [{ name: "docs", url: "ftp://127.0.0.1/x" }] }],
          ["mcp_servers", f.orgPath, { mcp_servers: [{ name: "Docs!", url: "https://mcp.example.com" }] }],
          [
            "mcp_servers",
            f.orgPath,
            { mcp_servers: [{ name: "a", url: "https://x.example", headers: { A: "x\ny" } }] }
          ],
          [
            "mcp_servers",
            f.orgPath,
            {
              mcp_servers: [
                { name: "a", url: "https://x.example" },
                { name: "a", url: "https://y.example" }
              ]
            }
          ],
          ["skills", f.orgPath, { skills: [{ name: "Bad Name", content: "x" }] }],
          ["skills", f.orgPath, { skills: [{ name: "-dash", content: "x" }] }],
          [
            "skills",
            f.orgPath,
            {
              skills: [
                { name: "ok", content: "x" },
                { name: "ok", content: "y" }
              ]
            }
          ],
          ["colour", f.orgPath, { colour: "blue" }],
          ["colour", f.repoPath, { review_policy: { colour: "blue" } }],
          ["speed_mode", f.orgPath, { speed_mode: "LUDICROUS" }],
          ["reasoning_effort", f.orgPath, { reasoning_effort: "max" }],
          ["auto_approve_pull_requests", f.orgPath, { auto_approve_pull_requests: "yes" }],
          ["pull_request_template_path", f.repoPath, { pull_request_template_path: "../outside.md" }],
          ["secondary_repository_ids", f.orgPath, { secondary_repository_ids: [f.sibling.id] }],
          ["secondary_repository_ids", f.repoPath, { secondary_repository_ids: ["not-a-repository"] }],
          ["model", f.orgPath, { model: "has spaces/in it" }]
        ]
        for (const [field, path, body] of cases) {
          const response = yield* send("PUT", f.admin.cookie, path, body)
          assert.strictEqual(response.status, 400, `${field}: ${response.text}`)
          assert.include((response.json as { error: { message: string } }).error.message, field, response.text)
        }
        const member = yield* send("PUT", f.member.cookie, f.orgPath, { custom_instructions: "Mine now." })
        expectStatus(403, member)
        expectStatus(403, yield* send("DELETE", f.member.cookie, `${f.orgPath}/agent`))
        const sql = yield* SqlClient.SqlClient
        const written = yield* sql`SELECT 1 FROM configuration_groups WHERE organization_id = 'lvl-bad'`
        assert.lengthOf(written, 0)
        for (const path of [f.orgPath, f.repoPath]) {
          const configuration = yield* read(f.member.cookie, path)
          assert.deepStrictEqual(Object.values(configuration.sources), Array(6).fill("DEFAULT"))
        }
        const unknownGroup = yield* send("DELETE", f.admin.cookie, `${f.orgPath}/colour`)
        expectStatus(400, unknownGroup)
        assert.strictEqual(errorCode(unknownGroup.json), "invalid_path_parameter")
      })
    )
  })
})

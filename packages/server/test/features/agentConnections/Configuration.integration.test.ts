/**
 * Repository configuration over real HTTP (docs/interface.md: Organization endpoints,
 * Resources "Repository configuration", "review_policy"; Trust boundaries 3; Errors 6): defaults,
 * organization values and repository overrides with their `overrides`/`sources`; the PUT's
 * validation (a PUT of the six fields the interface names; the partial writes and both levels have
 * their own suite); AGENT_ONE on PLATFORM_CONTAINER accepted with a BLOCKING readiness finding;
 * 401, 404 across organizations, 403 below ADMIN.
 */
import {
  AGENT_ONE_ON_PLATFORM_CONTAINER,
  DEFAULT_CONFIGURATION,
  isWellFormedGlob,
  type RepositoryConfiguration
} from "@bosun/domain"
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../../../src/features/agentConnections/ConfigurationRepo.ts"
import { RepositoriesRepo } from "../../../src/features/repositories/RepositoriesRepo.ts"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

const validUpdate = {
  agent_provider: "OPENCODE",
  automatic_pr_description: "ENABLED",
  issue_pull_request_mode: "READY",
  review_policy: {
    comment_limit: 0,
    excluded_authors: ["dependabot"],
    excluded_paths: ["**/*.lock", "vendor/{a,b}/**"],
    max_changed_files: 1,
    review_drafts: true,
    review_on_open: true,
    review_on_push: false,
    review_on_ready: true,
    review_on_reopen: true,
    strictness: "HIGH"
  },
  sandbox_config: { image: "node:24", nested: { cpu: 2 } },
  sandbox_provider: "HOSTED_SANDBOX"
} as const

const put = (cookie: string, org: string, repositoryId: string, body: unknown) =>
  request(`/api/v1/organizations/${org}/repositories/${repositoryId}/configuration`, {
    method: "PUT",
    headers: { cookie, "content-type": "application/json" },
    body: JSON.stringify(body)
  })

const get = (cookie: string, org: string, repositoryId: string) =>
  Effect.map(
    request(`/api/v1/organizations/${org}/repositories/${repositoryId}/configuration`, { headers: { cookie } }),
    (response) => {
      assert.strictEqual(response.status, 200, response.text)
      return (response.json as { data: RepositoryConfiguration }).data
    }
  )

const fixture = (org: string) =>
  Effect.gen(function* () {
    const repositories = yield* RepositoriesRepo
    const admin = yield* signIn(`cfg-admin-${org}`, [[org, "ADMIN"]])
    const member = yield* signIn(`cfg-member-${org}`, [[org, "MEMBER"]])
    const repository = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: "acme",
      name: org,
      defaultBranch: "main"
    })
    return { admin, member, repository }
  })

const allDefaults = {
  ...DEFAULT_CONFIGURATION.agent,
  ...DEFAULT_CONFIGURATION.instructions,
  ...DEFAULT_CONFIGURATION.mcp,
  ...DEFAULT_CONFIGURATION.review_policy,
  ...DEFAULT_CONFIGURATION.sandbox,
  ...DEFAULT_CONFIGURATION.skills,
  path_instructions: [],
  config_file: null,
  model_in_force: null,
  overrides: { agent: false, instructions: false, mcp: false, review_policy: false, sandbox: false, skills: false },
  sources: {
    agent: "DEFAULT",
    instructions: "DEFAULT",
    mcp: "DEFAULT",
    review_policy: "DEFAULT",
    sandbox: "DEFAULT",
    skills: "DEFAULT"
  }
} as const

layer(layerTestServer(), { excludeTestServices: true })("repository configuration", (it) => {
  it.effect("starts from Bosun's defaults, every field of the spec's aggregate, all sources DEFAULT", () =>
    Effect.gen(function* () {
      const f = yield* fixture("cfg-defaults")
      const configuration = yield* get(f.member.cookie, "cfg-defaults", f.repository.id)
      assert.deepStrictEqual(configuration, allDefaults)
      assert.deepStrictEqual(Object.keys(configuration).sort(), [
        "agent_behavior",
        "agent_behavior_custom",
        "agent_provider",
        "agent_use_cases",
        "auto_approve_pull_requests",
        "auto_handle_pull_request_feedback",
        "automatic_pr_description",
        "config_file",
        "custom_instructions",
        "design_style",
        "design_style_custom",
        "issue_pull_request_mode",
        "mcp_servers",
        "model",
        "model_in_force",
        "model_variant",
        "overrides",
        "path_instructions",
        "pull_request_template_path",
        "reasoning_effort",
        "review_policy",
        "sandbox_config",
        "sandbox_provider",
        "secondary_repository_ids",
        "skills",
        "sources",
        "speed_mode"
      ])
    })
  )

  it.effect("overlays organization values, then the repository's PUT, group by group", () =>
    Effect.gen(function* () {
      const f = yield* fixture("cfg-overlay")
      const configurations = yield* ConfigurationRepo
      yield* configurations.setOrganizationGroup(
        "cfg-overlay",
        "agent",
        { ...DEFAULT_CONFIGURATION.agent, model: "org-model", reasoning_effort: "high" },
        null
      )
      yield* configurations.setOrganizationGroup(
        "cfg-overlay",
        "instructions",
        { custom_instructions: "Be terse." },
        null
      )
      yield* configurations.setOrganizationGroup(
        "cfg-overlay",
        "review_policy",
        { review_policy: { ...DEFAULT_CONFIGURATION.review_policy.review_policy, guidance: "Org guidance" } },
        null
      )
      const inherited = yield* get(f.member.cookie, "cfg-overlay", f.repository.id)
      assert.strictEqual(inherited.model, "org-model")
      assert.strictEqual(inherited.custom_instructions, "Be terse.")
      assert.deepStrictEqual(inherited.sources, {
        ...allDefaults.sources,
        agent: "ORGANIZATION",
        instructions: "ORGANIZATION",
        review_policy: "ORGANIZATION"
      })

      const response = yield* put(f.admin.cookie, "cfg-overlay", f.repository.id, validUpdate)
      assert.strictEqual(response.status, 204)
      assert.strictEqual(response.text, "")
      const updated = yield* get(f.member.cookie, "cfg-overlay", f.repository.id)
      assert.deepStrictEqual(updated.overrides, {
        agent: true,
        instructions: false,
        mcp: false,
        review_policy: true,
        sandbox: true,
        skills: false
      })
      assert.deepStrictEqual(updated.sources, {
        agent: "REPOSITORY",
        instructions: "ORGANIZATION",
        mcp: "DEFAULT",
        review_policy: "REPOSITORY",
        sandbox: "REPOSITORY",
        skills: "DEFAULT"
      })
      assert.strictEqual(updated.agent_provider, "OPENCODE")
      assert.strictEqual(updated.automatic_pr_description, "ENABLED")
      assert.strictEqual(updated.issue_pull_request_mode, "READY")
      // The agent group's other fields are still the organization's: a level stores only what it sets.
      assert.strictEqual(updated.model, "org-model")
      assert.strictEqual(updated.reasoning_effort, "high")
      assert.deepStrictEqual(updated.review_policy, { ...validUpdate.review_policy, guidance: "Org guidance" })
      assert.deepStrictEqual(updated.sandbox_config, validUpdate.sandbox_config)
      assert.strictEqual(updated.sandbox_provider, "HOSTED_SANDBOX")
      const sql = yield* SqlClient.SqlClient
      const [audit] = yield* sql<{ n: string }>`
        SELECT count(*)::text AS n FROM audit_events WHERE action = 'repository.configure' AND organization_id = 'cfg-overlay'`
      assert.strictEqual(audit?.n, "1")
    })
  )

  it.effect("accepts AGENT_ONE on PLATFORM_CONTAINER with a BLOCKING readiness finding, cleared when changed", () =>
    Effect.gen(function* () {
      const f = yield* fixture("cfg-blocking")
      const sql = yield* SqlClient.SqlClient
      const blocked = yield* put(f.admin.cookie, "cfg-blocking", f.repository.id, {
        ...validUpdate,
        agent_provider: "AGENT_ONE",
        sandbox_provider: "PLATFORM_CONTAINER"
      })
      assert.strictEqual(blocked.status, 204)
      const configuration = yield* get(f.member.cookie, "cfg-blocking", f.repository.id)
      assert.deepStrictEqual(
        [configuration.agent_provider, configuration.sandbox_provider],
        ["AGENT_ONE", "PLATFORM_CONTAINER"]
      )
      const repository = yield* request(`/api/v1/organizations/cfg-blocking/repositories/${f.repository.id}`, {
        headers: { cookie: f.member.cookie }
      })
      assert.strictEqual((repository.json as { data: { readiness_status: string } }).data.readiness_status, "BLOCKING")
      const findings = yield* sql<{ severity: string; message: string }>`
        SELECT severity, message FROM readiness_findings WHERE repository_id = ${f.repository.id}`
      assert.deepStrictEqual(findings, [{ severity: "BLOCKING", message: AGENT_ONE_ON_PLATFORM_CONTAINER }])

      assert.strictEqual(
        (yield* put(f.admin.cookie, "cfg-blocking", f.repository.id, { ...validUpdate, agent_provider: "AGENT_ONE" }))
          .status,
        204
      )
      const after = yield* request(`/api/v1/organizations/cfg-blocking/repositories/${f.repository.id}`, {
        headers: { cookie: f.member.cookie }
      })
      assert.strictEqual((after.json as { data: { readiness_status: string } }).data.readiness_status, "NOT_RUN")
      const remaining = yield* sql`SELECT 1 FROM readiness_findings WHERE repository_id = ${f.repository.id}`
      assert.lengthOf(remaining, 0)
    })
  )

  describe("refusals", () => {
    it.effect("answers 400 naming the field for every validation rule, writing nothing", () =>
      Effect.gen(function* () {
        const f = yield* fixture("cfg-invalid")
        const policy = validUpdate.review_policy
        const cases: ReadonlyArray<readonly [string, unknown]> = [
          ["comment_limit", { ...validUpdate, review_policy: { ...policy, comment_limit: -1 } }],
          ["comment_limit", { ...validUpdate, review_policy: { ...policy, comment_limit: 1.5 } }],
          ["max_changed_files", { ...validUpdate, review_policy: { ...policy, max_changed_files: 0 } }],
          ["excluded_paths", { ...validUpdate, review_policy: { ...policy, excluded_paths: ["src/[a"] } }],
          ["excluded_paths", { ...validUpdate, review_policy: { ...policy, excluded_paths: ["{a,b"] } }],
          ["excluded_paths", { ...validUpdate, review_policy: { ...policy, excluded_paths: [""] } }],
          ["strictness", { ...validUpdate, review_policy: { ...policy, strictness: "EXTREME" } }],
          ["agent_provider", { ...validUpdate, agent_provider: "CLAUDE" }],
          ["sandbox_provider", { ...validUpdate, sandbox_provider: "LAPTOP" }],
          ["issue_pull_request_mode", { ...validUpdate, issue_pull_request_mode: "draft" }],
          ["automatic_pr_description", { ...validUpdate, automatic_pr_description: true }],
          ["sandbox_config", { ...validUpdate, sandbox_config: ["not", "an", "object"] }],
          ["review_on_push", { ...validUpdate, review_policy: { ...policy, review_on_push: "yes" } }]
        ]
        for (const [field, body] of cases) {
          const response = yield* put(f.admin.cookie, "cfg-invalid", f.repository.id, body)
          assert.strictEqual(response.status, 400, `${field}: ${response.text}`)
          assert.strictEqual(errorCode(response.json), "invalid_body")
          assert.include((response.json as { error: { message: string } }).error.message, field)
        }
        const unknown = yield* put(f.admin.cookie, "cfg-invalid", f.repository.id, { ...validUpdate, colour: "blue" })
        assert.strictEqual(unknown.status, 400)
        assert.include((unknown.json as { error: { message: string } }).error.message, "colour")
        assert.deepStrictEqual(
          (yield* get(f.member.cookie, "cfg-invalid", f.repository.id)).sources,
          allDefaults.sources
        )
      })
    )

    it.effect("answers 401 without a session, 404 across organizations, 403 for a MEMBER", () =>
      Effect.gen(function* () {
        const f = yield* fixture("cfg-guard")
        const other = yield* fixture("cfg-guard-other")
        const anonymous = yield* request(
          `/api/v1/organizations/cfg-guard/repositories/${f.repository.id}/configuration`
        )
        assert.strictEqual(anonymous.status, 401)
        for (const [cookie, org, repositoryId] of [
          [f.admin.cookie, "cfg-guard", other.repository.id],
          [f.admin.cookie, "cfg-guard-other", other.repository.id],
          [f.admin.cookie, "cfg-guard", "missing-repository"]
        ] as const) {
          const read = yield* request(`/api/v1/organizations/${org}/repositories/${repositoryId}/configuration`, {
            headers: { cookie }
          })
          assert.strictEqual(read.status, 404, `${org}/${repositoryId}`)
          assert.strictEqual((yield* put(cookie, org, repositoryId, validUpdate)).status, 404)
        }
        const member = yield* put(f.member.cookie, "cfg-guard", f.repository.id, validUpdate)
        assert.strictEqual(member.status, 403)
        assert.deepStrictEqual(
          (yield* get(other.admin.cookie, "cfg-guard-other", other.repository.id)).sources,
          allDefaults.sources
        )
      })
    )
  })

  it("checks that a glob's brackets, braces and parentheses pair up", () => {
    for (const glob of ["**/*.ts", "src/{a,b}/**", "file[0-9].txt", "!(*.md)", "a\\[b", "[{]"]) {
      assert.isTrue(isWellFormedGlob(glob), glob)
    }
    for (const glob of ["", "[", "{a,b", "(x", "a]", "}", "x".repeat(513)]) {
      assert.isFalse(isWellFormedGlob(glob), glob)
    }
  })
})

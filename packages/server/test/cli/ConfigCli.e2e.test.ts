/**
 * `bosun config get|set|reset` as processes on the server's database: writes at the organization
 * and the repository level read back with their sources, `null` and `reset` inheriting again,
 * refusals (no model catalog, a bad value, an unknown field) exiting non-zero with nothing
 * written, and every write audited as the operator.
 */
import { randomBytes } from "node:crypto"
import { LogCapture, TestDatabase } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { AppServicesLive } from "../../src/app/Server.ts"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { AppConfig } from "../../src/platform/config/AppConfig.ts"
import { Migrator } from "../../src/platform/db/Migrator.ts"
import { runCli } from "../support/Process.ts"
import { layerTestSecrets, testSettings } from "../support/TestServer.ts"

const masterKey = randomBytes(32).toString("base64")

const services = AppServicesLive.pipe(
  Layer.provideMerge(Migrator.layer),
  Layer.tap((context) => Context.get(context, Migrator).awaitReady),
  Layer.provideMerge(
    layerTestSecrets({ masterKey: { key: Redacted.make(masterKey), version: 1, previous: new Map() } })
  ),
  Layer.provide(Layer.succeed(AppConfig, AppConfig.of(testSettings())))
)

const bosun = (args: ReadonlyArray<string>) =>
  Effect.flatMap(TestDatabase, (database) =>
    runCli(args, {
      DATABASE_URL: database.url,
      BOSUN_DATA_DIR: "/nonexistent/never-created",
      BOSUN_MASTER_KEY: masterKey
    })
  )

/** An organization with the repository acme/widgets; answers the repository's id. */
const seed = (org: string) =>
  Effect.gen(function* () {
    yield* (yield* OrganizationsRepo).ensure(org)
    const repository = yield* (yield* RepositoriesRepo).upsert(org, {
      githubRepositoryId: null,
      owner: "acme",
      name: "widgets",
      defaultBranch: "main"
    })
    return repository.id
  }).pipe(Effect.provide(services))

interface ReadForm {
  readonly custom_instructions: string
  readonly model: string
  readonly review_policy: {
    readonly comment_limit: number
    readonly strictness: string
    readonly review_drafts: boolean
  }
  readonly sources: Record<string, string>
  readonly overrides: Record<string, boolean>
}

const readForm = (org: string) =>
  Effect.map(bosun(["config", "get", "--org", org, "--repo", "acme/widgets", "--json"]), (result) => {
    assert.strictEqual(result.code, 0, result.stderr)
    return JSON.parse(result.stdout) as ReadForm
  })

const groupRows = (org: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ repository_id: string | null; group_name: string }>`
      SELECT repository_id, group_name FROM configuration_groups WHERE organization_id = ${org}
      ORDER BY group_name, repository_id NULLS FIRST`
  )

layer(Layer.mergeAll(TestDatabase.layer, LogCapture.layer), { excludeTestServices: true })("bosun config", (it) => {
  it.effect(
    "set at the organization is read at the repository with its source; a repository's own value overrides, null inherits again",
    () =>
      Effect.gen(function* () {
        const repositoryId = yield* seed("cfg-org")

        const set = yield* bosun(["config", "set", "--org", "cfg-org", "custom_instructions", "Be terse."])
        assert.strictEqual(set.code, 0, set.stderr)
        assert.strictEqual(
          set.stdout,
          'custom_instructions of organization cfg-org is set\ncustom_instructions = "Be terse."   (ORGANIZATION)\n'
        )
        const one = yield* bosun(["config", "get", "--org", "cfg-org", "--repo", "acme/widgets", "custom_instructions"])
        assert.strictEqual(one.code, 0, one.stderr)
        assert.strictEqual(one.stdout, '"Be terse."   (ORGANIZATION)\n')

        const limit = yield* bosun([
          "config",
          "set",
          "--org",
          "cfg-org",
          "--repo",
          "acme/widgets",
          "review_policy.comment_limit",
          "3"
        ])
        assert.strictEqual(limit.code, 0, limit.stderr)
        const after = yield* readForm("cfg-org")
        assert.strictEqual(after.review_policy.comment_limit, 3)
        assert.strictEqual(after.review_policy.strictness, "LOW")
        assert.strictEqual(after.sources.review_policy, "REPOSITORY")
        assert.strictEqual(after.overrides.review_policy, true)
        assert.strictEqual(after.custom_instructions, "Be terse.")
        assert.strictEqual(after.sources.instructions, "ORGANIZATION")
        assert.strictEqual(after.overrides.instructions, false)
        assert.strictEqual(after.sources.agent, "DEFAULT")

        const listing = yield* bosun(["config", "get", "--org", "cfg-org", "--repo", "acme/widgets"])
        assert.strictEqual(listing.code, 0, listing.stderr)
        const lines = listing.stdout.trimEnd().split("\n")
        assert.include(lines, "review_policy.comment_limit = 3   (REPOSITORY)")
        assert.include(lines, 'review_policy.strictness = "LOW"   (REPOSITORY)')
        assert.include(lines, 'custom_instructions = "Be terse."   (ORGANIZATION)')
        assert.include(lines, 'model = ""   (DEFAULT)')
        assert.include(lines, "config_file = null")

        const bare = yield* bosun([
          "config",
          "get",
          "--org",
          "cfg-org",
          "--repo",
          "acme/widgets",
          "review_policy.comment_limit",
          "--json"
        ])
        assert.strictEqual(bare.code, 0, bare.stderr)
        assert.strictEqual(bare.stdout, "3\n")

        const inherit = yield* bosun([
          "config",
          "set",
          "--org",
          "cfg-org",
          "--repo",
          "acme/widgets",
          "review_policy.comment_limit",
          "null"
        ])
        assert.strictEqual(inherit.code, 0, inherit.stderr)
        assert.strictEqual(
          inherit.stdout,
          "review_policy.comment_limit of repository acme/widgets of organization cfg-org inherits again\n" +
            "review_policy.comment_limit = 10   (DEFAULT)\n"
        )
        const inherited = yield* readForm("cfg-org")
        assert.strictEqual(inherited.review_policy.comment_limit, 10)
        assert.strictEqual(inherited.sources.review_policy, "DEFAULT")
        assert.strictEqual(inherited.overrides.review_policy, false)

        assert.deepStrictEqual(yield* groupRows("cfg-org"), [{ repository_id: null, group_name: "instructions" }])
        const sql = yield* SqlClient.SqlClient
        const audit = yield* sql<{ actor_kind: string; action: string; target: string; details: unknown }>`
          SELECT actor_kind, action, target, details FROM audit_events
          WHERE organization_id = 'cfg-org' ORDER BY id`
        assert.deepStrictEqual(audit, [
          {
            actor_kind: "operator",
            action: "organization.configure",
            target: "organization:cfg-org",
            details: { fields: "custom_instructions" }
          },
          {
            actor_kind: "operator",
            action: "repository.configure",
            target: `repository:${repositoryId}`,
            details: { fields: "review_policy" }
          },
          {
            actor_kind: "operator",
            action: "repository.configure",
            target: `repository:${repositoryId}`,
            details: { fields: "review_policy" }
          }
        ])
      })
  )

  it.effect(
    "a model without a catalog, a bad value and an unknown field exit non-zero and write nothing; so does an unknown repository",
    () =>
      Effect.gen(function* () {
        yield* seed("cfg-refused")

        const model = yield* bosun(["config", "set", "--org", "cfg-refused", "model", "openai/gpt-5"])
        assert.notStrictEqual(model.code, 0)
        assert.include(model.stderr, "connect agent credentials first")
        assert.include(model.stderr, "model_catalog_unavailable")
        assert.strictEqual(model.stdout, "")

        const strictness = yield* bosun([
          "config",
          "set",
          "--org",
          "cfg-refused",
          "--repo",
          "acme/widgets",
          "review_policy.strictness",
          "EXTREME"
        ])
        assert.notStrictEqual(strictness.code, 0)
        assert.include(strictness.stderr, "invalid value for review_policy.strictness")
        assert.include(strictness.stderr, '"HIGH"')
        assert.notInclude(strictness.stderr, "EXTREME")

        const excess = yield* bosun(["config", "set", "--org", "cfg-refused", "review_policy", '{"loudness":3}'])
        assert.notStrictEqual(excess.code, 0)
        assert.include(excess.stderr, "review_policy.loudness")

        const unknown = yield* bosun(["config", "set", "--org", "cfg-refused", "colour", "blue"])
        assert.notStrictEqual(unknown.code, 0)
        assert.include(unknown.stderr, "unknown field colour; the fields are ")
        assert.include(unknown.stderr, "review_policy.comment_limit")

        const unknownGet = yield* bosun(["config", "get", "--org", "cfg-refused", "colour"])
        assert.notStrictEqual(unknownGet.code, 0)
        assert.include(unknownGet.stderr, "unknown field colour")

        const noRepository = yield* bosun(["config", "get", "--org", "cfg-refused", "--repo", "acme/gadgets", "model"])
        assert.notStrictEqual(noRepository.code, 0)
        assert.include(noRepository.stderr, "organization cfg-refused has no repository acme/gadgets")

        const noOrganization = yield* bosun(["config", "get", "--org", "cfg-nobody"])
        assert.notStrictEqual(noOrganization.code, 0)
        assert.include(noOrganization.stderr, "no organization has the id cfg-nobody")

        assert.deepStrictEqual(yield* groupRows("cfg-refused"), [])
        const sql = yield* SqlClient.SqlClient
        const audit = yield* sql`SELECT 1 FROM audit_events WHERE organization_id = 'cfg-refused'`
        assert.strictEqual(audit.length, 0)
      })
  )

  it.effect("reset drops the repository's group so it inherits the organization's again", () =>
    Effect.gen(function* () {
      const repositoryId = yield* seed("cfg-reset")

      const organization = yield* bosun(["config", "set", "--org", "cfg-reset", "review_policy.review_drafts", "true"])
      assert.strictEqual(organization.code, 0, organization.stderr)
      const repository = yield* bosun([
        "config",
        "set",
        "--org",
        "cfg-reset",
        "--repo",
        "acme/widgets",
        "review_policy.strictness",
        "HIGH"
      ])
      assert.strictEqual(repository.code, 0, repository.stderr)
      const before = yield* readForm("cfg-reset")
      assert.strictEqual(before.review_policy.strictness, "HIGH")
      assert.strictEqual(before.review_policy.review_drafts, true)
      assert.strictEqual(before.sources.review_policy, "REPOSITORY")

      const reset = yield* bosun(["config", "reset", "review_policy", "--org", "cfg-reset", "--repo", "acme/widgets"])
      assert.strictEqual(reset.code, 0, reset.stderr)
      const lines = reset.stdout.trimEnd().split("\n")
      assert.strictEqual(lines[0], "review_policy of repository acme/widgets of organization cfg-reset inherits again")
      assert.include(lines, "review_policy.review_drafts = true   (ORGANIZATION)")
      assert.include(lines, 'review_policy.strictness = "LOW"   (ORGANIZATION)')

      const after = yield* readForm("cfg-reset")
      assert.strictEqual(after.review_policy.strictness, "LOW")
      assert.strictEqual(after.review_policy.review_drafts, true)
      assert.strictEqual(after.sources.review_policy, "ORGANIZATION")
      assert.strictEqual(after.overrides.review_policy, false)

      assert.deepStrictEqual(yield* groupRows("cfg-reset"), [{ repository_id: null, group_name: "review_policy" }])
      const sql = yield* SqlClient.SqlClient
      const audit = yield* sql<{ actor_kind: string; action: string; target: string; details: unknown }>`
        SELECT actor_kind, action, target, details FROM audit_events
        WHERE organization_id = 'cfg-reset' ORDER BY id`
      assert.deepStrictEqual(audit.at(-1), {
        actor_kind: "operator",
        action: "repository.configure",
        target: `repository:${repositoryId}`,
        details: { reset: "review_policy" }
      })
      assert.deepStrictEqual(
        audit.map((row) => row.actor_kind),
        ["operator", "operator", "operator"]
      )
    })
  )
})

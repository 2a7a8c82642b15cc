import { assert, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { OrganizationSecretsRepo } from "../../../src/features/secrets/OrganizationSecretsRepo.ts"
import { layerTestServices } from "../../support/TestServices.ts"

const Services = layerTestServices

layer(Services, { excludeTestServices: true })("OrganizationSecretsRepo", (it) => {
  it.effect("stores a value sealed and reads it back; a new value replaces it in the same row", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* OrganizationSecretsRepo
      yield* sql`INSERT INTO organizations (id, name) VALUES ('org-us', 'org-us')`
      yield* repo.put("org-us", "API_TOKEN", Redacted.make("first-value-1a2b"))
      const [first] = yield* sql<{ id: string }>`SELECT id FROM organization_secrets WHERE name = 'API_TOKEN'`
      yield* repo.put("org-us", "API_TOKEN", Redacted.make("second-value-3c4d"))
      const rows = yield* sql<{ id: string; plain: number }>`
        SELECT id, position(convert_to('second-value-3c4d', 'UTF8') in value) AS plain
        FROM organization_secrets WHERE organization_id = 'org-us'`
      assert.deepStrictEqual(rows, [{ id: first?.id ?? "", plain: 0 }])
      const read = yield* repo.get("org-us", "API_TOKEN")
      assert.strictEqual(Redacted.value(Option.getOrThrow(read)), "second-value-3c4d")
      assert.isTrue(Option.isNone(yield* repo.get("org-us", "MISSING")))
      assert.isTrue(Option.isNone(yield* repo.get("org-other", "API_TOKEN")))
    })
  )

  it.effect("refuses a name that a secrets reference could not name, writing nothing", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* OrganizationSecretsRepo
      yield* sql`INSERT INTO organizations (id, name) VALUES ('org-names', 'org-names')`
      for (const name of ["", "1ABC", "A-B", "a b", "X".repeat(129)]) {
        const error = yield* Effect.flip(repo.put("org-names", name, Redacted.make("value")))
        assert.strictEqual(error._tag, "InvalidSecretName")
        assert.strictEqual(error.name, name)
      }
      const [count] = yield* sql<{ n: string }>`
        SELECT count(*)::text AS n FROM organization_secrets WHERE organization_id = 'org-names'`
      assert.strictEqual(count?.n, "0")
    })
  )

  it.effect("concurrent first writes of one name end as one row holding one of the values", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* OrganizationSecretsRepo
      yield* sql`INSERT INTO organizations (id, name) VALUES ('org-race', 'org-race')`
      const values = Array.from({ length: 8 }, (_, i) => `racing-value-${i}`)
      yield* Effect.forEach(values, (value) => repo.put("org-race", "SHARED", Redacted.make(value)), {
        concurrency: "unbounded",
        discard: true
      })
      const [count] = yield* sql<{ n: string }>`
        SELECT count(*)::text AS n FROM organization_secrets WHERE organization_id = 'org-race'`
      assert.strictEqual(count?.n, "1")
      const stored = Redacted.value(Option.getOrThrow(yield* repo.get("org-race", "SHARED")))
      assert.include(values, stored)
    })
  )
})

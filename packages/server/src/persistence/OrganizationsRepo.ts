/**
 * Organizations (spec: Resources; every organization-scoped record hangs off one). The bootstrap
 * GitHub App endpoint creates the organization it configures when it does not exist yet.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

export class OrganizationsRepo extends Context.Service<
  OrganizationsRepo,
  {
    /** Creates the organization `id` unless it exists; true when it was created. */
    readonly ensure: (id: string) => Effect.Effect<boolean>
  }
>()("bosun/server/persistence/OrganizationsRepo") {
  static readonly layer = Layer.effect(
    OrganizationsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return OrganizationsRepo.of({
        ensure: Effect.fn("OrganizationsRepo.ensure")(function* (id: string) {
          // Named after its id until a GitHub installation tells us the account's name.
          const rows = yield* sql<{ id: string }>`
            INSERT INTO organizations (id, name) VALUES (${id}, ${id})
            ON CONFLICT (id) DO NOTHING RETURNING id`.pipe(Effect.orDie)
          return rows.length > 0
        })
      })
    })
  )
}

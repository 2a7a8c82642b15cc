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
    /** Ties an organization not yet tied to a GitHub account to this one (no-op otherwise). */
    readonly linkGithubAccount: (
      id: string,
      account: { readonly id: number; readonly login: string }
    ) => Effect.Effect<void>
    /** The organizations mirroring these GitHub accounts. */
    readonly byGithubAccounts: (
      accountIds: ReadonlyArray<number>
    ) => Effect.Effect<ReadonlyArray<{ readonly id: string; readonly github_account_id: number }>>
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
        }),
        linkGithubAccount: Effect.fn("OrganizationsRepo.linkGithubAccount")(function* (
          id: string,
          account: { readonly id: number; readonly login: string }
        ) {
          yield* sql`
            UPDATE organizations SET github_account_id = ${account.id}, login = ${account.login}, updated_at = now()
            WHERE id = ${id} AND github_account_id IS NULL
              AND NOT EXISTS (SELECT 1 FROM organizations WHERE github_account_id = ${account.id})`.pipe(Effect.orDie)
        }),
        byGithubAccounts: Effect.fn("OrganizationsRepo.byGithubAccounts")(function* (
          accountIds: ReadonlyArray<number>
        ) {
          if (accountIds.length === 0) return []
          const rows = yield* sql<{ id: string; github_account_id: string }>`
            SELECT id, github_account_id::text AS github_account_id FROM organizations
            WHERE github_account_id = ANY(${accountIds.map((n) => BigInt(n))}::bigint[])`.pipe(Effect.orDie)
          return rows.map((row) => ({ id: row.id, github_account_id: Number(row.github_account_id) }))
        })
      })
    })
  )
}

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
    /** Whether the organization `id` exists. */
    readonly exists: (id: string) => Effect.Effect<boolean>
    /**
     * Ties the organization to a GitHub account by its login (an operator's decision; a verified
     * installation webhook will do the same). Until its first sign-in the account id is unknown.
     */
    readonly setGithubLogin: (id: string, login: string) => Effect.Effect<boolean>
    /**
     * Links the organization to the GitHub account a verified installation names, unless it is
     * linked to another account already; true when it now mirrors that account.
     */
    readonly linkGithubAccount: (
      id: string,
      account: { readonly id: number; readonly login: string }
    ) => Effect.Effect<boolean>
    /**
     * The organizations mirroring these GitHub accounts: by account id, or by the login an
     * operator tied before the id was known (which the id then completes).
     */
    readonly byGithubAccounts: (
      accounts: ReadonlyArray<{ readonly id: number; readonly login: string }>
    ) => Effect.Effect<ReadonlyArray<{ readonly id: string; readonly github_account_id: number }>>
  }
>()("bosun/server/persistence/OrganizationsRepo") {
  static readonly layer = Layer.effect(
    OrganizationsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return OrganizationsRepo.of({
        linkGithubAccount: Effect.fn("OrganizationsRepo.linkGithubAccount")(function* (
          id: string,
          account: { readonly id: number; readonly login: string }
        ) {
          const rows = yield* sql<{ id: string }>`
            UPDATE organizations SET github_account_id = ${account.id}, login = ${account.login}, updated_at = now()
            WHERE id = ${id} AND (github_account_id IS NULL OR github_account_id = ${account.id})
            RETURNING id`.pipe(Effect.orDie)
          return rows.length > 0
        }),
        exists: Effect.fn("OrganizationsRepo.exists")(function* (id: string) {
          const rows = yield* sql<{ id: string }>`SELECT id FROM organizations WHERE id = ${id}`.pipe(Effect.orDie)
          return rows.length > 0
        }),
        ensure: Effect.fn("OrganizationsRepo.ensure")(function* (id: string) {
          // Named after its id until a GitHub installation tells us the account's name.
          const rows = yield* sql<{ id: string }>`
            INSERT INTO organizations (id, name) VALUES (${id}, ${id})
            ON CONFLICT (id) DO NOTHING RETURNING id`.pipe(Effect.orDie)
          return rows.length > 0
        }),
        setGithubLogin: Effect.fn("OrganizationsRepo.setGithubLogin")(function* (id: string, login: string) {
          const rows = yield* sql`
            UPDATE organizations SET login = ${login}, github_account_id = NULL, updated_at = now()
            WHERE id = ${id} RETURNING id`.pipe(Effect.orDie)
          return rows.length > 0
        }),
        byGithubAccounts: Effect.fn("OrganizationsRepo.byGithubAccounts")(function* (
          accounts: ReadonlyArray<{ readonly id: number; readonly login: string }>
        ) {
          const matched: Array<{ id: string; github_account_id: number }> = []
          for (const account of accounts) {
            const rows = yield* sql<{ id: string }>`
              UPDATE organizations SET github_account_id = ${account.id}, login = ${account.login}, updated_at = now()
              WHERE github_account_id = ${account.id}
                 OR (github_account_id IS NULL AND lower(login) = lower(${account.login}))
              RETURNING id`.pipe(Effect.orDie)
            for (const row of rows) matched.push({ id: row.id, github_account_id: account.id })
          }
          return matched
        })
      })
    })
  )
}

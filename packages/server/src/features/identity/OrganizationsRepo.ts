/**
 * Organizations (docs/interface.md: Resources; every organization-scoped record hangs off one). The
 * bootstrap GitHub App endpoint creates the organization it configures when it does not exist yet;
 * which GitHub account it mirrors is the operator's decision (`setGithubAccount`), which an
 * installation may complete but never make.
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
     * Ties the organization to a GitHub account by its login and, when GitHub told it, its id (an
     * operator's decision). Without the id, the first installation or sign-in whose account has
     * that login completes it. "taken" when another organization mirrors that account id.
     */
    readonly setGithubAccount: (
      id: string,
      account: { readonly login: string; readonly id: number | null }
    ) => Effect.Effect<"set" | "missing" | "taken">
    /**
     * Links the organization to the GitHub account a verified installation names, only when it is
     * the account the organization was set up for: its recorded id, else (id not yet known) the
     * operator's login, compared case-insensitively. Otherwise nothing changes and the answer says
     * which login the organization expects (null: the operator named none).
     */
    readonly linkGithubAccount: (
      id: string,
      account: { readonly id: number; readonly login: string }
    ) => Effect.Effect<{ readonly linked: true } | { readonly linked: false; readonly expectedLogin: string | null }>
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
            WHERE id = ${id}
              AND (github_account_id = ${account.id}
                   OR (github_account_id IS NULL AND lower(login) = lower(${account.login})
                       AND NOT EXISTS (SELECT 1 FROM organizations other WHERE other.github_account_id = ${account.id})))
            RETURNING id`.pipe(Effect.orDie)
          if (rows.length > 0) return { linked: true } as const
          const [current] = yield* sql<{ login: string | null }>`
            SELECT login FROM organizations WHERE id = ${id}`.pipe(Effect.orDie)
          return { linked: false, expectedLogin: current?.login ?? null } as const
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
        setGithubAccount: Effect.fn("OrganizationsRepo.setGithubAccount")(function* (
          id: string,
          account: { readonly login: string; readonly id: number | null }
        ) {
          if (account.id !== null) {
            const holders = yield* sql<{ id: string }>`
              SELECT id FROM organizations WHERE github_account_id = ${account.id} AND id <> ${id}`.pipe(Effect.orDie)
            if (holders.length > 0) return "taken" as const
          }
          const rows = yield* sql`
            UPDATE organizations SET login = ${account.login}, github_account_id = ${account.id}, updated_at = now()
            WHERE id = ${id} RETURNING id`.pipe(Effect.orDie)
          return rows.length > 0 ? ("set" as const) : ("missing" as const)
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

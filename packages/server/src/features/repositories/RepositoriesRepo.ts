/**
 * Repositories of an organization (docs/interface.md: Resources "Repository"). Every query filters
 * by the organization: a repository id of another organization is simply not found.
 */
import type { Repository } from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

export class RepositoriesRepo extends Context.Service<
  RepositoriesRepo,
  {
    readonly list: (organizationId: string) => Effect.Effect<ReadonlyArray<Repository>>
    readonly find: (organizationId: string, repositoryId: string) => Effect.Effect<Option.Option<Repository>>
    readonly setEnabled: (
      organizationId: string,
      repositoryId: string,
      enabled: boolean
    ) => Effect.Effect<Option.Option<Repository>>
    /** The repository with this GitHub id, if the organization has it. */
    readonly findByGithubId: (
      organizationId: string,
      githubRepositoryId: number
    ) => Effect.Effect<Option.Option<Repository>>
    /**
     * Flips `available` for the repositories with these GitHub ids, or for all the organization's
     * (the App uninstalled or suspended); answers how many changed.
     */
    readonly setAvailable: (
      organizationId: string,
      githubRepositoryIds: ReadonlyArray<number> | "ALL",
      available: boolean
    ) => Effect.Effect<number>
    /** Records a repository the App reaches (the GitHub integration's write; tests use it too). */
    readonly upsert: (
      organizationId: string,
      repository: {
        readonly githubRepositoryId: number | null
        readonly owner: string
        readonly name: string
        readonly defaultBranch: string
      }
    ) => Effect.Effect<Repository>
    /**
     * Records the default branch's name and head from a push to it (deep scans pin to the head);
     * a push older than the one recorded (`pushedAt`, GitHub's time of the push; now when null)
     * changes nothing. True when recorded.
     */
    readonly setDefaultBranchHead: (
      organizationId: string,
      repositoryId: string,
      head: { readonly branch: string; readonly sha: string; readonly pushedAt: Date | null }
    ) => Effect.Effect<boolean>
  }
>()("bosun/server/persistence/RepositoriesRepo") {
  static readonly layer = Layer.effect(
    RepositoriesRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const columns = sql.literal("id, owner, name, default_branch, enabled, available, readiness_status")
      return RepositoriesRepo.of({
        list: Effect.fn("RepositoriesRepo.list")(function* (organizationId: string) {
          return yield* sql<Repository>`
            SELECT ${columns} FROM repositories WHERE organization_id = ${organizationId}
            ORDER BY lower(owner), lower(name), id`.pipe(Effect.orDie)
        }),
        find: Effect.fn("RepositoriesRepo.find")(function* (organizationId: string, repositoryId: string) {
          const [row] = yield* sql<Repository>`
            SELECT ${columns} FROM repositories
            WHERE organization_id = ${organizationId} AND id = ${repositoryId}`.pipe(Effect.orDie)
          return Option.fromUndefinedOr(row)
        }),
        setEnabled: Effect.fn("RepositoriesRepo.setEnabled")(function* (
          organizationId: string,
          repositoryId: string,
          enabled: boolean
        ) {
          const [row] = yield* sql<Repository>`
            UPDATE repositories SET enabled = ${enabled}, updated_at = now()
            WHERE organization_id = ${organizationId} AND id = ${repositoryId}
            RETURNING ${columns}`.pipe(Effect.orDie)
          return Option.fromUndefinedOr(row)
        }),
        findByGithubId: Effect.fn("RepositoriesRepo.findByGithubId")(function* (
          organizationId: string,
          githubRepositoryId: number
        ) {
          const [row] = yield* sql<Repository>`
            SELECT ${columns} FROM repositories
            WHERE organization_id = ${organizationId} AND github_repository_id = ${githubRepositoryId}`.pipe(
            Effect.orDie
          )
          return Option.fromUndefinedOr(row)
        }),
        setAvailable: Effect.fn("RepositoriesRepo.setAvailable")(function* (
          organizationId: string,
          githubRepositoryIds: ReadonlyArray<number> | "ALL",
          available: boolean
        ) {
          const rows = yield* sql<{ id: string }>`
            UPDATE repositories SET available = ${available}, updated_at = now()
            WHERE organization_id = ${organizationId} AND available <> ${available}
              ${githubRepositoryIds === "ALL" ? sql`` : sql`AND github_repository_id = ANY(${githubRepositoryIds}::bigint[])`}
            RETURNING id`.pipe(Effect.orDie)
          return rows.length
        }),
        upsert: Effect.fn("RepositoriesRepo.upsert")(function* (organizationId, repository) {
          const [row] = yield* sql<Repository>`
            INSERT INTO repositories (organization_id, github_repository_id, owner, name, default_branch)
            VALUES (${organizationId}, ${repository.githubRepositoryId}, ${repository.owner}, ${repository.name},
                    ${repository.defaultBranch})
            ON CONFLICT (organization_id, owner, name) DO UPDATE SET
              github_repository_id = excluded.github_repository_id, default_branch = excluded.default_branch,
              available = true, updated_at = now()
            RETURNING ${columns}`.pipe(Effect.orDie)
          if (row === undefined) return yield* Effect.die(new Error("repository upsert returned no row"))
          return row
        }),
        setDefaultBranchHead: Effect.fn("RepositoriesRepo.setDefaultBranchHead")(
          function* (organizationId, repositoryId, head) {
            const rows = yield* sql<{ id: string }>`
            WITH pushed AS (SELECT coalesce(${head.pushedAt}::timestamptz, now()) AS at)
            UPDATE repositories SET default_branch = ${head.branch}, default_branch_sha = ${head.sha},
                                    default_branch_pushed_at = pushed.at, updated_at = now()
            FROM pushed
            WHERE organization_id = ${organizationId} AND id = ${repositoryId}
              AND (default_branch_pushed_at IS NULL OR default_branch_pushed_at <= pushed.at)
            RETURNING id`.pipe(Effect.orDie)
            return rows.length > 0
          }
        )
      })
    })
  )
}

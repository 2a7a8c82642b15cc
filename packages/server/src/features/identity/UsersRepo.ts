/**
 * Users, their organization memberships and the instance role
 * (docs/interface.md: Authentication 1-3). Every lookup of a membership filters by the organization
 * asked about and the user.
 */

import type { OrganizationMembership, Role } from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { GithubUser } from "../../outbound/github/GitHubOAuth.ts"

export interface UserRow {
  readonly id: string
  readonly login: string
  readonly name: string | null
  readonly avatar_url: string | null
  readonly super_user: boolean
}

export type { GithubUser }

export class UsersRepo extends Context.Service<
  UsersRepo,
  {
    /** The user with this GitHub login (case-insensitive), created when missing. */
    readonly ensureByLogin: (login: string) => Effect.Effect<UserRow>
    /** The user of this GitHub account, created or refreshed from GitHub's profile. */
    readonly upsertFromGithub: (user: GithubUser) => Effect.Effect<UserRow>
    readonly find: (id: string) => Effect.Effect<Option.Option<UserRow>>
    readonly findByLogin: (login: string) => Effect.Effect<Option.Option<UserRow>>
    readonly setSuperUser: (userId: string, superUser: boolean) => Effect.Effect<void>
    /** Sets the user's role in the organization (a membership), creating the membership. */
    readonly setMembership: (
      organizationId: string,
      userId: string,
      role: Exclude<Role, "SUPER_USER">
    ) => Effect.Effect<void>
    /**
     * Makes the user's GitHub-derived memberships exactly `roles` (organization id -> role):
     * adds or updates those, deletes the user's other GitHub-derived memberships. Memberships an
     * operator granted are never touched.
     */
    readonly syncGithubMemberships: (
      userId: string,
      roles: ReadonlyMap<string, Exclude<Role, "SUPER_USER">>
    ) => Effect.Effect<void>
    /** The user's role in one organization: SUPER_USER for operators, else the membership's. */
    readonly roleIn: (organizationId: string, userId: string) => Effect.Effect<Option.Option<Role>>
    /** Every organization the user may see, with the role there. */
    readonly organizationsOf: (userId: string) => Effect.Effect<ReadonlyArray<OrganizationMembership>>
  }
>()("bosun/server/persistence/UsersRepo") {
  static readonly layer = Layer.effect(
    UsersRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const columns = sql.literal("id, login, name, avatar_url, instance_role = 'SUPER_USER' AS super_user")
      const normalize = (row: UserRow): UserRow => ({ ...row, super_user: row.super_user === true })

      const findByLogin = Effect.fn("UsersRepo.findByLogin")(function* (login: string) {
        const [row] = yield* sql<UserRow>`SELECT ${columns} FROM users WHERE lower(login) = lower(${login})`.pipe(
          Effect.orDie
        )
        return Option.map(Option.fromUndefinedOr(row), normalize)
      })

      const ensureByLogin = Effect.fn("UsersRepo.ensureByLogin")(function* (login: string) {
        yield* sql`INSERT INTO users (login) VALUES (${login}) ON CONFLICT (lower(login)) DO NOTHING`.pipe(Effect.orDie)
        return yield* Effect.map(findByLogin(login), Option.getOrThrow)
      })

      const upsertFromGithub = Effect.fn("UsersRepo.upsertFromGithub")(function* (user: GithubUser) {
        // A login renamed on GitHub may still be held by a stale row: the account id wins.
        const rows = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* sql`UPDATE users SET login = login || '~' || id
                       WHERE lower(login) = lower(${user.login})
                         AND (github_user_id IS DISTINCT FROM ${user.githubUserId})
                         AND github_user_id IS NOT NULL`
              const updated = yield* sql<UserRow>`
              UPDATE users SET github_user_id = ${user.githubUserId}, login = ${user.login}, name = ${user.name},
                     avatar_url = ${user.avatarUrl}, updated_at = now()
              WHERE github_user_id = ${user.githubUserId}
                 OR (github_user_id IS NULL AND lower(login) = lower(${user.login}))
              RETURNING ${columns}`
              if (updated.length > 0) return updated
              return yield* sql<UserRow>`
              INSERT INTO users (github_user_id, login, name, avatar_url)
              VALUES (${user.githubUserId}, ${user.login}, ${user.name}, ${user.avatarUrl})
              RETURNING ${columns}`
            })
          )
          .pipe(Effect.orDie)
        const [row] = rows
        if (row === undefined) return yield* Effect.die(new Error("user upsert returned no row"))
        return normalize(row)
      })

      const find = Effect.fn("UsersRepo.find")(function* (id: string) {
        const [row] = yield* sql<UserRow>`SELECT ${columns} FROM users WHERE id = ${id}`.pipe(Effect.orDie)
        return Option.map(Option.fromUndefinedOr(row), normalize)
      })

      const setSuperUser = Effect.fn("UsersRepo.setSuperUser")(function* (userId: string, superUser: boolean) {
        yield* sql`UPDATE users SET instance_role = ${superUser ? "SUPER_USER" : null}, updated_at = now()
                   WHERE id = ${userId}`.pipe(Effect.orDie)
      })

      const setMembership = Effect.fn("UsersRepo.setMembership")(function* (
        organizationId: string,
        userId: string,
        role: Exclude<Role, "SUPER_USER">
      ) {
        yield* sql`
          INSERT INTO memberships (organization_id, user_id, role) VALUES (${organizationId}, ${userId}, ${role})
          ON CONFLICT (organization_id, user_id) DO UPDATE SET role = excluded.role, updated_at = now()`.pipe(
          Effect.orDie
        )
      })

      const syncGithubMemberships = Effect.fn("UsersRepo.syncGithubMemberships")(function* (
        userId: string,
        roles: ReadonlyMap<string, Exclude<Role, "SUPER_USER">>
      ) {
        const organizations = [...roles.keys()]
        yield* sql`
          DELETE FROM memberships WHERE user_id = ${userId} AND source = 'GITHUB'
            AND NOT (organization_id = ANY(${organizations}::text[]))`.pipe(Effect.orDie)
        for (const [organizationId, role] of roles) {
          yield* sql`
            INSERT INTO memberships (organization_id, user_id, role, source)
            VALUES (${organizationId}, ${userId}, ${role}, 'GITHUB')
            ON CONFLICT (organization_id, user_id) DO UPDATE SET role = excluded.role, updated_at = now()
            WHERE memberships.source = 'GITHUB'`.pipe(Effect.orDie)
        }
      })

      const roleIn = Effect.fn("UsersRepo.roleIn")(function* (organizationId: string, userId: string) {
        const [row] = yield* sql<{ role: Role | null; super_user: boolean; exists: boolean }>`
          SELECT m.role, u.instance_role = 'SUPER_USER' AS super_user,
                 EXISTS (SELECT 1 FROM organizations o WHERE o.id = ${organizationId}) AS exists
          FROM users u
          LEFT JOIN memberships m ON m.user_id = u.id AND m.organization_id = ${organizationId}
          WHERE u.id = ${userId}`.pipe(Effect.orDie)
        if (row === undefined || !row.exists) return Option.none<Role>()
        if (row.super_user === true) return Option.some<Role>("SUPER_USER")
        return Option.fromNullishOr(row.role)
      })

      const organizationsOf = Effect.fn("UsersRepo.organizationsOf")(function* (userId: string) {
        return yield* sql<OrganizationMembership>`
          SELECT o.id, o.name, o.login,
                 CASE WHEN u.instance_role = 'SUPER_USER' THEN 'SUPER_USER' ELSE m.role END AS role
          FROM users u
          JOIN organizations o ON TRUE
          LEFT JOIN memberships m ON m.organization_id = o.id AND m.user_id = u.id
          WHERE u.id = ${userId} AND (u.instance_role = 'SUPER_USER' OR m.user_id IS NOT NULL)
          ORDER BY o.name, o.id`.pipe(Effect.orDie)
      })

      return UsersRepo.of({
        ensureByLogin,
        upsertFromGithub,
        find,
        findByLogin,
        setSuperUser,
        setMembership,
        syncGithubMemberships,
        roleIn,
        organizationsOf
      })
    })
  )
}

/**
 * Who is calling (docs/interface.md: Authentication 1-3): users, their role in each organization,
 * and what `GET /api/v1/me` returns. Roles: MEMBER, ADMIN (GitHub organization owners), SUPER_USER
 * (an instance operator, granted with the CLI; reaches every organization).
 */
import { Schema } from "effect"

export const Role = Schema.Literals(["MEMBER", "ADMIN", "SUPER_USER"])
export type Role = typeof Role.Type

/** Whether `role` is at least `required` (MEMBER < ADMIN < SUPER_USER). */
export const roleAtLeast = (role: Role, required: Role): boolean => {
  const rank = { MEMBER: 0, ADMIN: 1, SUPER_USER: 2 } as const
  return rank[role] >= rank[required]
}

export const SESSION_COOKIE = "bosun_session"

export const User = Schema.Struct({
  id: Schema.String,
  login: Schema.String,
  name: Schema.NullOr(Schema.String),
  avatar_url: Schema.NullOr(Schema.String),
  super_user: Schema.Boolean
})
export type User = typeof User.Type

export const OrganizationMembership = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  login: Schema.NullOr(Schema.String),
  role: Role
})
export type OrganizationMembership = typeof OrganizationMembership.Type

export const Me = Schema.Struct({
  user: User,
  organizations: Schema.Array(OrganizationMembership)
})
export type Me = typeof Me.Type

/** `GET /me`'s body (`IdentityApi`), a Schema of its own so the dashboard's first screen can read it without the HTTP client. */
export const MeResponse = Schema.Struct({ data: Me })

/**
 * `bosun users grant --login LOGIN --role SUPER_USER` and `bosun users revoke --login LOGIN`
 * (how operators grant SUPER_USER). A login not seen yet is created, so the grant holds when
 * that GitHub user first signs in. Both are recorded as audit evidence.
 */
import { Console, Effect, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import { UsersRepo } from "../../features/identity/UsersRepo.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"

/** A GitHub login: letters, digits and single inner hyphens, at most 39 characters. */
export const GithubLogin = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/, { message: "must be a GitHub login" })
)

const login = Flag.String("login").pipe(Flag.withSchema(GithubLogin), Flag.withDescription("The user's GitHub login"))

export const grant = Command.make(
  "grant",
  {
    login,
    role: Flag.Literals("role", ["SUPER_USER"]).pipe(Flag.withDescription("The instance role to grant"))
  },
  Effect.fn(function* ({ login, role }) {
    const users = yield* UsersRepo
    const audit = yield* AuditLog
    const user = yield* users.ensureByLogin(login)
    yield* users.setSuperUser(user.id, true)
    yield* audit.record({
      organizationId: null,
      actor: { kind: "operator" },
      action: "user.grant",
      target: `user:${user.id}`,
      details: { role }
    })
    yield* Console.log(`${user.login} (${user.id}) is now ${role}`)
  })
).pipe(Command.withDescription("Grant an instance role to a user"))

export const revoke = Command.make(
  "revoke",
  { login },
  Effect.fn(function* ({ login }) {
    const users = yield* UsersRepo
    const audit = yield* AuditLog
    const user = yield* users.ensureByLogin(login)
    yield* users.setSuperUser(user.id, false)
    yield* audit.record({
      organizationId: null,
      actor: { kind: "operator" },
      action: "user.revoke",
      target: `user:${user.id}`,
      details: { role: "SUPER_USER" }
    })
    yield* Console.log(`${user.login} (${user.id}) is no longer SUPER_USER`)
  })
).pipe(Command.withDescription("Take the SUPER_USER role from a user"))

/**
 * `bosun sessions create --org ORG --login LOGIN [--role MEMBER|ADMIN|SUPER_USER]` (for a first run
 * before OAuth is configured, and automation). Creates the organization, the user and the
 * membership when missing, opens a session, records it as audit evidence, and prints the cookie
 * `bosun_session=<token>` as the last line of stdout. The token is printed once and stored only
 * hashed.
 */
import { PathId, Role, SESSION_COOKIE } from "@bosun/domain"
import { Console, Effect, Redacted } from "effect"
import { Command, Flag } from "effect/cli"
import { OrganizationsRepo } from "../../features/identity/OrganizationsRepo.ts"
import { SessionsRepo } from "../../features/identity/SessionsRepo.ts"
import { UsersRepo } from "../../features/identity/UsersRepo.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { GithubLogin } from "./users.ts"

export const create = Command.make(
  "create",
  {
    org: Flag.String("org").pipe(Flag.withSchema(PathId), Flag.withDescription("The organization id")),
    login: Flag.String("login").pipe(Flag.withSchema(GithubLogin), Flag.withDescription("The user's GitHub login")),
    role: Flag.Literals("role", Role.literals).pipe(
      Flag.withDescription("The user's role in the organization (SUPER_USER: an instance operator)"),
      Flag.withDefault("MEMBER" as const)
    )
  },
  Effect.fn(function* ({ org, login, role }) {
    const organizations = yield* OrganizationsRepo
    const users = yield* UsersRepo
    const sessions = yield* SessionsRepo
    const audit = yield* AuditLog
    yield* organizations.ensure(org)
    const user = yield* users.ensureByLogin(login)
    if (role === "SUPER_USER") yield* users.setSuperUser(user.id, true)
    yield* users.setMembership(org, user.id, role === "SUPER_USER" ? "ADMIN" : role)
    const session = yield* sessions.create(user.id)
    yield* audit.record({
      organizationId: org,
      actor: { kind: "operator" },
      action: "session.create",
      target: `user:${user.id}`,
      details: { role, session_id: session.sessionId }
    })
    process.stderr.write(`session for ${user.login} (${user.id}) in ${org} as ${role}\n`)
    yield* Console.log(`${SESSION_COOKIE}=${Redacted.value(session.token)}`)
  })
).pipe(Command.withDescription("Open a session for a user, printing its cookie"))

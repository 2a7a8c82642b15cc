/**
 * Signed-in callers for organization API tests: a user with memberships (or the SUPER_USER
 * instance role) and a live session, through the real repositories.
 */
import { Effect, Redacted } from "effect"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { SessionsRepo } from "../../src/features/identity/SessionsRepo.ts"
import { UsersRepo } from "../../src/features/identity/UsersRepo.ts"

export const signIn = (
  login: string,
  memberships: ReadonlyArray<readonly [string, "MEMBER" | "ADMIN"]>,
  superUser = false
) =>
  Effect.gen(function* () {
    const organizations = yield* OrganizationsRepo
    const users = yield* UsersRepo
    const sessions = yield* SessionsRepo
    const user = yield* users.ensureByLogin(login)
    if (superUser) yield* users.setSuperUser(user.id, true)
    for (const [org, role] of memberships) {
      yield* organizations.ensure(org)
      yield* users.setMembership(org, user.id, role)
    }
    const session = yield* sessions.create(user.id)
    return {
      userId: user.id,
      sessionId: session.sessionId,
      token: Redacted.value(session.token),
      cookie: `bosun_session=${Redacted.value(session.token)}`
    }
  })

/** The code of an error envelope. */
export const errorCode = (json: unknown) => (json as { error: { code: string } }).error.code

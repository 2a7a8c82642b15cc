/**
 * `GET /api/v1/me` and `POST /api/v1/auth/logout` (docs/interface.md: Authentication 1, 9).
 */
import { BosunApi, CurrentUser, ErrorCodes, SESSION_COOKIE, Unauthorized } from "@bosun/domain"
import { Effect, Option } from "effect"
import { HttpServerResponse } from "effect/http"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { sessionCookieOptions } from "./SessionCookie.ts"
import { SessionsRepo } from "./SessionsRepo.ts"
import { UsersRepo } from "./UsersRepo.ts"

export const IdentityHttp = group(
  BosunApi,
  "identity",
  Effect.fn(function* (handlers) {
    const users = yield* UsersRepo
    const sessions = yield* SessionsRepo
    const config = yield* AppConfig
    return handlers
      .handle("me", () =>
        Effect.gen(function* () {
          const current = yield* CurrentUser
          const user = yield* users.find(current.userId)
          if (Option.isNone(user)) {
            return yield* Unauthorized.fromCode(ErrorCodes.sessionRequired, "The session's user no longer exists")
          }
          const organizations = yield* users.organizationsOf(current.userId)
          return { data: { user: user.value, organizations } }
        })
      )
      .handle("logout", () =>
        Effect.gen(function* () {
          const current = yield* CurrentUser
          yield* sessions.revoke(current.sessionId)
          return HttpServerResponse.expireCookieUnsafe(
            HttpServerResponse.empty({ status: 204 }),
            SESSION_COOKIE,
            sessionCookieOptions(config.baseUrl)
          )
        })
      )
  })
)

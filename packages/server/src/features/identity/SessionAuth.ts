/**
 * The `bosun_session` cookie in front of every organization and identity route
 * (docs/interface.md: Authentication 1, 8; Design rules). A live session provides the `CurrentUser`
 * and puts the user's opaque id on the request's log line; none is 401. A write (any method but
 * GET, HEAD and OPTIONS) that carries an `Origin` other than the base URL's is 403, so another site
 * cannot ride a signed-in browser; the JSON-only bodies do the rest (a form post is a 415).
 */
import { CurrentUser, ErrorCodes, Forbidden, SessionAuth, Unauthorized } from "@bosun/domain"
import { RequestContext } from "@bosun/platform/RequestContext"
import { Effect, Layer, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { SessionsRepo } from "./SessionsRepo.ts"

const noSession = Unauthorized.fromCode(ErrorCodes.sessionRequired, "Sign in first: no valid bosun_session cookie")
const foreignOrigin = Forbidden.fromCode(
  ErrorCodes.originMismatch,
  "This write comes from another origin than the instance's base URL"
)
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

export const SessionAuthLive = Layer.effect(
  SessionAuth,
  Effect.gen(function* () {
    const sessions = yield* SessionsRepo
    const config = yield* AppConfig
    const origin = config.baseUrl.origin
    return SessionAuth.of({
      session: (httpEffect, { credential }) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          if (!SAFE_METHODS.has(request.method)) {
            const sent = request.headers.origin
            if (sent !== undefined && sent !== origin) return yield* foreignOrigin
          }
          const session = yield* sessions.authenticate(credential)
          if (Option.isNone(session)) return yield* noSession
          const context = yield* Effect.serviceOption(RequestContext)
          if (Option.isSome(context)) context.value.userId = session.value.userId
          return yield* Effect.provideService(httpEffect, CurrentUser, {
            userId: session.value.userId,
            login: session.value.login,
            superUser: session.value.superUser,
            sessionId: session.value.sessionId
          })
        })
    })
  })
)

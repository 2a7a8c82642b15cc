/**
 * Authentication middleware definitions (implementations live in the server).
 *
 * `SessionAuth` reads the `bosun_session` cookie (docs/interface.md: Authentication 1): no cookie,
 * or one that names no live session, is 401; it provides the `CurrentUser`. A write (any method but
 * GET and HEAD) whose `Origin` is not the instance's base URL is 403 (CSRF); writes are JSON only.
 *
 * `BootstrapAuth` guards the operator endpoints with `Authorization: Bearer <BOSUN_BOOTSTRAP_TOKEN>`
 * (docs/interface.md: Authentication 2): a missing or wrong token is 401; an instance with no token
 * configured answers 503, since nobody could ever pass.
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { Forbidden, ServiceUnavailable, Unauthorized } from "../ApiError.ts"
import { SESSION_COOKIE } from "../Identity.ts"

export class BootstrapAuth extends HttpApiMiddleware.Service<BootstrapAuth>()("bosun/domain/api/BootstrapAuth", {
  security: { bearer: HttpApiSecurity.bearer },
  error: [Unauthorized, ServiceUnavailable]
}) {}

/** The signed-in user of the request (after `SessionAuth`). */
export class CurrentUser extends Context.Service<
  CurrentUser,
  {
    readonly userId: string
    readonly login: string
    readonly superUser: boolean
    readonly sessionId: string
  }
>()("bosun/domain/api/CurrentUser") {}

export class SessionAuth extends HttpApiMiddleware.Service<SessionAuth, { provides: CurrentUser }>()(
  "bosun/domain/api/SessionAuth",
  {
    security: { session: HttpApiSecurity.apiKey({ in: "cookie", key: SESSION_COOKIE }) },
    error: [Unauthorized, Forbidden]
  }
) {}

/**
 * Authentication middleware definitions (implementations live in the server).
 *
 * `BootstrapAuth` guards the operator endpoints with `Authorization: Bearer <BOSUN_BOOTSTRAP_TOKEN>`
 * (spec: Authentication 2): a missing or wrong token is 401; an instance with no token
 * configured answers 503, since nobody could ever pass.
 */
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { ServiceUnavailable, Unauthorized } from "../ApiError.ts"

export class BootstrapAuth extends HttpApiMiddleware.Service<BootstrapAuth>()("bosun/domain/api/BootstrapAuth", {
  security: { bearer: HttpApiSecurity.bearer },
  error: [Unauthorized, ServiceUnavailable]
}) {}

/**
 * The caller's identity: `GET /api/v1/me` and `POST /api/v1/auth/logout`
 * (docs/interface.md: Authentication 1, 9). Both need a session (`SessionAuth`); logout answers 204
 * and expires the cookie.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { MeResponse } from "../Identity.ts"
import { SessionAuth } from "./Auth.ts"

export class IdentityApi extends HttpApiGroup.make("identity")
  .add(
    HttpApiEndpoint.get("me", "/me", { success: MeResponse }),
    HttpApiEndpoint.post("logout", "/auth/logout", { success: HttpApiSchema.NoContent })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

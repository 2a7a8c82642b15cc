/**
 * Signing in with GitHub (docs/interface.md: Authentication 9): the OAuth web flow of
 * the organization's GitHub App. `login` redirects to GitHub with a `state` also kept in a
 * short-lived cookie; `callback` checks that both match, exchanges the code, records the user
 * and the organizations they reach through the App's installations, opens a session and
 * redirects to the dashboard. Both answer 302 on success.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { BadGateway, BadRequest, ServiceUnavailable } from "../ApiError.ts"
import { PathId } from "../Ids.ts"

export const OAUTH_STATE_COOKIE = "bosun_oauth_state"

const Bounded = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.get("githubLogin", "/auth/github/login", {
      query: { organization_id: Schema.optional(PathId) },
      success: HttpApiSchema.Empty(302),
      error: [BadRequest, ServiceUnavailable]
    }),
    HttpApiEndpoint.get("githubCallback", "/auth/github/callback", {
      query: { code: Bounded(512), state: Bounded(256) },
      success: HttpApiSchema.Empty(302),
      error: [BadRequest, BadGateway]
    })
  )
  .prefix("/api/v1") {}

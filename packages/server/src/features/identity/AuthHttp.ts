/**
 * Sign-in with the GitHub App's OAuth web flow (docs/interface.md: Authentication 1, 5, 9).
 *
 * - `GET /api/v1/auth/github/login[?organization_id=]` picks the App (the organization's, or
 *   the only one configured), and redirects to GitHub with a random `state` that is also kept,
 *   with the organization, in the HttpOnly cookie `bosun_oauth_state` for 10 minutes. An
 *   `organization_id` that names no organization with an App — missing, or without one — is
 *   answered as if it were absent, so the answer does not tell which organizations exist.
 * - `GET /api/v1/auth/github/callback?code&state` needs that cookie with the same state
 *   (compared in constant time), exchanges the code, reads the user and the App's installations
 *   the user reaches, and records the user with a membership in every Bosun organization that
 *   mirrors one of those accounts and of which the user really is a member on GitHub — ADMIN
 *   for an owner of the GitHub organization (or the personal account itself), MEMBER for an
 *   active member; outside collaborators and pending invitations get nothing. GitHub-derived
 *   memberships the user no longer has are removed; operator-granted ones are left alone. A
 *   sign-in never ties an organization to a GitHub account: an operator does
 *   (`bosun organizations link`), and the account id is completed at the first matching
 *   sign-in. The user's GitHub token is used for these reads and then dropped.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import {
  BadGateway,
  BadRequest,
  BosunApi,
  ErrorCodes,
  OAUTH_STATE_COOKIE,
  SESSION_COOKIE,
  ServiceUnavailable
} from "@bosun/domain"
import { Effect, Option, Redacted, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { GitHubOAuth } from "../../outbound/github/GitHubOAuth.ts"
import { GithubAppsRepo } from "../../outbound/github/GithubAppsRepo.ts"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrganizationsRepo } from "./OrganizationsRepo.ts"
import { sessionCookieOptions } from "./SessionCookie.ts"
import { SessionsRepo } from "./SessionsRepo.ts"
import { UsersRepo } from "./UsersRepo.ts"

const StatePayload = Schema.Struct({ state: Schema.String, organization_id: Schema.String })
const decodeState = Schema.decodeUnknownOption(Schema.fromJsonString(StatePayload))

const digest = (value: string) => createHash("sha256").update(value, "utf8").digest()

const invalidState = BadRequest.fromCode(
  ErrorCodes.invalidOauthState,
  "The sign-in could not be matched to one started here (missing, expired or different state); start again"
)

export const AuthHttp = group(
  BosunApi,
  "auth",
  Effect.fn(function* (handlers) {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const apps = yield* GithubAppsRepo
    const organizations = yield* OrganizationsRepo
    const users = yield* UsersRepo
    const sessions = yield* SessionsRepo
    const audit = yield* AuditLog
    const github = yield* GitHubOAuth
    const redirectUrl = new URL("api/v1/auth/github/callback", config.baseUrl).href
    const cookieOptions = sessionCookieOptions(config.baseUrl)
    const stateCookieOptions = { ...cookieOptions, path: "/api/v1/auth/github", maxAge: "10 minutes" as const }

    return handlers
      .handle("githubLogin", ({ query }) =>
        Effect.gen(function* () {
          const configured = yield* apps.configuredOrganizations
          const named =
            query.organization_id !== undefined && configured.includes(query.organization_id)
              ? query.organization_id
              : undefined
          const organizationId = named ?? (configured.length === 1 ? configured[0] : undefined)
          if (configured.length === 0) {
            return yield* ServiceUnavailable.fromCode(
              ErrorCodes.githubAppUnconfigured,
              "No GitHub App is configured yet (PUT /api/v1/organizations/{organization_id}/github-app)"
            )
          }
          if (organizationId === undefined) {
            return yield* BadRequest.fromCode(
              ErrorCodes.organizationRequired,
              'Several GitHub Apps are configured: name one with the query parameter "organization_id"'
            )
          }
          const app = yield* apps.find(organizationId).pipe(Effect.orDie)
          if (Option.isNone(app)) {
            return yield* ServiceUnavailable.fromCode(
              ErrorCodes.githubAppUnconfigured,
              "No GitHub App is configured yet (PUT /api/v1/organizations/{organization_id}/github-app)"
            )
          }
          const state = randomBytes(32).toString("base64url")
          const cookie = Buffer.from(JSON.stringify({ state, organization_id: organizationId })).toString("base64url")
          return HttpServerResponse.setCookieUnsafe(
            HttpServerResponse.redirect(github.authorizationUrl({ clientId: app.value.clientId, redirectUrl, state })),
            OAUTH_STATE_COOKIE,
            cookie,
            stateCookieOptions
          )
        })
      )
      .handle("githubCallback", ({ query }) =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const raw = request.cookies[OAUTH_STATE_COOKIE]
          const started = Option.flatMap(Option.fromUndefinedOr(raw), (value) =>
            decodeState(Buffer.from(value, "base64url").toString("utf8"))
          )
          if (Option.isNone(started) || !timingSafeEqual(digest(started.value.state), digest(query.state))) {
            return yield* invalidState
          }
          const organizationId = started.value.organization_id
          const app = yield* apps.find(organizationId).pipe(Effect.orDie)
          if (Option.isNone(app)) return yield* invalidState

          const fromGithub = (error: { readonly reason: string; readonly message: string }) =>
            error.reason === "InvalidCode"
              ? BadRequest.fromCode(ErrorCodes.invalidOauthCode, "GitHub refused the authorization code; sign in again")
              : BadGateway.fromCode(ErrorCodes.githubUnavailable, `Could not complete the sign-in: ${error.message}`)
          const token = yield* github
            .exchangeCode({
              clientId: app.value.clientId,
              clientSecret: app.value.clientSecret,
              code: query.code,
              redirectUrl
            })
            .pipe(Effect.mapError(fromGithub))
          const profile = yield* github.user(token).pipe(Effect.mapError(fromGithub))
          const installations = yield* github.installations(token).pipe(Effect.mapError(fromGithub))
          // Only real members count: an outside collaborator or a pending invitation sees the
          // installation too, and another user's personal installation is not theirs.
          const reached = yield* Effect.forEach(installations, (installation) =>
            installation.account.type === "User"
              ? Effect.succeed(installation.account.id === profile.githubUserId ? ("ADMIN" as const) : undefined)
              : Effect.map(github.organizationRole(token, installation.account.login), (role) =>
                  role === "admin" ? ("ADMIN" as const) : role === "member" ? ("MEMBER" as const) : undefined
                )
          ).pipe(Effect.mapError(fromGithub))
          const memberOf = installations.flatMap((installation, index) => {
            const role = reached[index]
            return role === undefined ? [] : [{ account: installation.account, role }]
          })

          const session = yield* sql
            .withTransaction(
              Effect.gen(function* () {
                const user = yield* users.upsertFromGithub(profile)
                const mirrored = yield* organizations.byGithubAccounts(memberOf.map((m) => m.account))
                const roles = new Map<string, "ADMIN" | "MEMBER">()
                for (const organization of mirrored) {
                  const membership = memberOf.find((m) => m.account.id === organization.github_account_id)
                  if (membership !== undefined) roles.set(organization.id, membership.role)
                }
                yield* users.syncGithubMemberships(user.id, roles)
                const opened = yield* sessions.create(user.id)
                yield* audit.record({
                  organizationId,
                  actor: { kind: "user", userId: user.id },
                  action: "session.login",
                  target: `user:${user.id}`,
                  details: { session_id: opened.sessionId, organizations: mirrored.length }
                })
                return opened
              })
            )
            .pipe(Effect.orDie)

          return HttpServerResponse.redirect(config.baseUrl.href).pipe(
            HttpServerResponse.setCookieUnsafe(SESSION_COOKIE, Redacted.value(session.token), {
              ...cookieOptions,
              maxAge: sessions.settings.maxAge
            }),
            HttpServerResponse.expireCookieUnsafe(OAUTH_STATE_COOKIE, stateCookieOptions)
          )
        })
      )
  })
)

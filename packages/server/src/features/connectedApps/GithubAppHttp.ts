/**
 * `PUT /api/v1/organizations/{organization_id}/github-app`
 * (docs/interface.md: Bootstrap-token endpoints, Authentication 5): stores the organization's
 * GitHub App, creating the organization when it does not exist. The credentials are sealed before
 * they reach the database and the response carries only client_id, id and slug.
 */
import { createPrivateKey } from "node:crypto"
import { BadRequest, BosunApi, ErrorCodes } from "@bosun/domain"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { GithubAppsRepo } from "../../outbound/github/GithubAppsRepo.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrganizationsRepo } from "../identity/index.ts"

/** Whether `pem` parses as an RSA private key (PKCS#1 or PKCS#8), as GitHub issues them. */
export const isRsaPrivateKey = (pem: string): boolean => {
  try {
    return createPrivateKey({ key: pem, format: "pem" }).asymmetricKeyType === "rsa"
  } catch {
    return false
  }
}

export const GithubAppHttp = group(
  BosunApi,
  "githubApp",
  Effect.fn(function* (handlers) {
    const sql = yield* SqlClient.SqlClient
    const organizations = yield* OrganizationsRepo
    const apps = yield* GithubAppsRepo
    const audit = yield* AuditLog
    return handlers.handle("configure", ({ params, payload }) =>
      Effect.gen(function* () {
        if (!isRsaPrivateKey(payload.private_key)) {
          return yield* BadRequest.fromCode(
            ErrorCodes.invalidBody,
            'Invalid body field "private_key": must be a PEM-encoded RSA private key'
          )
        }
        yield* sql
          .withTransaction(
            Effect.andThen(
              organizations.ensure(params.organization_id),
              apps.upsert(params.organization_id, {
                githubAppId: payload.github_app_id,
                slug: payload.github_app_slug,
                clientId: payload.client_id,
                clientSecret: Redacted.make(payload.client_secret),
                privateKey: Redacted.make(payload.private_key),
                webhookSecret: Redacted.make(payload.webhook_secret)
              })
            ).pipe(
              Effect.andThen(
                audit.record({
                  organizationId: params.organization_id,
                  actor: { kind: "operator" },
                  action: "github_app.configure",
                  target: `github_app:${payload.github_app_id}`,
                  details: { client_id: payload.client_id, slug: payload.github_app_slug }
                })
              )
            )
          )
          .pipe(Effect.orDie)
        return { data: { client_id: payload.client_id, id: payload.github_app_id, slug: payload.github_app_slug } }
      })
    )
  })
)

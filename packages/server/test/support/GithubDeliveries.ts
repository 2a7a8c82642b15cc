/**
 * GitHub App webhook deliveries for tests: an organization with a configured App (its webhook
 * secret sealed through the real repository), and deliveries signed the way GitHub signs them
 * (`@octokit/webhooks-methods`), sent to the server's `POST /api/v1/github/webhooks`.
 */

import { eventually } from "@bosun/testing"
import { sign } from "@octokit/webhooks-methods"
import { Duration, Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { GithubAppsRepo } from "../../src/outbound/github/GithubAppsRepo.ts"
import { request } from "./TestServer.ts"

export const SECRET = "whsec-plaintext-4b7e21"
export const APP_ID = 4242
export const ACCOUNT_ID = 9001

/** An organization with a configured GitHub App, linked to GitHub account `account` (null: not yet linked). */
export const configured = (org: string, account: number | null, secret = SECRET, appId = APP_ID) =>
  Effect.gen(function* () {
    const organizations = yield* OrganizationsRepo
    const apps = yield* GithubAppsRepo
    const sql = yield* SqlClient.SqlClient
    yield* organizations.ensure(org)
    if (account !== null) yield* sql`UPDATE organizations SET github_account_id = ${account} WHERE id = ${org}`
    yield* apps.upsert(org, {
      githubAppId: appId,
      slug: "bosun-test",
      clientId: "Iv1.test",
      clientSecret: Redacted.make("client-secret"),
      privateKey: Redacted.make("-----BEGIN PRIVATE KEY-----\nunused\n-----END PRIVATE KEY-----"),
      webhookSecret: Redacted.make(secret)
    })
  })

export interface Delivery {
  readonly id: string
  readonly event: string
  readonly body: string
  readonly signature?: string | null
  readonly appId?: number | null
  readonly secret?: string
}

export const deliver = (delivery: Delivery) =>
  Effect.gen(function* () {
    const signature =
      delivery.signature === undefined
        ? yield* Effect.promise(() => sign(delivery.secret ?? SECRET, delivery.body))
        : delivery.signature
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "x-github-delivery": delivery.id,
      "x-github-event": delivery.event,
      "x-github-hook-installation-target-type": "integration",
      "user-agent": "GitHub-Hookshot/test"
    }
    if (signature !== null) headers["x-hub-signature-256"] = signature
    if (delivery.appId !== null) headers["x-github-hook-installation-target-id"] = String(delivery.appId ?? APP_ID)
    if (delivery.id === "") delete headers["x-github-delivery"]
    return yield* request("/api/v1/github/webhooks", { method: "POST", headers, body: delivery.body })
  })

/** Waits for the inbox consumer to have processed the delivery; answers its ignored_reason. */
export const processed = (deliveryId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* eventually(
      sql<{ processed_at: Date | null; ignored_reason: string | null }>`
        SELECT processed_at, ignored_reason FROM github_deliveries WHERE delivery_id = ${deliveryId}`,
      (rows) => rows[0] !== undefined && rows[0].processed_at !== null,
      Duration.seconds(15)
    )
    return rows[0]?.ignored_reason ?? null
  })

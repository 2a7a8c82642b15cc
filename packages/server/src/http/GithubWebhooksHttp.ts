/**
 * `POST /api/v1/github/webhooks`, the GitHub App's webhook (issue 8; spec: What the service does
 * 6, Authentication 4, Events 3; the path is ours, the spec does not show it). It verifies, records
 * and acknowledges; the inbox consumer does the work later, so the answer never waits for GitHub,
 * an agent or a review.
 *
 * - The signature: `X-Hub-Signature-256`, HMAC-SHA256 of the raw body, checked in constant time by
 *   `@octokit/webhooks-methods` against the sealed webhook secret of each organization whose App
 *   has the id in `X-GitHub-Hook-Installation-Target-ID` (of every configured App when the header
 *   is absent). Missing or matching none: 401, nothing written. The opened secrets are kept for
 *   `BOSUN_WEBHOOK_SECRET_CACHE_TTL` (5 s), sparing each delivery a query and an unseal; whenever
 *   the kept ones do not verify a delivery or do not name its organization exactly, they are read
 *   again first, so a changed secret or a newly linked account applies at once. Only a replaced
 *   secret's old value keeps verifying, on servers that still hold it, for at most that long.
 * - The organization: of the Apps whose secret matched, the one whose organization mirrors the
 *   payload's GitHub account (installation account, repository owner, organization), else one not
 *   yet linked to any account (an `installation` event links it). A delivery for an account no
 *   organization here mirrors is acknowledged with `accepted: false` and not recorded.
 * - `X-GitHub-Delivery` and `X-GitHub-Event` are required (400 naming the header); the body must
 *   be a JSON object (400). The body limit is `BOSUN_WEBHOOK_MAX_BODY_BYTES` (25 MB; 413 above).
 * - The delivery row and, for an event Bosun handles, its `bosun-inbox` outbox row are written in
 *   one transaction. A redelivery of a recorded id answers `duplicate: true` and writes nothing; an
 *   event Bosun does not handle is recorded as ignored, with no outbox row.
 *
 * Answer: 202 `{data: {accepted, duplicate}}`, the shape of the spec's tracker webhook.
 */
import { ErrorCodes } from "@bosun/domain"
import { verify } from "@octokit/webhooks-methods"
import { Cache, Effect, Exit, Layer, Option, Redacted, Result, Schema } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/AppConfig.ts"
import { GithubAppsRepo, type WebhookSecretCandidate } from "../persistence/GithubAppsRepo.ts"
import { GithubDeliveriesRepo } from "../persistence/GithubDeliveriesRepo.ts"
import { Outbox } from "../storage/Outbox.ts"
import { errorResponse } from "./RequestPipeline.ts"
import { readWebhookBody } from "./WebhookBody.ts"

export const GITHUB_WEBHOOK_PATH = "/api/v1/github/webhooks"

/**
 * The events the inbox consumer acts on (`github/GithubInbox.ts`); others are acknowledged and
 * recorded as ignored.
 */
export const HANDLED_GITHUB_EVENTS: ReadonlySet<string> = new Set([
  "installation",
  "installation_repositories",
  "issue_comment",
  "pull_request",
  "pull_request_review_comment",
  "push"
])

/** The outbox kind of a delivery for the inbox consumer. */
export const GITHUB_DELIVERY_KIND = "github.delivery"

const accepted = (body: { readonly accepted: boolean; readonly duplicate: boolean }) =>
  HttpServerResponse.jsonUnsafe({ data: body }, { status: 202 })

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const idAt = (value: unknown, ...path: ReadonlyArray<string>): number | undefined => {
  let current = value
  for (const key of path) {
    if (!isObject(current)) return undefined
    current = current[key]
  }
  return typeof current === "number" && Number.isSafeInteger(current) ? current : undefined
}

/** The GitHub account a delivery concerns, as far as its payload says. */
const accountOf = (payload: Record<string, unknown>) =>
  idAt(payload, "installation", "account", "id") ??
  idAt(payload, "repository", "owner", "id") ??
  idAt(payload, "organization", "id")

const decodePayload = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))

export const GithubWebhooksRoute = Layer.unwrap(
  Effect.gen(function* () {
    const apps = yield* GithubAppsRepo
    const deliveries = yield* GithubDeliveriesRepo
    const outbox = yield* Outbox
    const sql = yield* SqlClient.SqlClient

    const { webhookSecretCacheTtl } = yield* AppConfig
    // Keyed by the App id of the target header, 0 when it is absent (every App).
    const secretsOf = yield* Cache.makeWith(
      (appId: number) => apps.webhookSecrets(appId === 0 ? Option.none() : Option.some(appId)).pipe(Effect.orDie),
      { capacity: 1024, timeToLive: (exit) => (Exit.isSuccess(exit) ? webhookSecretCacheTtl : 0) }
    )

    const matching = (candidates: ReadonlyArray<WebhookSecretCandidate>, body: string, signature: string) =>
      Effect.filter(candidates, (candidate) =>
        Effect.promise(() => verify(Redacted.value(candidate.webhookSecret), body, signature).catch(() => false))
      )

    /** The candidates that verify the delivery: the kept ones, else (or when `fresh`) read again. */
    const verifying = (appId: number, body: string, signature: string, fresh: boolean) =>
      Effect.gen(function* () {
        if (!fresh) {
          const kept = yield* matching(yield* Cache.get(secretsOf, appId), body, signature)
          if (kept.length > 0) return { verified: kept, fresh: false }
        }
        yield* Cache.refresh(secretsOf, appId)
        return { verified: yield* matching(yield* Cache.get(secretsOf, appId), body, signature), fresh: true }
      })

    /** Of the verified Apps, the one whose organization mirrors `account`, else one not yet linked. */
    const ownerOf = (verified: ReadonlyArray<WebhookSecretCandidate>, account: number | undefined) =>
      verified.find((candidate) => account !== undefined && candidate.githubAccountId === account) ??
      verified.find((candidate) => candidate.githubAccountId === null)

    const handle = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const headers = request.headers
        const signature = headers["x-hub-signature-256"]
        if (signature === undefined || signature.length === 0) {
          return errorResponse(401, ErrorCodes.unauthorized, "The X-Hub-Signature-256 header is required")
        }
        const read = yield* readWebhookBody(request)
        if (Result.isFailure(read)) return read.failure
        const body = read.success
        const target = Number(headers["x-github-hook-installation-target-id"])
        const appId = Number.isSafeInteger(target) && target > 0 ? target : 0
        const checked = body.length === 0 ? undefined : yield* verifying(appId, body, signature, false)
        if (checked === undefined || checked.verified.length === 0) {
          return errorResponse(401, ErrorCodes.unauthorized, "The signature does not match any configured GitHub App")
        }
        const deliveryId = headers["x-github-delivery"]
        if (deliveryId === undefined || deliveryId.length === 0 || deliveryId.length > 128) {
          return errorResponse(
            400,
            ErrorCodes.invalidHeaders,
            "The X-GitHub-Delivery header is required (1..128 characters)"
          )
        }
        const event = headers["x-github-event"]
        if (event === undefined || event.length === 0 || event.length > 64) {
          return errorResponse(
            400,
            ErrorCodes.invalidHeaders,
            "The X-GitHub-Event header is required (1..64 characters)"
          )
        }
        const decoded = decodePayload(body)
        if (Option.isNone(decoded)) {
          return errorResponse(400, ErrorCodes.invalidBody, "The body must be a JSON object")
        }
        const payload = decoded.value
        const account = accountOf(payload)
        const placed = ownerOf(checked.verified, account)
        const owner =
          checked.fresh || (placed !== undefined && placed.githubAccountId === account)
            ? placed
            : ownerOf((yield* verifying(appId, body, signature, true)).verified, account)
        if (owner === undefined) return accepted({ accepted: false, duplicate: false })
        const handled = HANDLED_GITHUB_EVENTS.has(event)
        const action = typeof payload.action === "string" ? payload.action : null
        const fresh = yield* outbox
          .transaction(
            Effect.gen(function* () {
              const recorded = yield* deliveries.record(
                {
                  deliveryId,
                  organizationId: owner.organizationId,
                  event,
                  action,
                  installationId: idAt(payload, "installation", "id") ?? null,
                  payload
                },
                handled ? null : `event ${event} is not handled`
              )
              if (recorded && handled) {
                yield* outbox.write("bosun-inbox", GITHUB_DELIVERY_KIND, { delivery_id: deliveryId })
              }
              return recorded
            })
          )
          .pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
        return accepted({ accepted: true, duplicate: !fresh })
      })

    return HttpRouter.add("POST", GITHUB_WEBHOOK_PATH, handle)
  })
)

/**
 * `POST /api/v1/github/webhooks`, the GitHub App's webhook (docs/interface.md: What the service
 * does 6, Authentication 4, Events 3; the path is Bosun's own: the interface lists only the tracker
 * webhook). It verifies, records and acknowledges; the inbox consumer does the work later, so the
 * answer never waits for GitHub, an agent or a review.
 *
 * - The signature: `X-Hub-Signature-256`, HMAC-SHA256 of the raw body, checked in constant time by
 *   `@octokit/webhooks-methods` against the sealed webhook secret of each organization whose App
 *   has the id in `X-GitHub-Hook-Installation-Target-ID` (of every configured App when the header
 *   is absent). Missing or matching none: 401, nothing written. The opened secrets are kept for
 *   `BOSUN_WEBHOOK_SECRET_CACHE_TTL` (5 s) and read at most once in that time, whatever arrives
 *   (`GithubAppsRepo`): a forged delivery costs its HMACs, never a query or an unseal.
 * - The organization: of the Apps whose secret matched, the one whose organization mirrors the
 *   payload's GitHub account (installation account, repository owner, organization) by id, else
 *   one whose id is not known yet but whose operator-given login is the account's (compared
 *   case-insensitively; an `installation` event then records the id). An organization nobody set
 *   up for an account takes no delivery, so no installation on another account can claim it. A
 *   delivery for an account no organization here mirrors is acknowledged with `accepted: false`,
 *   not recorded, and an `installation` one logged at warn with the logins the Apps expect.
 * - `X-GitHub-Delivery` and `X-GitHub-Event` are required (400 naming the header); the body must
 *   be a JSON object (400), and, checked once the signature verified, hold no NUL, no lone
 *   surrogate and no nesting deeper than 256 levels (400, `WebhookBody.refuseBadPayload`). The body limit is `BOSUN_WEBHOOK_MAX_BODY_BYTES` (25 MB; 413 above).
 * - The delivery row and, for an event Bosun handles, its `bosun-inbox` outbox row are written in
 *   one transaction. A redelivery of a recorded id answers `duplicate: true` and writes nothing; an
 *   event Bosun does not handle is recorded as ignored, with no outbox row.
 *
 * Answer: 202 `{data: {accepted, duplicate}}`, the tracker webhook's shape
 * (docs/interface.md: Webhook endpoint).
 */
import { ErrorCodes } from "@bosun/domain"
import { verify } from "@octokit/webhooks-methods"
import { Effect, Layer, Option, Redacted, Result, Schema } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { GithubAppsRepo, type WebhookSecretCandidate } from "../../outbound/github/GithubAppsRepo.ts"
import { errorResponse } from "../../platform/http/RequestPipeline.ts"
import { readWebhookBody, refuseBadPayload } from "../../platform/http/WebhookBody.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import { GithubDeliveriesRepo } from "./GithubDeliveriesRepo.ts"

export const GITHUB_WEBHOOK_PATH = "/api/v1/github/webhooks"

/**
 * The events the inbox consumer acts on (`inbound/github/GithubInbox.ts`); others are acknowledged and
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

interface Account {
  readonly id: number
  readonly login: string
}

const accountAt = (payload: Record<string, unknown>, ...path: ReadonlyArray<string>): Account | undefined => {
  const id = idAt(payload, ...path, "id")
  let holder: unknown = payload
  for (const key of path) holder = isObject(holder) ? holder[key] : undefined
  const login = isObject(holder) ? holder.login : undefined
  return id === undefined || typeof login !== "string" ? undefined : { id, login }
}

/**
 * What a delivery is about, where the order of deliveries matters (sql/0040): its pull request or
 * issue (a pull request's comments share its number), its installation, or its repository's
 * pushes; null otherwise. By GitHub's ids, which a rename does not change.
 */
export const subjectOf = (event: string, payload: Record<string, unknown>): string | null => {
  const repository = idAt(payload, "repository", "id")
  const number = idAt(payload, "pull_request", "number") ?? idAt(payload, "issue", "number") ?? idAt(payload, "number")
  switch (event) {
    case "pull_request":
    case "pull_request_review":
    case "pull_request_review_comment":
    case "issue_comment":
    case "issues":
      return repository === undefined || number === undefined ? null : `pr:${repository}:${number}`
    case "installation":
    case "installation_repositories": {
      const installation = idAt(payload, "installation", "id")
      return installation === undefined ? null : `installation:${installation}`
    }
    case "push":
      return repository === undefined ? null : `push:${repository}`
    default:
      return null
  }
}

/** The GitHub account a delivery concerns, as far as its payload says. */
const accountOf = (payload: Record<string, unknown>) =>
  accountAt(payload, "installation", "account") ??
  accountAt(payload, "repository", "owner") ??
  accountAt(payload, "organization")

const decodePayload = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))

export const GithubWebhooksRoute = Layer.unwrap(
  Effect.gen(function* () {
    const apps = yield* GithubAppsRepo
    const deliveries = yield* GithubDeliveriesRepo
    const outbox = yield* Outbox

    const verifying = (appId: number, body: string, signature: string) =>
      Effect.flatMap(apps.webhookSecrets(appId === 0 ? Option.none() : Option.some(appId)).pipe(Effect.orDie), (all) =>
        Effect.filter(all, (candidate) =>
          Effect.promise(() => verify(Redacted.value(candidate.webhookSecret), body, signature).catch(() => false))
        )
      )

    /**
     * Of the verified Apps, the one whose organization mirrors `account` by id, else one whose
     * account id is not known yet and whose operator-given login is the account's.
     */
    const ownerOf = (verified: ReadonlyArray<WebhookSecretCandidate>, account: Account | undefined) =>
      account === undefined
        ? undefined
        : (verified.find((candidate) => candidate.githubAccountId === account.id) ??
          verified.find(
            (candidate) =>
              candidate.githubAccountId === null &&
              candidate.githubLogin !== null &&
              candidate.githubLogin.toLowerCase() === account.login.toLowerCase()
          ))

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
        const verified = body.length === 0 ? [] : yield* verifying(appId, body, signature)
        if (verified.length === 0) {
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
        const bad = refuseBadPayload(body)
        if (bad !== undefined) return bad
        const decoded = decodePayload(body)
        if (Option.isNone(decoded)) {
          return errorResponse(400, ErrorCodes.invalidBody, "The body must be a JSON object")
        }
        const payload = decoded.value
        const account = accountOf(payload)
        const owner = ownerOf(verified, account)
        if (owner === undefined) {
          if (event === "installation" || event === "installation_repositories") {
            yield* Effect.logWarning("github_installation_link_refused").pipe(
              Effect.annotateLogs({
                delivery_id: deliveryId,
                installation_login: account?.login ?? null,
                installation_account_id: account?.id ?? null,
                expected_logins: verified.map((candidate) => candidate.githubLogin ?? "(none set)").join(", ")
              })
            )
          }
          return accepted({ accepted: false, duplicate: false })
        }
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
                  payload,
                  subject: subjectOf(event, payload)
                },
                handled ? null : `event ${event} is not handled`
              )
              if (recorded && handled) {
                yield* outbox.write("bosun-inbox", GITHUB_DELIVERY_KIND, {
                  organization_id: owner.organizationId,
                  delivery_id: deliveryId
                })
              }
              return recorded
            })
          )
          .pipe(Effect.orDie)
        return accepted({ accepted: true, duplicate: !fresh })
      })

    return HttpRouter.add("POST", GITHUB_WEBHOOK_PATH, handle)
  })
)

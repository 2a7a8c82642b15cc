/**
 * `POST /api/v1/linear/webhooks`, the tracker webhook (docs/interface.md: Webhook endpoint,
 * Events 3, Authentication 4). It verifies, records and acknowledges; the inbox consumer does the
 * work.
 *
 * - `Linear-Delivery`, `Linear-Event`, `Linear-Timestamp` and `Linear-Signature` are required:
 *   a missing or malformed one is a 400 naming it, before anything else is read.
 * - The organization is the one whose Linear connection has the payload's `organizationId`
 *   (Linear's workspace id); `Linear-Signature` must be the hex HMAC-SHA256 of the raw body under
 *   that connection's sealed webhook secret, compared in constant time. Unknown workspace or no
 *   match: 401, nothing written.
 * - Freshness, as Linear advises: the body's `webhookTimestamp` (Unix milliseconds) is covered by
 *   the signature, so it is what proves when Linear sent the delivery; one missing, or further than
 *   `BOSUN_LINEAR_WEBHOOK_MAX_AGE` (60 s) from now, is refused as a replay: 401, nothing written.
 *   The unsigned `Linear-Timestamp` header is required and checked the same way, but proves
 *   nothing alone: anyone resending a captured delivery can set it (and a new `Linear-Delivery`).
 * - A signed, fresh payload holding a NUL, a lone surrogate or nesting deeper than 256 levels is a
 *   400 (`refuseBadPayload`), nothing written.
 * - The delivery row and, for an event the inbox handles (Issue, Comment), its `bosun-inbox`
 *   outbox row are written in one transaction. A delivery id already recorded answers
 *   `duplicate: true` and writes nothing; other events are recorded as ignored.
 *
 * Answer: 202 `{data: {accepted, duplicate}}` (docs/interface.md: Webhook endpoint). The endpoint
 * is in the `BosunApi` contract (`LinearWebhookApi`, so the OpenAPI document describes it) and
 * handled raw: nothing is decoded before the signature is checked over the exact bytes.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { BosunApi, ErrorCodes } from "@bosun/domain"
import { Duration, Effect, Option, Redacted, Result, Schema } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { LinearConnectionsRepo } from "../../outbound/linear/LinearConnectionsRepo.ts"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { errorResponse } from "../../platform/http/RequestPipeline.ts"
import { readWebhookBody, refuseBadPayload } from "../../platform/http/WebhookBody.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import { LinearDeliveriesRepo } from "./LinearDeliveriesRepo.ts"

/** The outbox kind of a Linear delivery for the inbox consumer. */
export const LINEAR_DELIVERY_KIND = "linear.delivery"

/** The `Linear-Event` types the inbox acts on; others are acknowledged and recorded as ignored. */
export const HANDLED_LINEAR_EVENTS: ReadonlySet<string> = new Set(["Issue", "Comment"])

const decodePayload = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))

/**
 * A delivery's subject (`WebhookDeliveries`): the issue it is about — an Issue's own id, a
 * Comment's `issueId` — so a comment is never applied before the issue's earlier delivery.
 */
const issueOf = (event: string, payload: Readonly<Record<string, unknown>>): string | null => {
  const data = payload.data
  if (typeof data !== "object" || data === null) return null
  const id = (data as Readonly<Record<string, unknown>>)[event === "Comment" ? "issueId" : "id"]
  return typeof id === "string" && id.length > 0 && id.length <= 512 ? id : null
}

/** Constant-time comparison of the hex signature with the one the secret gives. */
export const linearSignatureMatches = (secret: string, body: string, signature: string) => {
  const expected = createHmac("sha256", secret).update(body).digest()
  const given = /^[0-9a-f]{64}$/i.test(signature) ? Buffer.from(signature, "hex") : Buffer.alloc(0)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

export const LinearWebhooksHttp = group(
  BosunApi,
  "linearWebhooks",
  Effect.fn(function* (handlers) {
    const connections = yield* LinearConnectionsRepo
    const deliveries = yield* LinearDeliveriesRepo
    const outbox = yield* Outbox
    const { linearWebhookMaxAge } = yield* AppConfig
    const maxAgeMs = Duration.toMillis(linearWebhookMaxAge)

    const required = (headers: HttpServerRequest.HttpServerRequest["headers"], name: string, max: number) => {
      const value = headers[name.toLowerCase()]
      return value === undefined || value.length === 0 || value.length > max ? undefined : value
    }
    const missing = (name: string, what: string) =>
      errorResponse(400, ErrorCodes.invalidHeaders, `The ${name} header is required (${what})`)
    const refused = (message: string) => errorResponse(401, ErrorCodes.unauthorized, message)

    const handle = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const headers = request.headers
        const deliveryId = required(headers, "Linear-Delivery", 128)
        if (deliveryId === undefined) return missing("Linear-Delivery", "1..128 characters")
        const event = required(headers, "Linear-Event", 64)
        if (event === undefined) return missing("Linear-Event", "1..64 characters")
        const timestampText = required(headers, "Linear-Timestamp", 16)
        const timestamp = timestampText !== undefined && /^\d+$/.test(timestampText) ? Number(timestampText) : undefined
        if (timestamp === undefined) return missing("Linear-Timestamp", "the send time in Unix milliseconds")
        const signature = required(headers, "Linear-Signature", 128)
        if (signature === undefined) return missing("Linear-Signature", "the hex HMAC-SHA256 of the body")

        const read = yield* readWebhookBody(request)
        if (Result.isFailure(read)) return read.failure
        const body = read.success
        const decoded = decodePayload(body)
        if (Option.isNone(decoded)) return errorResponse(400, ErrorCodes.invalidBody, "The body must be a JSON object")
        const payload = decoded.value
        const workspace = typeof payload.organizationId === "string" ? payload.organizationId : undefined
        const target =
          workspace === undefined || workspace.length > 128
            ? Option.none()
            : yield* connections.webhookTarget(workspace).pipe(Effect.orDie)
        if (
          Option.isNone(target) ||
          !linearSignatureMatches(Redacted.value(target.value.webhookSecret), body, signature)
        ) {
          return refused("The signature does not match the webhook secret of a connected Linear workspace")
        }
        const signedAt = payload.webhookTimestamp
        if (typeof signedAt !== "number" || !Number.isFinite(signedAt)) {
          return refused("The delivery has no webhookTimestamp, so it cannot be told from a replay")
        }
        if (Math.abs(Date.now() - signedAt) > maxAgeMs || Math.abs(Date.now() - timestamp) > maxAgeMs) {
          return refused(
            `The delivery was sent more than ${Duration.format(linearWebhookMaxAge)} from now (a replay or a stale retry)`
          )
        }
        const bad = refuseBadPayload(body)
        if (bad !== undefined) return bad
        const organizationId = target.value.organizationId
        const handled = HANDLED_LINEAR_EVENTS.has(event)
        const fresh = yield* outbox
          .transaction(
            Effect.gen(function* () {
              const recorded = yield* deliveries.record(
                {
                  deliveryId,
                  organizationId,
                  event,
                  action: typeof payload.action === "string" ? payload.action : null,
                  payload,
                  subject: issueOf(event, payload)
                },
                handled ? null : `event ${event} is not handled`
              )
              if (recorded && handled) {
                yield* outbox.write("bosun-inbox", LINEAR_DELIVERY_KIND, {
                  organization_id: organizationId,
                  delivery_id: deliveryId
                })
              }
              return recorded
            })
          )
          .pipe(Effect.orDie)
        return HttpServerResponse.jsonUnsafe({ data: { accepted: true, duplicate: !fresh } }, { status: 202 })
      })

    return handlers.handleRaw("receive", ({ request }) => handle(request))
  })
)

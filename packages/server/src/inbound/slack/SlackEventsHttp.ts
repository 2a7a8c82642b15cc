/**
 * `POST /api/v1/slack/events`, the Slack app's Events API request URL (docs/interface.md: What the
 * service does 3, Authentication 4, Events 3). It verifies, records and acknowledges well inside
 * Slack's 3 s; the inbox consumer does the work.
 *
 * - `X-Slack-Request-Timestamp` (Unix seconds) and `X-Slack-Signature` (`v0=` and 64 hex digits)
 *   are required: a missing or malformed one is a 400 naming it, before anything else is read.
 * - The signature must be the HMAC-SHA256 of `v0:{timestamp}:{raw body}` under the signing secret
 *   of the workspace the payload's `team_id` names, compared in constant time; a timestamp more
 *   than 5 minutes from now is a replay. Either: 401, nothing written. A signed payload holding a
 *   NUL, a lone surrogate or nesting deeper than 256 levels is then a 400 (`refuseBadPayload`).
 * - `url_verification` names no team: it is verified against every connected workspace's secret
 *   (connect the organization before pasting the URL into Slack) and answered with its challenge.
 * - `event_callback`: the delivery row (`slack_deliveries`, keyed by `event_id`) and, for the
 *   events the inbox handles (`app_mention`, `message`), its `bosun-inbox` outbox row commit in one
 *   transaction. Slack retries a slow answer with the same `event_id` (`X-Slack-Retry-Num`): that
 *   is acknowledged as `duplicate: true` and processed once. Other events and envelope types are
 *   recorded as ignored or acknowledged.
 *
 * Answer: 202 `{data: {accepted, duplicate}}`, the Linear webhook's shape.
 *
 * `POST /api/v1/slack/interactions` is the app's Interactivity Request URL: the same headers and
 * signature over the raw form body, whose `payload` field is the interaction's JSON (its team in
 * `team.id`). A `block_actions` click on a plan's Approve or Reject button (`PLAN_BUTTON_ACTIONS`)
 * is recorded under `interaction:{trigger_id}` (a click is one trigger) with its inbox row, and
 * acknowledged with 200 at once; anything else is acknowledged as not accepted. Slack does not
 * retry interactions, but a repeated trigger is still applied once.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { BosunApi, ErrorCodes } from "@bosun/domain"
import { Effect, Option, Redacted, Result, Schema } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { PLAN_BUTTON_ACTIONS } from "../../features/workItems/WorkItemReplies.ts"
import { SlackConnectionsRepo } from "../../outbound/slack/SlackConnectionsRepo.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { errorResponse } from "../../platform/http/RequestPipeline.ts"
import { readWebhookBody, refuseBadPayload } from "../../platform/http/WebhookBody.ts"
import { Outbox } from "../../platform/storage/Outbox.ts"
import { SlackDeliveriesRepo } from "./SlackDeliveriesRepo.ts"

/** The outbox kind of a Slack delivery for the inbox consumer. */
export const SLACK_DELIVERY_KIND = "slack.delivery"

/** The inner event types the inbox acts on; others are acknowledged and recorded as ignored. */
export const HANDLED_SLACK_EVENTS: ReadonlySet<string> = new Set(["app_mention", "message"])

/** Slack's replay window for `X-Slack-Request-Timestamp`. */
export const SLACK_MAX_AGE_SECONDS = 300

const decodePayload = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Record(Schema.String, Schema.Unknown)))

/** Constant-time comparison of `v0=<hex>` with the signature the secret gives. */
export const slackSignatureMatches = (secret: string, timestamp: string, body: string, signature: string) => {
  const expected = createHmac("sha256", secret).update(`v0:${timestamp}:${body}`).digest()
  const given = /^v0=[0-9a-f]{64}$/i.test(signature) ? Buffer.from(signature.slice(3), "hex") : Buffer.alloc(0)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

const text = (value: unknown, max: number) =>
  typeof value === "string" && value.length > 0 && value.length <= max ? value : undefined

/** A delivery's subject (`WebhookDeliveries`): its thread, so one thread's messages and clicks apply in order. */
const threadOf = (channel: unknown, ts: unknown): string | null => {
  const id = text(channel, 64)
  const thread = text(ts, 64)
  return id === undefined || thread === undefined ? null : `${id}:${thread}`
}

const objectOf = (value: unknown): Readonly<Record<string, unknown>> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Readonly<Record<string, unknown>>)
    : undefined

/** The delivery kind of a button click, beside the Events API's event types. */
export const SLACK_BLOCK_ACTIONS = "block_actions"

const missing = (name: string, what: string) =>
  errorResponse(400, ErrorCodes.invalidHeaders, `The ${name} header is required (${what})`)
const refused = (message: string) => errorResponse(401, ErrorCodes.unauthorized, message)
const notSigned = refused("The signature does not match the signing secret of a connected Slack workspace")

const stale = refused("The X-Slack-Request-Timestamp is more than 5 minutes from now (a replay)")

/** The services both routes use, taken once when the routes are built. */
const makeSlackRoutesContext = Effect.gen(function* () {
  return {
    connections: yield* SlackConnectionsRepo,
    deliveries: yield* SlackDeliveriesRepo,
    outbox: yield* Outbox,
    sql: yield* SqlClient.SqlClient
  }
})

type SlackRoutesContext = Effect.Success<typeof makeSlackRoutesContext>

interface SignedRequest {
  readonly timestamp: string
  readonly signature: string
  readonly body: string
  /** The timestamp is within Slack's replay window. */
  readonly fresh: boolean
}

/** The signed request's headers and raw body, or the 400 that refuses it. */
const signedRequest = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const timestamp = request.headers["x-slack-request-timestamp"]
    if (timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) {
      return Result.fail(missing("X-Slack-Request-Timestamp", "the send time in Unix seconds"))
    }
    const signature = request.headers["x-slack-signature"]
    if (signature === undefined || !/^v0=[0-9a-f]{64}$/i.test(signature)) {
      return Result.fail(missing("X-Slack-Signature", "v0= and the hex HMAC-SHA256 of v0:{timestamp}:{body}"))
    }
    const read = yield* readWebhookBody(request)
    if (Result.isFailure(read)) return Result.fail(read.failure)
    const fresh = Math.abs(Date.now() / 1000 - Number(timestamp)) <= SLACK_MAX_AGE_SECONDS
    return Result.succeed({ timestamp, signature, body: read.success, fresh })
  })

/** The organization of the workspace `team` whose signing secret signed the request; none otherwise. */
const signer = (
  ctx: SlackRoutesContext,
  team: string | undefined,
  signed: { timestamp: string; signature: string; body: string }
) =>
  Effect.gen(function* () {
    const target = team === undefined ? Option.none() : yield* ctx.connections.eventsTarget(team).pipe(Effect.orDie)
    if (
      Option.isNone(target) ||
      !slackSignatureMatches(
        Redacted.value(target.value.signingSecret),
        signed.timestamp,
        signed.body,
        signed.signature
      )
    ) {
      return Option.none<string>()
    }
    return Option.some(target.value.organizationId)
  })

/** Records the delivery and, when handled, its inbox row in one transaction; false when it was recorded before. */
const recordDelivery = (
  ctx: SlackRoutesContext,
  delivery: {
    readonly deliveryId: string
    readonly organizationId: string
    readonly event: string
    readonly action: string | null
    readonly payload: Readonly<Record<string, unknown>>
    readonly subject: string | null
  },
  ignoredReason: string | null
) =>
  ctx.outbox
    .transaction(
      Effect.gen(function* () {
        const written = yield* ctx.deliveries.record(delivery, ignoredReason)
        if (written && ignoredReason === null) {
          yield* ctx.outbox.write("bosun-inbox", SLACK_DELIVERY_KIND, {
            organization_id: delivery.organizationId,
            delivery_id: delivery.deliveryId
          })
        }
        return written
      })
    )
    .pipe(Effect.orDie)

/**
 * `url_verification` names no team, so any connected workspace's secret may sign it; it is
 * answered with its challenge.
 */
const verifyUrl = (ctx: SlackRoutesContext, payload: Readonly<Record<string, unknown>>, signed: SignedRequest) =>
  Effect.gen(function* () {
    const secrets = yield* ctx.connections.signingSecrets().pipe(Effect.orDie)
    if (
      !secrets.some((secret) =>
        slackSignatureMatches(Redacted.value(secret), signed.timestamp, signed.body, signed.signature)
      )
    ) {
      return notSigned
    }
    if (!signed.fresh) return stale
    const challenge = text(payload.challenge, 512)
    if (challenge === undefined) {
      return errorResponse(400, ErrorCodes.invalidBody, "A url_verification request carries a challenge")
    }
    return HttpServerResponse.jsonUnsafe({ challenge })
  })

const acknowledgedEvent = (duplicate: boolean) =>
  HttpServerResponse.jsonUnsafe({ data: { accepted: true, duplicate } }, { status: 202 })

/**
 * A signed `event_callback`: its delivery is recorded (ignored when the inbox does not handle its
 * type) and acknowledged; Slack's retry of a slow answer is logged and acknowledged as a duplicate.
 */
const recordEventCallback = (
  ctx: SlackRoutesContext,
  request: HttpServerRequest.HttpServerRequest,
  payload: Readonly<Record<string, unknown>>,
  organizationId: string
) =>
  Effect.gen(function* () {
    const eventId = text(payload.event_id, 128)
    const event =
      typeof payload.event === "object" && payload.event !== null
        ? (payload.event as Readonly<Record<string, unknown>>)
        : undefined
    const eventType = text(event?.type, 64)
    if (eventId === undefined || eventType === undefined) {
      return errorResponse(
        400,
        ErrorCodes.invalidBody,
        "An event_callback carries an event_id and an event with a type"
      )
    }
    const recorded = yield* recordDelivery(
      ctx,
      {
        deliveryId: eventId,
        organizationId,
        event: eventType,
        action: text(event?.subtype, 64) ?? null,
        payload,
        subject: threadOf(event?.channel, event?.thread_ts ?? event?.ts)
      },
      HANDLED_SLACK_EVENTS.has(eventType) ? null : `event ${eventType} is not handled`
    )
    const retry = request.headers["x-slack-retry-num"]
    if (retry !== undefined) {
      yield* Effect.logInfo("slack_event_retry").pipe(
        Effect.annotateLogs({
          org_id: organizationId,
          event_id: eventId,
          retry_num: retry.slice(0, 8),
          retry_reason: (request.headers["x-slack-retry-reason"] ?? "").slice(0, 64),
          duplicate: !recorded
        })
      )
    }
    return acknowledgedEvent(!recorded)
  })

/** `POST /slack/events`: verified (signature, then freshness, then payload), then answered by type. */
const receive = (ctx: SlackRoutesContext, request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const signed = yield* signedRequest(request)
    if (Result.isFailure(signed)) return signed.failure
    const decoded = decodePayload(signed.success.body)
    if (Option.isNone(decoded)) return errorResponse(400, ErrorCodes.invalidBody, "The body must be a JSON object")
    const payload = decoded.value
    if (payload.type === "url_verification") return yield* verifyUrl(ctx, payload, signed.success)
    const target = yield* signer(ctx, text(payload.team_id, 64), signed.success)
    if (Option.isNone(target)) return notSigned
    if (!signed.success.fresh) return stale
    const bad = refuseBadPayload(signed.success.body)
    if (bad !== undefined) return bad
    if (payload.type !== "event_callback") return acknowledgedEvent(false)
    return yield* recordEventCallback(ctx, request, payload, target.value)
  })

/** The first of the interaction's actions that is a plan's Approve or Reject button. */
const clickedPlanButton = (payload: Readonly<Record<string, unknown>>) => {
  const actions = Array.isArray(payload.actions) ? payload.actions.map(objectOf) : []
  return actions.find((action) => {
    const id = text(action?.action_id, 255)
    return id !== undefined && Object.hasOwn(PLAN_BUTTON_ACTIONS, id)
  })
}

const acknowledgedInteraction = (accepted: boolean, duplicate: boolean) =>
  HttpServerResponse.jsonUnsafe({ data: { accepted, duplicate } })

/**
 * `POST /slack/interactions`: a signed click on a plan's button is recorded under its trigger (a
 * click is one trigger, so a repeated one is applied once); anything else is acknowledged as not
 * accepted.
 */
const interact = (ctx: SlackRoutesContext, request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function* () {
    const signed = yield* signedRequest(request)
    if (Result.isFailure(signed)) return signed.failure
    const field = new URLSearchParams(signed.success.body).get("payload")
    const decoded = field === null ? Option.none() : decodePayload(field)
    if (Option.isNone(decoded)) {
      return errorResponse(
        400,
        ErrorCodes.invalidBody,
        "An interactivity request is a form whose payload field is a JSON object"
      )
    }
    const payload = decoded.value
    const target = yield* signer(ctx, text(objectOf(payload.team)?.id, 64), signed.success)
    if (Option.isNone(target)) return notSigned
    if (!signed.success.fresh) return stale
    const bad = field === null ? undefined : refuseBadPayload(field)
    if (bad !== undefined) return bad
    if (payload.type !== SLACK_BLOCK_ACTIONS) return acknowledgedInteraction(false, false)
    const clicked = clickedPlanButton(payload)
    if (clicked === undefined) return acknowledgedInteraction(false, false)
    const triggerId = text(payload.trigger_id, 100)
    if (triggerId === undefined) {
      return errorResponse(400, ErrorCodes.invalidBody, "A block_actions interaction carries a trigger_id")
    }
    const recorded = yield* recordDelivery(
      ctx,
      {
        deliveryId: `interaction:${triggerId}`,
        organizationId: target.value,
        event: SLACK_BLOCK_ACTIONS,
        action: PLAN_BUTTON_ACTIONS[text(clicked.action_id, 255) ?? ""] ?? null,
        payload,
        subject: threadOf(
          objectOf(payload.channel)?.id,
          objectOf(payload.message)?.thread_ts ?? objectOf(payload.message)?.ts
        )
      },
      null
    )
    return acknowledgedInteraction(true, !recorded)
  })

export const SlackEventsHttp = group(
  BosunApi,
  "slackEvents",
  Effect.fn(function* (handlers) {
    const ctx = yield* makeSlackRoutesContext
    return handlers
      .handleRaw("receive", ({ request }) => receive(ctx, request))
      .handleRaw("interact", ({ request }) => interact(ctx, request))
  })
)

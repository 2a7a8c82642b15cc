/**
 * Connecting an organization to Linear through endpoints Bosun defines: `PUT` sets it (ADMIN or
 * above, audited, secrets sealed), `GET` shows it without secrets, `DELETE` disconnects.
 *
 * `LinearWebhookApi` is `POST /linear/webhooks` (docs/interface.md: Webhook endpoint). Its
 * signature is over the exact body bytes, so the server handles it raw (no payload decoding, no
 * session): the payload schema here documents what Linear sends; the headers are checked by the
 * handler, which names a missing one in its 400.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadGateway, BadRequest, Conflict, Forbidden, NotFound, Unauthorized } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { LinearConnection, LinearConnectionSettings } from "../LinearConnection.ts"
import { SessionAuth } from "./Auth.ts"

export class LinearApi extends HttpApiGroup.make("linear")
  .add(
    HttpApiEndpoint.get("getConnection", "/organizations/:organization_id/linear-connection", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: LinearConnection }),
      error: NotFound
    }),
    HttpApiEndpoint.put("connect", "/organizations/:organization_id/linear-connection", {
      params: { organization_id: PathId },
      payload: LinearConnectionSettings,
      success: Schema.Struct({ data: LinearConnection }),
      error: [NotFound, Forbidden, BadRequest, Conflict, BadGateway]
    }),
    HttpApiEndpoint.delete("disconnect", "/organizations/:organization_id/linear-connection", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: Schema.Struct({ deleted: Schema.Boolean }) }),
      error: [NotFound, Forbidden]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

/** The fields of Linear's webhook payload Bosun reads; Linear sends more, which are kept as sent. */
export const LinearWebhookPayload = Schema.Struct({
  action: Schema.String,
  type: Schema.String,
  organizationId: Schema.String,
  webhookTimestamp: Schema.Number,
  data: Schema.Record(Schema.String, Schema.Unknown),
  updatedFrom: Schema.optional(Schema.Record(Schema.String, Schema.Unknown)),
  url: Schema.optional(Schema.String)
})

export const LinearWebhookAck = Schema.Struct({
  data: Schema.Struct({ accepted: Schema.Boolean, duplicate: Schema.Boolean })
})

export class LinearWebhookApi extends HttpApiGroup.make("linearWebhooks")
  .add(
    HttpApiEndpoint.post("receive", "/linear/webhooks", {
      payload: LinearWebhookPayload,
      success: LinearWebhookAck.pipe(HttpApiSchema.status(202)),
      error: [BadRequest, Unauthorized]
    }).annotateMerge(
      OpenApi.annotations({
        summary: "Receive a Linear webhook delivery",
        description:
          "Requires the Linear-Delivery, Linear-Event, Linear-Timestamp (Unix milliseconds, within " +
          "BOSUN_LINEAR_WEBHOOK_MAX_AGE of now) and Linear-Signature (hex HMAC-SHA256 of the raw body " +
          "under the workspace's webhook secret) headers. A missing header is a 400 naming it; a " +
          "signature or timestamp that does not verify is a 401 and nothing is written. A delivery " +
          "id already recorded answers duplicate: true and is not processed again."
      })
    )
  )
  .prefix("/api/v1") {}

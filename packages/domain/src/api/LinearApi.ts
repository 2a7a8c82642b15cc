/**
 * Connecting an organization to Linear (issue 9: "installing/connecting ... through endpoints you
 * define"): `PUT` sets it (ADMIN or above, audited, secrets sealed), `GET` shows it without
 * secrets, `DELETE` disconnects. The webhook itself is `POST /api/v1/linear/webhooks`, outside this
 * contract (a raw route: its signature is over the exact bytes).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound } from "../ApiError.ts"
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
      error: [NotFound, Forbidden, BadRequest, Conflict]
    }),
    HttpApiEndpoint.delete("disconnect", "/organizations/:organization_id/linear-connection", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: Schema.Struct({ deleted: Schema.Boolean }) }),
      error: [NotFound, Forbidden]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

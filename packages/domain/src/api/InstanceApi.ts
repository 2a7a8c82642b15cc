/**
 * `GET /api/v1/instance`: what this Bosun instance is (name, version, API version). It needs no
 * session, touches no database, and runs behind the migration gate like every `/api/*` route.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"

export const InstanceInfo = Schema.Struct({
  name: Schema.Literal("bosun"),
  version: Schema.String,
  api_version: Schema.Literal("v1")
})
export type InstanceInfo = typeof InstanceInfo.Type

export class InstanceApi extends HttpApiGroup.make("instance")
  .add(
    HttpApiEndpoint.get("info", "/instance", {
      success: Schema.Struct({ data: InstanceInfo })
    })
  )
  .prefix("/api/v1") {}

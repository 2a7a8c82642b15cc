/**
 * `GET /api/v1/instance`: what this Bosun instance is (name, version, API version); and
 * `GET /api/v1/schemas/bosun-config.json`, the JSON Schema of a repository's `.bosun.yaml`, for
 * editors to validate the file with. Neither needs a session or touches the database; both run
 * behind the migration gate like every `/api/*` route.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { SandboxProvider } from "../RepositoryConfiguration.ts"

export const InstanceInfo = Schema.Struct({
  name: Schema.Literal("bosun"),
  version: Schema.String,
  api_version: Schema.Literal("v1"),
  /** The sandbox providers this instance is set up for (EXTERNAL_RUNTIME always): what a repository can choose. */
  sandbox_providers: Schema.Array(SandboxProvider)
})
export type InstanceInfo = typeof InstanceInfo.Type

export class InstanceApi extends HttpApiGroup.make("instance")
  .add(
    HttpApiEndpoint.get("info", "/instance", {
      success: Schema.Struct({ data: InstanceInfo })
    }),
    HttpApiEndpoint.get("bosunConfigSchema", "/schemas/bosun-config.json", {
      success: Schema.Record(Schema.String, Schema.Unknown)
    })
  )
  .prefix("/api/v1") {}

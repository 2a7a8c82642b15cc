/**
 * Connected apps (spec: Organization endpoints; the path segment `composio` is the spec's):
 * `POST .../composio/connections` `{toolkit_slug}` enables a no-auth app or creates a hosted
 * connect link for the signed-in member. Any member may ask, since the connection is their own.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { BadGateway, Conflict, NotFound, ServiceUnavailable } from "../ApiError.ts"
import { ConnectedAppConnection, ConnectedAppConnectionRequest } from "../ConnectedApp.ts"
import { PathId } from "../Ids.ts"
import { SessionAuth } from "./Auth.ts"

export class ComposioApi extends HttpApiGroup.make("composio")
  .add(
    HttpApiEndpoint.post("connect", "/organizations/:organization_id/composio/connections", {
      params: { organization_id: PathId },
      payload: ConnectedAppConnectionRequest,
      success: Schema.Struct({ data: ConnectedAppConnection }),
      error: [NotFound, Conflict, BadGateway, ServiceUnavailable]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

/**
 * Connected apps (docs/interface.md: Organization endpoints, which name the path segment
 * `composio`): `POST .../composio/connections` `{toolkit_slug}` enables a no-auth app or creates a
 * hosted connect link for the signed-in member. Any member may ask, since the connection is their
 * own. `GET .../composio/connections` lists the signed-in member's own connected apps in the
 * organization, by toolkit slug.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { BadGateway, Conflict, NotFound, ServiceUnavailable } from "../ApiError.ts"
import { ConnectedApp, ConnectedAppConnection, ConnectedAppConnectionRequest } from "../ConnectedApp.ts"
import { PathId } from "../Ids.ts"
import { SessionAuth } from "./Auth.ts"

export class ComposioApi extends HttpApiGroup.make("composio")
  .add(
    HttpApiEndpoint.get("list", "/organizations/:organization_id/composio/connections", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: Schema.Array(ConnectedApp) }),
      error: NotFound
    }),
    HttpApiEndpoint.post("connect", "/organizations/:organization_id/composio/connections", {
      params: { organization_id: PathId },
      payload: ConnectedAppConnectionRequest,
      success: Schema.Struct({ data: ConnectedAppConnection }),
      error: [NotFound, Conflict, BadGateway, ServiceUnavailable]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

/**
 * The agent connection (docs/interface.md: Organization endpoints, which name the path segment
 * `opencode-connection`): read it (members), set one provider's API key or import an OpenCode
 * `auth.json` (ADMIN or SUPER_USER, else 403). The optional query parameter `repository_id` selects
 * a repository's override instead of the organization's connection, for reads and writes alike.
 * `GET .../opencode-connection/usage/{provider_id}` (an addition to the interface; members) answers
 * what the provider reports about the organization's key for it, through the organization's
 * UsageCache: 404 without a key for that provider or when the provider reports no usage, 502 when
 * it fails. `POST .../opencode-connection/test` (ADMIN) runs one minimal agent turn with the
 * credentials and model in force and records it; `GET` of the same path answers the last one (null
 * before any). `GET /organizations/{organization_id}/setup` (members) is the first-day checklist.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import {
  AgentConnection,
  AgentConnectionWrite,
  AgentImport,
  ApiKeyUpdate,
  ModelTurnResult,
  ProviderUsage
} from "../AgentConnection.ts"
import { BadGateway, Forbidden, NotFound } from "../ApiError.ts"
import { PathId, ProviderId } from "../Ids.ts"
import { SetupChecklist } from "../Setup.ts"
import { SessionAuth } from "./Auth.ts"

const query = { repository_id: Schema.optional(PathId) }

export class AgentConnectionApi extends HttpApiGroup.make("agentConnection")
  .add(
    HttpApiEndpoint.get("get", "/organizations/:organization_id/opencode-connection", {
      params: { organization_id: PathId },
      query,
      success: Schema.Struct({ data: AgentConnection }),
      error: NotFound
    }),
    HttpApiEndpoint.put("setApiKey", "/organizations/:organization_id/opencode-connection/api-keys/:provider_id", {
      params: { organization_id: PathId, provider_id: ProviderId },
      query,
      payload: ApiKeyUpdate,
      success: Schema.Struct({ data: AgentConnectionWrite }),
      error: [NotFound, Forbidden]
    }),
    HttpApiEndpoint.put("import", "/organizations/:organization_id/opencode-connection/import", {
      params: { organization_id: PathId },
      query,
      payload: AgentImport,
      success: Schema.Struct({ data: AgentConnectionWrite }),
      error: [NotFound, Forbidden]
    }),
    HttpApiEndpoint.get("usage", "/organizations/:organization_id/opencode-connection/usage/:provider_id", {
      params: { organization_id: PathId, provider_id: ProviderId },
      success: Schema.Struct({ data: ProviderUsage }),
      error: [NotFound, BadGateway]
    }),
    HttpApiEndpoint.post("test", "/organizations/:organization_id/opencode-connection/test", {
      params: { organization_id: PathId },
      query,
      success: Schema.Struct({ data: ModelTurnResult }),
      error: [NotFound, Forbidden]
    }),
    HttpApiEndpoint.get("lastTest", "/organizations/:organization_id/opencode-connection/test", {
      params: { organization_id: PathId },
      query,
      success: Schema.Struct({ data: Schema.NullOr(ModelTurnResult) }),
      error: NotFound
    }),
    HttpApiEndpoint.get("setup", "/organizations/:organization_id/setup", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: SetupChecklist }),
      error: NotFound
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

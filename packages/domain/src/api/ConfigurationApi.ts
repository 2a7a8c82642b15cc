/**
 * `GET` and `PUT /api/v1/organizations/{organization_id}/repositories/{repository_id}/configuration`
 * (spec: Organization endpoints): the effective configuration (members), and the repository's
 * overrides of the agent, review_policy and sandbox groups (ADMIN or above; answers 204).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { Forbidden, NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { RepositoryConfiguration, RepositoryConfigurationUpdate } from "../RepositoryConfiguration.ts"
import { SessionAuth } from "./Auth.ts"

const params = { organization_id: PathId, repository_id: PathId }

export class ConfigurationApi extends HttpApiGroup.make("configuration")
  .add(
    HttpApiEndpoint.get("get", "/organizations/:organization_id/repositories/:repository_id/configuration", {
      params,
      success: Schema.Struct({ data: RepositoryConfiguration }),
      error: NotFound
    }),
    HttpApiEndpoint.put("put", "/organizations/:organization_id/repositories/:repository_id/configuration", {
      params,
      payload: RepositoryConfigurationUpdate,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

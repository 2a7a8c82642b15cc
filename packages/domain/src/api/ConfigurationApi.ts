/**
 * Configuration at two levels (docs/interface.md: Organization endpoints;
 * Resources "Repository configuration"): `GET`/`PUT /organizations/{organization_id}/configuration`
 * for the organization's own settings, `GET`/`PUT .../repositories/{repository_id}/configuration`
 * for a repository's, and `DELETE .../configuration/{group}` at either level, which drops that
 * level's values of one group so it inherits again. Members read; ADMIN writes (204). Bodies are
 * flat and partial (`ConfigurationUpdate`); unknown fields are a 400.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound } from "../ApiError.ts"
import { ConfigurationUpdate } from "../ConfigurationUpdate.ts"
import { PathId } from "../Ids.ts"
import { CONFIGURATION_GROUPS, RepositoryConfiguration } from "../RepositoryConfiguration.ts"
import { SessionAuth } from "./Auth.ts"

const organization = { organization_id: PathId }
const repository = { organization_id: PathId, repository_id: PathId }
const ConfigurationGroupParam = Schema.Literals(CONFIGURATION_GROUPS)
const strict = { onExcessProperty: "error" } as const

export class ConfigurationApi extends HttpApiGroup.make("configuration")
  .add(
    HttpApiEndpoint.get("getOrganization", "/organizations/:organization_id/configuration", {
      params: organization,
      success: Schema.Struct({ data: RepositoryConfiguration }),
      error: NotFound
    }),
    HttpApiEndpoint.put("putOrganization", "/organizations/:organization_id/configuration", {
      params: organization,
      payload: ConfigurationUpdate,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden, BadRequest, Conflict]
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.delete("resetOrganization", "/organizations/:organization_id/configuration/:group", {
      params: { ...organization, group: ConfigurationGroupParam },
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden]
    }),
    HttpApiEndpoint.get("get", "/organizations/:organization_id/repositories/:repository_id/configuration", {
      params: repository,
      success: Schema.Struct({ data: RepositoryConfiguration }),
      error: NotFound
    }),
    HttpApiEndpoint.put("put", "/organizations/:organization_id/repositories/:repository_id/configuration", {
      params: repository,
      payload: ConfigurationUpdate,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Forbidden, BadRequest, Conflict]
    }).annotate(HttpApi.PayloadParseOptions, strict),
    HttpApiEndpoint.delete(
      "reset",
      "/organizations/:organization_id/repositories/:repository_id/configuration/:group",
      {
        params: { ...repository, group: ConfigurationGroupParam },
        success: HttpApiSchema.NoContent,
        error: [NotFound, Forbidden]
      }
    )
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

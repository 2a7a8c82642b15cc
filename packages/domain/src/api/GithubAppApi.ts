/**
 * `PUT /api/v1/organizations/{organization_id}/github-app`
 * (docs/interface.md: Bootstrap-token endpoints).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { BadRequest } from "../ApiError.ts"
import { GithubAppConfiguration, GithubAppConfigurationResult } from "../GithubApp.ts"
import { PathId } from "../Ids.ts"
import { BootstrapAuth } from "./Auth.ts"

export class GithubAppApi extends HttpApiGroup.make("githubApp")
  .add(
    HttpApiEndpoint.put("configure", "/organizations/:organization_id/github-app", {
      params: { organization_id: PathId },
      payload: GithubAppConfiguration,
      success: Schema.Struct({ data: GithubAppConfigurationResult }),
      error: BadRequest
    })
  )
  .middleware(BootstrapAuth)
  .prefix("/api/v1") {}

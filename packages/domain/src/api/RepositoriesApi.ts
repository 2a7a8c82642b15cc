/**
 * Repositories of an organization (docs/interface.md: Organization endpoints): `PATCH` enables or
 * pauses reviews (ADMIN or above); the list and single reads serve the dashboard. All behind the
 * session cookie; a repository of another organization is 404.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Forbidden, NotFound } from "../ApiError.ts"
import { PathId } from "../Ids.ts"
import { Repository, RepositoryUpdate } from "../Repository.ts"
import { SessionAuth } from "./Auth.ts"

const params = { organization_id: PathId, repository_id: PathId }

export class RepositoriesApi extends HttpApiGroup.make("repositories")
  .add(
    HttpApiEndpoint.get("list", "/organizations/:organization_id/repositories", {
      params: { organization_id: PathId },
      success: Schema.Struct({ data: Schema.Array(Repository) }),
      error: NotFound
    }),
    HttpApiEndpoint.get("get", "/organizations/:organization_id/repositories/:repository_id", {
      params,
      success: Schema.Struct({ data: Repository }),
      error: NotFound
    }),
    HttpApiEndpoint.patch("update", "/organizations/:organization_id/repositories/:repository_id", {
      params,
      payload: RepositoryUpdate,
      success: Schema.Struct({ data: Repository }),
      error: [NotFound, Forbidden]
    })
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

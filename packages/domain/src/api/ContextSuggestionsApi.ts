/**
 * Context suggestions of a repository (docs/interface.md: Organization endpoints): the decision
 * (ADMIN or above), and the list and `GET .../context-suggestions/{suggestion_id}` for the
 * dashboard (members). A suggestion is found only under its own (primary) repository's path.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Conflict, Forbidden, NotFound } from "../ApiError.ts"
import { ContextSuggestion, ContextSuggestionDecision } from "../ContextSuggestion.ts"
import { PathId } from "../Ids.ts"
import { SessionAuth } from "./Auth.ts"

export class ContextSuggestionsApi extends HttpApiGroup.make("contextSuggestions")
  .add(
    HttpApiEndpoint.get("list", "/organizations/:organization_id/repositories/:repository_id/context-suggestions", {
      params: { organization_id: PathId, repository_id: PathId },
      success: Schema.Struct({ data: Schema.Array(ContextSuggestion) }),
      error: NotFound
    }),
    HttpApiEndpoint.get(
      "get",
      "/organizations/:organization_id/repositories/:repository_id/context-suggestions/:suggestion_id",
      {
        params: { organization_id: PathId, repository_id: PathId, suggestion_id: PathId },
        success: Schema.Struct({ data: ContextSuggestion }),
        error: NotFound
      }
    ),
    HttpApiEndpoint.post(
      "decide",
      "/organizations/:organization_id/repositories/:repository_id/context-suggestions/:suggestion_id/decision",
      {
        params: { organization_id: PathId, repository_id: PathId, suggestion_id: PathId },
        payload: ContextSuggestionDecision,
        success: Schema.Struct({ data: ContextSuggestion }),
        error: [NotFound, Forbidden, Conflict]
      }
    )
  )
  .middleware(SessionAuth)
  .prefix("/api/v1") {}

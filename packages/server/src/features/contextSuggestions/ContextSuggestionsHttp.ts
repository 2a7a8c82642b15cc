/**
 * Context suggestions of a repository (docs/interface.md: Organization endpoints): the list and
 * `GET .../context-suggestions/{suggestion_id}` for members, `POST .../decision` for ADMINs
 * (audited; 409 `suggestion_already_decided` the second time). A suggestion is reached only under
 * its primary repository's path: under any other it is 404, as a missing one.
 */
import { BosunApi, Conflict, CurrentUser, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import { ContextSuggestionsRepo } from "./ContextSuggestionsRepo.ts"

const suggestionNotFound = NotFound.fromCode(
  ErrorCodes.notFound,
  "No context suggestion has this id for this repository"
)

export const ContextSuggestionsHttp = group(
  BosunApi,
  "contextSuggestions",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const repositories = yield* RepositoriesRepo
    const suggestions = yield* ContextSuggestionsRepo
    const audit = yield* AuditLog
    return handlers
      .handle("list", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          if (Option.isNone(yield* repositories.find(params.organization_id, params.repository_id))) {
            return yield* NotFound.fromCode(ErrorCodes.notFound, "No repository has this id in this organization")
          }
          return { data: yield* suggestions.list(params.organization_id, params.repository_id) }
        })
      )
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const found = yield* suggestions.find(params.organization_id, params.repository_id, params.suggestion_id)
          if (Option.isNone(found)) return yield* suggestionNotFound
          return { data: found.value }
        })
      )
      .handle("decide", ({ params, payload }) =>
        Effect.gen(function* () {
          yield* access.require(params.organization_id, "ADMIN")
          const user = yield* CurrentUser
          const approve = payload.decision === "approve"
          const decided = yield* audit
            .audited(
              suggestions.decide(
                params.organization_id,
                params.repository_id,
                params.suggestion_id,
                approve,
                user.userId
              ),
              () => ({
                organizationId: params.organization_id,
                actor: { kind: "user", userId: user.userId },
                action: approve ? "context_suggestion.approve" : "context_suggestion.reject",
                target: `context_suggestion:${params.suggestion_id}`
              })
            )
            .pipe(
              Effect.catchTag("SuggestionAlreadyDecided", ({ state }) =>
                Effect.fail(
                  Conflict.fromCode(
                    ErrorCodes.suggestionAlreadyDecided,
                    `This suggestion was already decided: ${state}`
                  )
                )
              )
            )
          if (Option.isNone(decided)) return yield* suggestionNotFound
          return { data: decided.value }
        })
      )
  })
)

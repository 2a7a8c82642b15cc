/**
 * Context suggestions of a repository (docs/interface.md: Resources "Context suggestion"). `decide`
 * locks the row, so a suggestion is decided once; approving adds the secondary repository to the
 * primary's configuration in the same transaction. Every query filters by organization and primary
 * repository.
 */
import type { ContextSuggestion } from "@bosun/domain"
import { Context, Data, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../agentConnections/index.ts"

export class SuggestionAlreadyDecided extends Data.TaggedError("SuggestionAlreadyDecided")<{
  readonly state: string
}> {}

type Row = Omit<ContextSuggestion, "proposed_at" | "decided_at"> & {
  readonly proposed_at: Date
  readonly decided_at: Date | null
}

const toSuggestion = (row: Row): ContextSuggestion => ({
  ...row,
  proposed_at: row.proposed_at.toISOString(),
  decided_at: row.decided_at?.toISOString() ?? null
})

export class ContextSuggestionsRepo extends Context.Service<
  ContextSuggestionsRepo,
  {
    readonly list: (organizationId: string, repositoryId: string) => Effect.Effect<ReadonlyArray<ContextSuggestion>>
    /** One suggestion of `repositoryId` (its primary repository); none for any other repository's. */
    readonly find: (
      organizationId: string,
      repositoryId: string,
      suggestionId: string
    ) => Effect.Effect<Option.Option<ContextSuggestion>>
    /** Decides in the caller's transaction; none when there is no such suggestion. */
    readonly decide: (
      organizationId: string,
      repositoryId: string,
      suggestionId: string,
      approve: boolean,
      userId: string
    ) => Effect.Effect<Option.Option<ContextSuggestion>, SuggestionAlreadyDecided>
    /**
     * Records a suggestion (what a review's context discovery writes); none when this primary
     * repository already has one for that secondary repository, in whatever state — a rejected
     * suggestion is not proposed again.
     */
    readonly propose: (
      organizationId: string,
      suggestion: {
        readonly primaryRepositoryId: string
        readonly secondaryRepositoryId: string | null
        readonly secondaryOwner: string
        readonly secondaryName: string
        readonly source: string
        readonly reason?: string
        /** Whether the App installation can read the secondary repository (default true). */
        readonly accessValid?: boolean
      }
    ) => Effect.Effect<Option.Option<ContextSuggestion>>
  }
>()("bosun/server/persistence/ContextSuggestionsRepo") {
  static readonly layer = Layer.effect(
    ContextSuggestionsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const configuration = yield* ConfigurationRepo
      const columns = sql.literal(
        `id, organization_id, primary_repository_id, secondary_repository_id, secondary_owner, secondary_name,
         access_valid, source, reason, state, proposed_at, decided_at, decided_by`
      )
      return ContextSuggestionsRepo.of({
        list: Effect.fn("ContextSuggestionsRepo.list")(function* (organizationId: string, repositoryId: string) {
          const rows = yield* sql<Row>`
            SELECT ${columns} FROM context_suggestions
            WHERE organization_id = ${organizationId} AND primary_repository_id = ${repositoryId}
            ORDER BY proposed_at DESC, id`.pipe(Effect.orDie)
          return rows.map(toSuggestion)
        }),
        find: Effect.fn("ContextSuggestionsRepo.find")(function* (
          organizationId: string,
          repositoryId: string,
          suggestionId: string
        ) {
          const [row] = yield* sql<Row>`
            SELECT ${columns} FROM context_suggestions
            WHERE organization_id = ${organizationId} AND primary_repository_id = ${repositoryId} AND id = ${suggestionId}`.pipe(
            Effect.orDie
          )
          return Option.map(Option.fromUndefinedOr(row), toSuggestion)
        }),
        decide: Effect.fn("ContextSuggestionsRepo.decide")(function* (
          organizationId: string,
          repositoryId: string,
          suggestionId: string,
          approve: boolean,
          userId: string
        ) {
          const [row] = yield* sql<Row>`
            SELECT ${columns} FROM context_suggestions
            WHERE organization_id = ${organizationId} AND primary_repository_id = ${repositoryId} AND id = ${suggestionId}
            FOR UPDATE`.pipe(Effect.orDie)
          if (row === undefined) return Option.none()
          if (row.state !== "PROPOSED") return yield* new SuggestionAlreadyDecided({ state: row.state })
          const [decided] = yield* sql<Row>`
            UPDATE context_suggestions SET state = ${approve ? "APPROVED" : "REJECTED"}, decided_at = now(),
                   decided_by = ${userId}
            WHERE organization_id = ${organizationId} AND id = ${suggestionId}
            RETURNING ${columns}`.pipe(Effect.orDie)
          if (approve && row.secondary_repository_id !== null) {
            yield* configuration.addSecondaryRepository(
              organizationId,
              repositoryId,
              row.secondary_repository_id,
              userId
            )
          }
          return Option.map(Option.fromUndefinedOr(decided), toSuggestion)
        }),
        propose: Effect.fn("ContextSuggestionsRepo.propose")(function* (organizationId, suggestion) {
          const [row] = yield* sql<Row>`
            INSERT INTO context_suggestions (organization_id, primary_repository_id, secondary_repository_id,
                                             secondary_owner, secondary_name, source, reason, access_valid)
            VALUES (${organizationId}, ${suggestion.primaryRepositoryId}, ${suggestion.secondaryRepositoryId},
                    ${suggestion.secondaryOwner}, ${suggestion.secondaryName}, ${suggestion.source},
                    ${suggestion.reason ?? null}, ${suggestion.accessValid ?? true})
            ON CONFLICT DO NOTHING
            RETURNING ${columns}`.pipe(Effect.orDie)
          return Option.map(Option.fromUndefinedOr(row), toSuggestion)
        })
      })
    })
  )
}

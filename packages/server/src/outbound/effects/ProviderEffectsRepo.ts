/**
 * Outbound side effects (docs/interface.md: What the service does 9; `sql/0022`, `sql/0023`): an effect is
 * recorded PENDING with its idempotency key and request before the provider is called, in the
 * transaction that decided it; SUCCEEDED with the provider's result after. A step that runs again
 * finds the row: SUCCEEDED is done, PENDING may have happened and is reconciled with the provider
 * (by the marker the request carries) before it is made again — so nothing is published twice.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"

export interface ProviderEffect {
  readonly idempotencyKey: string
  readonly kind: string
  readonly status: "PENDING" | "SUCCEEDED" | "FAILED"
  readonly request: Readonly<Record<string, unknown>>
  readonly result: Readonly<Record<string, unknown>> | null
  readonly attempts: number
}

export class ProviderEffectsRepo extends Context.Service<
  ProviderEffectsRepo,
  {
    /**
     * Records the effect PENDING unless its key exists; run it in the deciding transaction (a
     * statement made inside the client's transaction joins it).
     * Answers whether this call recorded it (false: another decision had, first).
     */
    readonly begin: (effect: {
      readonly organizationId: string
      readonly runId: string | null
      readonly kind: string
      readonly idempotencyKey: string
      readonly request: Readonly<Record<string, unknown>>
    }) => Effect.Effect<boolean>
    readonly find: (organizationId: string, idempotencyKey: string) => Effect.Effect<Option.Option<ProviderEffect>>
    /**
     * The effect, its row locked until the caller's transaction ends: a second handler of the same
     * effect waits, then sees what the first one recorded, so the two never both make the call.
     */
    readonly lock: (organizationId: string, idempotencyKey: string) => Effect.Effect<Option.Option<ProviderEffect>>
    /** Counts a call about to be made (reconciled or not), for the record. */
    readonly attempted: (organizationId: string, idempotencyKey: string) => Effect.Effect<void>
    /** Counts a call that failed and keeps why (the effect stays PENDING, to be retried). */
    readonly failedAttempt: (organizationId: string, idempotencyKey: string, error: string) => Effect.Effect<void>
    readonly succeed: (
      organizationId: string,
      idempotencyKey: string,
      result: Readonly<Record<string, unknown>>
    ) => Effect.Effect<void>
  }
>()("bosun/server/persistence/ProviderEffectsRepo") {
  static readonly layer = Layer.effect(
    ProviderEffectsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const begin = Effect.fn("ProviderEffectsRepo.begin")(function* (effect: {
        readonly organizationId: string
        readonly runId: string | null
        readonly kind: string
        readonly idempotencyKey: string
        readonly request: Readonly<Record<string, unknown>>
      }) {
        const inserted = yield* sql<{ idempotency_key: string }>`
          INSERT INTO provider_effects (organization_id, run_id, kind, idempotency_key, request)
          VALUES (${effect.organizationId}, ${effect.runId}, ${effect.kind}, ${effect.idempotencyKey},
                  ${JSON.stringify(effect.request)}::jsonb)
          ON CONFLICT (idempotency_key) DO NOTHING
          RETURNING idempotency_key`.pipe(Effect.orDie)
        return inserted.length > 0
      })

      const select = (organizationId: string, idempotencyKey: string, lock: boolean) =>
        Effect.gen(function* () {
          const rows = yield* sql<{
            idempotency_key: string
            kind: string
            status: ProviderEffect["status"]
            request: Record<string, unknown>
            result: Record<string, unknown> | null
            attempts: number
          }>`SELECT idempotency_key, kind, status, request, result, attempts FROM provider_effects
           WHERE organization_id = ${organizationId} AND idempotency_key = ${idempotencyKey}
           ${lock ? sql`FOR UPDATE` : sql``}`.pipe(Effect.orDie)
          return Option.map(Option.fromUndefinedOr(rows[0]), (row) => ({
            idempotencyKey: row.idempotency_key,
            kind: row.kind,
            status: row.status,
            request: row.request,
            result: row.result,
            attempts: row.attempts
          }))
        })

      const find = Effect.fn("ProviderEffectsRepo.find")(function* (organizationId: string, idempotencyKey: string) {
        return yield* select(organizationId, idempotencyKey, false)
      })

      const lock = Effect.fn("ProviderEffectsRepo.lock")(function* (organizationId: string, idempotencyKey: string) {
        return yield* select(organizationId, idempotencyKey, true)
      })

      const attempted = Effect.fn("ProviderEffectsRepo.attempted")(function* (
        organizationId: string,
        idempotencyKey: string
      ) {
        yield* sql`UPDATE provider_effects SET attempts = attempts + 1, updated_at = now()
                   WHERE organization_id = ${organizationId} AND idempotency_key = ${idempotencyKey}`.pipe(Effect.orDie)
      })

      const failedAttempt = Effect.fn("ProviderEffectsRepo.failedAttempt")(function* (
        organizationId: string,
        idempotencyKey: string,
        error: string
      ) {
        yield* sql`UPDATE provider_effects SET attempts = attempts + 1, error = ${error.slice(0, 2000)}, updated_at = now()
                   WHERE organization_id = ${organizationId} AND idempotency_key = ${idempotencyKey}
                     AND status = 'PENDING'`.pipe(Effect.orDie)
      })

      const succeed = Effect.fn("ProviderEffectsRepo.succeed")(function* (
        organizationId: string,
        idempotencyKey: string,
        result: Readonly<Record<string, unknown>>
      ) {
        yield* sql`UPDATE provider_effects SET status = 'SUCCEEDED', result = ${JSON.stringify(result)}::jsonb,
                     error = NULL, updated_at = now()
                   WHERE organization_id = ${organizationId} AND idempotency_key = ${idempotencyKey}`.pipe(Effect.orDie)
      })

      return ProviderEffectsRepo.of({ begin, find, lock, attempted, failedAttempt, succeed })
    })
  )
}

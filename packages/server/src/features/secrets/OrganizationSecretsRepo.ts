/**
 * User-managed secrets of an organization, the values behind `${secrets.NAME}` references
 * (docs/interface.md: Secret-rotation procedure 6). Values are sealed bound to their row id, which
 * is fixed when the row is first written, so replacing a value keeps the row and re-seals in place.
 */
import { randomUUID } from "node:crypto"
import { Context, Data, Effect, Layer, Option, type Redacted, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import { Secrets, type SecretsError } from "../../platform/crypto/Secrets.ts"

export const SecretNamePattern = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/

/** A name `${secrets.NAME}` could not reference. */
export class InvalidSecretName extends Data.TaggedError("InvalidSecretName")<{ readonly name: string }> {}

const place = (rowId: string) => ({ table: "organization_secrets", column: "value", rowId })

export class OrganizationSecretsRepo extends Context.Service<
  OrganizationSecretsRepo,
  {
    /** Creates or replaces the secret `name` of the organization. */
    readonly put: (
      organizationId: string,
      name: string,
      value: Redacted.Redacted<string>
    ) => Effect.Effect<void, InvalidSecretName>
    readonly get: (
      organizationId: string,
      name: string
    ) => Effect.Effect<Option.Option<Redacted.Redacted<string>>, SecretsError>
  }
>()("bosun/server/persistence/OrganizationSecretsRepo") {
  static readonly layer = Layer.effect(
    OrganizationSecretsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets

      const put = Effect.fn("OrganizationSecretsRepo.put")(function* (
        organizationId: string,
        name: string,
        value: Redacted.Redacted<string>
      ) {
        if (!SecretNamePattern.test(name)) return yield* new InvalidSecretName({ name })
        const write = sql.withTransaction(
          Effect.gen(function* () {
            const [existing] = yield* sql<{ id: string }>`
              SELECT id FROM organization_secrets
              WHERE organization_id = ${organizationId} AND name = ${name} FOR UPDATE`
            const id = existing?.id ?? randomUUID()
            const sealed = yield* secrets.seal(value, place(id))
            if (existing !== undefined) {
              yield* sql`UPDATE organization_secrets SET value = ${sealed}, updated_at = now()
                         WHERE id = ${id} AND organization_id = ${organizationId}`
            } else {
              yield* sql`INSERT INTO organization_secrets (id, organization_id, name, value)
                         VALUES (${id}, ${organizationId}, ${name}, ${sealed})`
            }
          })
        )
        // Two first writes of one name race to insert; the loser's retry finds the winner's row.
        yield* write.pipe(
          Effect.retry({
            times: 2,
            schedule: Schedule.spaced("10 millis"),
            while: (error) => error.reason._tag === "UniqueViolation"
          }),
          Effect.orDie
        )
      })

      const get = Effect.fn("OrganizationSecretsRepo.get")(function* (organizationId: string, name: string) {
        const [row] = yield* sql<{ id: string; value: Uint8Array }>`
          SELECT id, value FROM organization_secrets
          WHERE organization_id = ${organizationId} AND name = ${name}`.pipe(Effect.orDie)
        if (row === undefined) return Option.none()
        return Option.some(yield* secrets.open(row.value, place(row.id)))
      })

      return OrganizationSecretsRepo.of({ put, get })
    })
  )
}

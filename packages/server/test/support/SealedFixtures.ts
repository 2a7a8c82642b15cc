/**
 * Sealed test data in bulk: organizations with many user-managed secrets, sealed by the real
 * `Secrets` service under whatever key ring the caller holds, and read back for checks. Used by
 * the rotation tests and `bench:rotation`; sealing goes through the service, the insert is one
 * statement per thousand rows so that 100,000 envelopes take seconds, not minutes.
 */

import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Secrets } from "../../src/platform/crypto/Secrets.ts"

export const secretPlace = (rowId: string) => ({ table: "organization_secrets", column: "value", rowId })

/** The plaintext fixture `index` of `organizationId` gets: unique, recognisable in a scan. */
export const fixturePlaintext = (organizationId: string, index: number) =>
  `plain-${organizationId}-${index.toString().padStart(6, "0")}-${"s".repeat(index % 7)}`

/** Creates the organization and `count` sealed secrets named `S000000`... in it. */
export const seedOrganizationSecrets = (organizationId: string, count: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const secrets = yield* Secrets
    yield* sql`INSERT INTO organizations (id, name) VALUES (${organizationId}, ${organizationId})
               ON CONFLICT (id) DO NOTHING`
    for (let start = 0; start < count; start += 1000) {
      const ids: Array<string> = []
      const names: Array<string> = []
      const values: Array<Uint8Array> = []
      for (let index = start; index < Math.min(start + 1000, count); index++) {
        const id = `${organizationId}-secret-${index.toString().padStart(6, "0")}`
        ids.push(id)
        names.push(`S${index.toString().padStart(6, "0")}`)
        values.push(yield* secrets.seal(fixturePlaintext(organizationId, index), secretPlace(id)))
      }
      yield* sql`INSERT INTO organization_secrets (id, organization_id, name, value)
                 SELECT id, ${organizationId}, name, value
                 FROM unnest(${ids}::text[], ${names}::text[], ${values}::bytea[]) AS v(id, name, value)`
    }
  }).pipe(Effect.orDie)

/** Every user-managed secret of the organization: its row id, index and envelope. */
export const readOrganizationSecrets = (organizationId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ id: string; name: string; value: Uint8Array }>`
      SELECT id, name, value FROM organization_secrets WHERE organization_id = ${organizationId} ORDER BY id`
    return rows.map((row) => ({ id: row.id, index: Number(row.name.slice(1)), envelope: row.value }))
  }).pipe(Effect.orDie)

/** A digest of every sealed column's bytes, to prove a run wrote nothing. */
export const sealedChecksum = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ digest: string }>`
    SELECT md5(
      coalesce((SELECT string_agg(organization_id || ':' || encode(client_secret, 'hex') || ':' ||
                      encode(private_key, 'hex') || ':' || encode(webhook_secret, 'hex'), ',' ORDER BY organization_id)
                FROM github_apps), '') || '|' ||
      coalesce((SELECT string_agg(id || ':' || encode(value, 'hex'), ',' ORDER BY id) FROM organization_secrets), '')
    ) AS digest`
  return row?.digest ?? ""
}).pipe(Effect.orDie)

/**
 * Opens every fixture secret with `secrets` and checks it is the plaintext it was sealed from
 * under `keyVersion`: a double-sealed envelope would open to another envelope, not the fixture.
 */
export const verifyOrganizationSecrets = (organizationId: string, keyVersion: number) =>
  Effect.gen(function* () {
    const secrets = yield* Secrets
    const rows = yield* readOrganizationSecrets(organizationId)
    let matching = 0
    for (const row of rows) {
      if (row.envelope[0] !== 1 || Buffer.from(row.envelope).readUInt32BE(1) !== keyVersion) continue
      const opened = yield* secrets.open(row.envelope, secretPlace(row.id)).pipe(Effect.option)
      if (opened._tag === "Some" && Redacted.value(opened.value) === fixturePlaintext(organizationId, row.index)) {
        matching++
      }
    }
    return { rows: rows.length, matching }
  })

/**
 * The server's side of `@bosun/actors/auth/DeviceAuthorizations`: the `device_authorizations` row
 * of each AgentDeviceAuth entity (docs/interface.md: Coordinators, AgentDeviceAuth; What the service does 7).
 * The device code and the tokens are sealed with the instance master key, each bound to its
 * column and row (the entity id), so an envelope copied to another row or column does not open;
 * rotation finds them through `SealedColumns`. Nothing read from here carries plaintext except
 * `openSecrets`, which answers `Redacted` values. Every statement filters by the organization.
 */
import {
  type DeviceAuthorizationKey,
  type DeviceAuthorizationRecord,
  type DeviceAuthorizationSecrets,
  type DeviceAuthorizationState,
  type DeviceAuthorizationStatus,
  DeviceAuthorizations,
  DeviceAuthorizationsError
} from "@bosun/actors/auth/DeviceAuthorizations"
import { Effect, Layer, Option, type Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { Secrets } from "../../platform/crypto/Secrets.ts"

type SealedColumn = "device_code" | "access_token" | "refresh_token"

const place = (column: SealedColumn, rowId: string) => ({ table: "device_authorizations", column, rowId })

interface Row {
  readonly id: string
  readonly organization_id: string
  readonly repository_id: string | null
  readonly scope: "ORGANIZATION" | "REPOSITORY"
  readonly provider: string
  readonly status: DeviceAuthorizationStatus
  readonly user_code: string | null
  readonly verification_uri: string | null
  readonly verification_uri_complete: string | null
  readonly interval_seconds: number | null
  readonly expires_at: Date | null
  readonly token_expires_at: Date | null
  readonly last_refreshed_at: Date | null
  readonly error: string | null
  readonly flow_id: string
  readonly next_alarm_at: Date | null
  readonly failures: number
  readonly has_device_code: boolean
  readonly has_access_token: boolean
  readonly has_refresh_token: boolean
  readonly created_at: Date
  readonly updated_at: Date
}

const toRecord = (row: Row): DeviceAuthorizationRecord => ({
  id: row.id,
  scope: row.scope,
  organizationId: row.organization_id,
  repositoryId: row.repository_id,
  provider: row.provider,
  status: row.status,
  userCode: row.user_code,
  verificationUri: row.verification_uri,
  verificationUriComplete: row.verification_uri_complete,
  intervalSeconds: row.interval_seconds,
  expiresAt: row.expires_at,
  tokenExpiresAt: row.token_expires_at,
  lastRefreshedAt: row.last_refreshed_at,
  error: row.error,
  flowId: row.flow_id,
  nextAlarmAt: row.next_alarm_at,
  failures: row.failures,
  hasDeviceCode: row.has_device_code,
  hasAccessToken: row.has_access_token,
  hasRefreshToken: row.has_refresh_token,
  createdAt: row.created_at,
  updatedAt: row.updated_at
})

export const DeviceAuthorizationsLive = Layer.effect(
  DeviceAuthorizations,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const secrets = yield* Secrets
    const columns = sql.literal(`id, organization_id, repository_id, scope, provider, status, user_code,
      verification_uri, verification_uri_complete, interval_seconds, expires_at, token_expires_at,
      last_refreshed_at, error, flow_id, next_alarm_at, failures, device_code IS NOT NULL AS has_device_code,
      access_token IS NOT NULL AS has_access_token, refresh_token IS NOT NULL AS has_refresh_token, created_at,
      updated_at`)

    const find = Effect.fn("DeviceAuthorizations.find")(function* (key: DeviceAuthorizationKey) {
      const [row] = yield* sql<Row>`
        SELECT ${columns} FROM device_authorizations
        WHERE organization_id = ${key.organizationId} AND id = ${key.id}`.pipe(Effect.orDie)
      return Option.map(Option.fromUndefinedOr(row), toRecord)
    })

    /** The envelope to write for a change (undefined: keep the stored one; null: clear it). */
    const sealOf = (column: SealedColumn, id: string, value: Redacted.Redacted<string> | null | undefined) =>
      value === undefined || value === null ? Effect.succeed(null) : secrets.seal(value, place(column, id))

    const save = Effect.fn("DeviceAuthorizations.save")(function* (
      key: DeviceAuthorizationKey,
      state: DeviceAuthorizationState,
      change: DeviceAuthorizationSecrets
    ) {
      const deviceCode = yield* sealOf("device_code", key.id, change.deviceCode)
      const accessToken = yield* sealOf("access_token", key.id, change.accessToken)
      const refreshToken = yield* sealOf("refresh_token", key.id, change.refreshToken)
      const sealed = (column: SealedColumn, value: Redacted.Redacted<string> | null | undefined) =>
        value === undefined ? sql`device_authorizations.${sql(column)}` : sql`excluded.${sql(column)}`
      // The row is created only for an organization that exists and a repository of its own; an
      // existing row of another organization is never touched (the id names its organization).
      const rows = yield* sql<Row>`
        INSERT INTO device_authorizations (id, organization_id, repository_id, scope, provider, status, user_code,
          verification_uri, verification_uri_complete, interval_seconds, expires_at, token_expires_at,
          last_refreshed_at, error, flow_id, next_alarm_at, failures, device_code, access_token, refresh_token)
        SELECT ${key.id}, ${key.organizationId}, ${key.repositoryId}::text, ${key.scope}, ${state.provider},
          ${state.status}, ${state.userCode}::text, ${state.verificationUri}::text,
          ${state.verificationUriComplete}::text, ${state.intervalSeconds}::integer, ${state.expiresAt}::timestamptz,
          ${state.tokenExpiresAt}::timestamptz, ${state.lastRefreshedAt}::timestamptz, ${state.error}::text,
          ${state.flowId}, ${state.nextAlarmAt}::timestamptz, ${state.failures}::integer, ${deviceCode}::bytea,
          ${accessToken}::bytea, ${refreshToken}::bytea
        WHERE EXISTS (SELECT 1 FROM organizations WHERE id = ${key.organizationId})
          AND (${key.repositoryId}::text IS NULL OR EXISTS (
            SELECT 1 FROM repositories WHERE id = ${key.repositoryId} AND organization_id = ${key.organizationId}))
        ON CONFLICT (id) DO UPDATE SET
          provider = excluded.provider, status = excluded.status, user_code = excluded.user_code,
          verification_uri = excluded.verification_uri, verification_uri_complete = excluded.verification_uri_complete,
          interval_seconds = excluded.interval_seconds, expires_at = excluded.expires_at,
          token_expires_at = excluded.token_expires_at, last_refreshed_at = excluded.last_refreshed_at,
          error = excluded.error, flow_id = excluded.flow_id, next_alarm_at = excluded.next_alarm_at,
          failures = excluded.failures, device_code = ${sealed("device_code", change.deviceCode)},
          access_token = ${sealed("access_token", change.accessToken)},
          refresh_token = ${sealed("refresh_token", change.refreshToken)}, updated_at = now()
        WHERE device_authorizations.organization_id = ${key.organizationId}
        RETURNING ${columns}`.pipe(Effect.orDie)
      const [row] = rows
      if (row === undefined) {
        return yield* new DeviceAuthorizationsError({
          reason: "UnknownScope",
          message:
            key.repositoryId === null
              ? `organization ${key.organizationId} does not exist`
              : `repository ${key.repositoryId} is not a repository of organization ${key.organizationId}`
        })
      }
      return toRecord(row)
    })

    const openSecrets = Effect.fn("DeviceAuthorizations.openSecrets")(function* (key: DeviceAuthorizationKey) {
      const [row] = yield* sql<{
        readonly device_code: Uint8Array | null
        readonly access_token: Uint8Array | null
        readonly refresh_token: Uint8Array | null
      }>`
        SELECT device_code, access_token, refresh_token FROM device_authorizations
        WHERE organization_id = ${key.organizationId} AND id = ${key.id}`.pipe(Effect.orDie)
      const open = (column: SealedColumn, envelope: Uint8Array | null | undefined) =>
        envelope === null || envelope === undefined
          ? Effect.succeed(Option.none<Redacted.Redacted<string>>())
          : secrets.open(envelope, place(column, key.id)).pipe(
              Effect.map(Option.some),
              // The error names the place and the key version, never the contents.
              Effect.mapError(
                (error) => new DeviceAuthorizationsError({ reason: "Unreadable", message: error.message })
              )
            )
      return {
        deviceCode: yield* open("device_code", row?.device_code),
        accessToken: yield* open("access_token", row?.access_token),
        refreshToken: yield* open("refresh_token", row?.refresh_token)
      }
    })

    return DeviceAuthorizations.of({ find, save, openSecrets })
  })
)

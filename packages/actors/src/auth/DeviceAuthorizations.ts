/**
 * The storage port of `AgentDeviceAuth` (docs/interface.md: Coordinators, AgentDeviceAuth — "status
 * mirrored to `device_authorizations`"; What the service does 7): one row per entity, its status
 * readable by anyone, its secrets (device code, access token, refresh token) sealed by the adapter
 * the server provides (`DeviceAuthorizationsRepo`), as `SealedRequests` does for run requests — the
 * actors never see a master key. Every operation is scoped to the key's organization.
 */
import { Context, Data, type Effect, type Option, type Redacted } from "effect"

export const DEVICE_AUTHORIZATION_STATUSES = [
  "PENDING",
  "AUTHORIZED",
  "DENIED",
  "EXPIRED",
  "REAUTH_REQUIRED",
  "CANCELLED",
  "FAILED"
] as const

export type DeviceAuthorizationStatus = (typeof DEVICE_AUTHORIZATION_STATUSES)[number]

export type DeviceAuthorizationScope = "ORGANIZATION" | "REPOSITORY"

/** Which row: the entity id and the organization (and repository) it names. */
export interface DeviceAuthorizationKey {
  readonly id: string
  readonly scope: DeviceAuthorizationScope
  readonly organizationId: string
  readonly repositoryId: string | null
}

/** What the entity writes besides secrets: the mirrored status and its alarm's bookkeeping. */
export interface DeviceAuthorizationState {
  readonly provider: string
  readonly status: DeviceAuthorizationStatus
  readonly userCode: string | null
  readonly verificationUri: string | null
  readonly verificationUriComplete: string | null
  readonly intervalSeconds: number | null
  readonly expiresAt: Date | null
  readonly tokenExpiresAt: Date | null
  readonly lastRefreshedAt: Date | null
  readonly error: string | null
  /** A new one per `Start`: alarms of an earlier flow find another flow and do nothing. */
  readonly flowId: string
  /** When the next poll (PENDING) or refresh (AUTHORIZED) is due; null when nothing is. */
  readonly nextAlarmAt: Date | null
  /** Transient failures in a row, for the backoff. */
  readonly failures: number
}

/** The row as stored: never a secret, only whether each sealed column holds one. */
export interface DeviceAuthorizationRecord extends DeviceAuthorizationKey, DeviceAuthorizationState {
  readonly hasDeviceCode: boolean
  readonly hasAccessToken: boolean
  readonly hasRefreshToken: boolean
  readonly createdAt: Date
  readonly updatedAt: Date
}

/** A sealed column's change: absent keeps what is stored, null clears it, a value replaces it. */
export interface DeviceAuthorizationSecrets {
  readonly deviceCode?: Redacted.Redacted<string> | null
  readonly accessToken?: Redacted.Redacted<string> | null
  readonly refreshToken?: Redacted.Redacted<string> | null
}

export interface OpenedDeviceAuthorizationSecrets {
  readonly deviceCode: Option.Option<Redacted.Redacted<string>>
  readonly accessToken: Option.Option<Redacted.Redacted<string>>
  readonly refreshToken: Option.Option<Redacted.Redacted<string>>
}

/**
 * UnknownScope: the organization does not exist, or the repository is not one of its own.
 * Unreadable: a sealed column does not open (its key left the ring); signing in again replaces it.
 */
export class DeviceAuthorizationsError extends Data.TaggedError("DeviceAuthorizationsError")<{
  readonly reason: "UnknownScope" | "Unreadable"
  readonly message: string
}> {}

export class DeviceAuthorizations extends Context.Service<
  DeviceAuthorizations,
  {
    readonly find: (key: DeviceAuthorizationKey) => Effect.Effect<Option.Option<DeviceAuthorizationRecord>>
    /** Writes the whole state (creating the row on first use) and the secrets' changes. */
    readonly save: (
      key: DeviceAuthorizationKey,
      state: DeviceAuthorizationState,
      secrets: DeviceAuthorizationSecrets
    ) => Effect.Effect<DeviceAuthorizationRecord, DeviceAuthorizationsError>
    readonly openSecrets: (
      key: DeviceAuthorizationKey
    ) => Effect.Effect<OpenedDeviceAuthorizationSecrets, DeviceAuthorizationsError>
  }
>()("bosun/actors/auth/DeviceAuthorizations") {}

/**
 * AgentDeviceAuth, one entity per `${scope}:${org}:${repo}` (docs/interface.md: Coordinators; What
 * the service does 10 — AGENT_ONE signs in by device code): drives the provider's OAuth 2.0 device
 * authorization grant (RFC 8628) and then keeps the access token fresh with the refresh-token
 * grant (RFC 6749 §6), its status mirrored to `device_authorizations` through the
 * `DeviceAuthorizations` port, which seals the device code and the tokens. `Start` asks for a
 * device code and answers what the dashboard shows (never the device code), `Status` and
 * `Cancel` answer the mirrored row, and `AccessToken` is how a run gets the credential: it
 * refreshes first when the token expires within the margin. Handlers run one at a time, so
 * refreshes of one id are serialized — the provider rotates refresh tokens, and a second refresh
 * racing the first would burn it. `AccessToken` is volatile, so its answer is never stored in the
 * cluster's message tables.
 *
 * Timers: each poll or refresh is due at a time recorded in the row (`next_alarm_at`), and the
 * entity sends itself a persisted `Alarm` carrying that time as its `DeliverAt` — the cluster's
 * durable alarm (what `DurableClock` and `ClusterCron` use), kept in its SQL message storage, so it
 * fires on whichever runner owns the shard after a move, a restart or a crash, re-activating the
 * entity. Persisted messages are read every `entityMessagePollInterval` (10 s by default), so
 * while the entity is resident an in-memory timer sends a volatile `Wake` at the exact time too.
 * Both only ask the entity to act on what the row says is due — stale or repeated alarms do
 * nothing — and an alarm is named by its flow and time (its primary key), so sending it again
 * stores it once. A state table plus a scan at startup would need a sweeper that reads across
 * organizations and a singleton to run it; the alarm is per entity and needs neither.
 */
import { randomUUID } from "node:crypto"
import { NodeHttpClient } from "@effect/platform-node"
import {
  Cause,
  Clock,
  Data,
  DateTime,
  Duration,
  Effect,
  FiberHandle,
  Layer,
  Option,
  PrimaryKey,
  Redacted,
  Result,
  Schedule,
  Schema
} from "effect"
import { ClusterSchema, DeliverAt, Entity } from "effect/cluster"
import { HttpClient, HttpClientRequest } from "effect/http"
import { Rpc } from "effect/rpc"
import {
  DEVICE_AUTHORIZATION_STATUSES,
  type DeviceAuthorizationKey,
  type DeviceAuthorizationRecord,
  type DeviceAuthorizationSecrets,
  type DeviceAuthorizationState,
  type DeviceAuthorizationStatus,
  DeviceAuthorizations
} from "./DeviceAuthorizations.ts"

export const AGENT_ONE = "AGENT_ONE"

export interface AgentDeviceAuthSettings {
  /** The OAuth client the provider registered for the agent (a public client: no secret). */
  readonly clientId: string
  /** Space-separated scopes asked for with the device code; empty asks for none. */
  readonly scope: string
  /** RFC 8628 §3.1 device authorization endpoint. */
  readonly deviceAuthorizationUrl: URL
  /** Token endpoint, for the device_code and refresh_token grants. */
  readonly tokenUrl: URL
  /** The access token is refreshed when it expires within this margin. */
  readonly refreshMargin: Duration.Duration
  /** Backoff of transient failures: `retryBase`, doubled per failure in a row, at most `retryMax`. */
  readonly retryBase: Duration.Duration
  readonly retryMax: Duration.Duration
  /** How long one call to the provider may take. */
  readonly requestTimeout: Duration.Duration
}

// ---------------------------------------------------------------------------------------------
// Ids

const ID_PATTERN = /^(ORGANIZATION|REPOSITORY):([^:\s]{1,128}):([^:\s]{1,128})$/

/** The entity id of an organization's sign-in (`repositoryId` null) or of one repository's. */
export const agentDeviceAuthId = (organizationId: string, repositoryId: string | null) =>
  repositoryId === null ? `ORGANIZATION:${organizationId}:-` : `REPOSITORY:${organizationId}:${repositoryId}`

/** The scope an entity id names; none for anything else (`-` is only the organization's). */
export const parseAgentDeviceAuthId = (id: string): Option.Option<DeviceAuthorizationKey> => {
  const match = ID_PATTERN.exec(id)
  if (match === null) return Option.none()
  const [, scope, organizationId = "", repository = ""] = match
  if (scope === "ORGANIZATION") {
    return repository === "-" ? Option.some({ id, scope, organizationId, repositoryId: null }) : Option.none()
  }
  return repository === "-"
    ? Option.none()
    : Option.some({ id, scope: "REPOSITORY", organizationId, repositoryId: repository })
}

// ---------------------------------------------------------------------------------------------
// Protocol

export const DeviceAuthorizationStatusSchema = Schema.Literals(DEVICE_AUTHORIZATION_STATUSES)

/** The mirrored row as the dashboard sees it: no secret. */
export const DeviceAuthorizationView = Schema.Struct({
  id: Schema.String,
  organization_id: Schema.String,
  repository_id: Schema.NullOr(Schema.String),
  scope: Schema.Literals(["ORGANIZATION", "REPOSITORY"]),
  provider: Schema.String,
  status: DeviceAuthorizationStatusSchema,
  user_code: Schema.NullOr(Schema.String),
  verification_uri: Schema.NullOr(Schema.String),
  verification_uri_complete: Schema.NullOr(Schema.String),
  interval_seconds: Schema.NullOr(Schema.Int),
  expires_at: Schema.NullOr(Schema.String),
  token_expires_at: Schema.NullOr(Schema.String),
  last_refreshed_at: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type DeviceAuthorizationView = typeof DeviceAuthorizationView.Type

/** What `Start` answers: what the user is shown to approve the sign-in (RFC 8628 §3.3). */
export const DeviceAuthorizationPrompt = Schema.Struct({
  id: Schema.String,
  status: Schema.Literal("PENDING"),
  user_code: Schema.String,
  verification_uri: Schema.String,
  verification_uri_complete: Schema.NullOr(Schema.String),
  interval_seconds: Schema.Int,
  expires_at: Schema.String
})
export type DeviceAuthorizationPrompt = typeof DeviceAuthorizationPrompt.Type

export const AgentAccessToken = Schema.Struct({
  access_token: Schema.Redacted(Schema.String),
  /** When the token expires, if the provider said. */
  expires_at: Schema.NullOr(Schema.String)
})
export type AgentAccessToken = typeof AgentAccessToken.Type

/**
 * InvalidId: not `${scope}:${org}:${repo}`; UnknownScope: no such organization, or a repository of
 * another; NotSignedIn: no AUTHORIZED sign-in; AlreadyAuthorized: `Start` while signed in (cancel
 * first); ReauthRequired: the provider no longer accepts the sign-in; ProviderRejected: the
 * provider refused the request (its OAuth error code is in the message); ProviderUnavailable:
 * the provider could not be reached or failed (retryable).
 */
export class AgentDeviceAuthError extends Schema.TaggedError<AgentDeviceAuthError>()("AgentDeviceAuthError", {
  reason: Schema.Literals([
    "InvalidId",
    "UnknownScope",
    "NotSignedIn",
    "AlreadyAuthorized",
    "ReauthRequired",
    "ProviderRejected",
    "ProviderUnavailable"
  ]),
  message: Schema.String
}) {}

/** A durable alarm: delivered at `at`, named by flow and time so that sending it twice stores it once. */
export class AlarmPayload extends Schema.Class<AlarmPayload>("bosun/actors/auth/AgentDeviceAuth/Alarm")({
  flowId: Schema.String,
  at: Schema.DateTimeUtcFromMillis
}) {
  [PrimaryKey.symbol]() {
    return `${this.flowId}:${DateTime.toEpochMillis(this.at)}`
  }
  [DeliverAt.symbol]() {
    return this.at
  }
}

export const Start = Rpc.make("Start", { success: DeviceAuthorizationPrompt, error: AgentDeviceAuthError })
export const Status = Rpc.make("Status", {
  success: Schema.NullOr(DeviceAuthorizationView),
  error: AgentDeviceAuthError
})
export const Cancel = Rpc.make("Cancel", {
  success: Schema.NullOr(DeviceAuthorizationView),
  error: AgentDeviceAuthError
})
export const AccessToken = Rpc.make("AccessToken", { success: AgentAccessToken, error: AgentDeviceAuthError })
/** The entity's own durable timer (internal). */
export const Alarm = Rpc.make("Alarm", { payload: AlarmPayload }).annotate(ClusterSchema.Persisted, true)
/** The entity's in-memory timer while it is resident (internal). */
export const Wake = Rpc.make("Wake", { payload: { flowId: Schema.String } })

export const AgentDeviceAuth = Entity.make("AgentDeviceAuth", [Start, Status, Cancel, AccessToken, Alarm, Wake])

// ---------------------------------------------------------------------------------------------
// The provider's endpoints

/** The provider answered with an OAuth error (RFC 6749 §5.2, RFC 8628 §3.5). */
class OAuthRefused extends Data.TaggedError("OAuthRefused")<{ readonly code: string; readonly status: number }> {}

/** The provider could not be reached, failed (5xx, 429) or answered something unreadable. */
class OAuthUnavailable extends Data.TaggedError("OAuthUnavailable")<{ readonly detail: string }> {}

type OAuthFailure = OAuthRefused | OAuthUnavailable

const DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"

const Seconds = Schema.Number.check(Schema.isGreaterThan(0))

const DeviceAuthorizationAnswer = Schema.fromJsonString(
  Schema.Struct({
    device_code: Schema.NonEmptyString,
    user_code: Schema.NonEmptyString,
    verification_uri: Schema.NonEmptyString,
    verification_uri_complete: Schema.optional(Schema.String),
    expires_in: Seconds,
    interval: Schema.optional(Seconds)
  })
)

const TokenAnswer = Schema.fromJsonString(
  Schema.Struct({
    access_token: Schema.NonEmptyString,
    token_type: Schema.String,
    expires_in: Schema.optional(Seconds),
    refresh_token: Schema.optional(Schema.NonEmptyString)
  })
)

const ErrorAnswer = Schema.fromJsonString(Schema.Struct({ error: Schema.String }))

/** Error codes are short ASCII words (RFC 6749 §5.2); anything else is not repeated anywhere. */
const ERROR_CODE = /^[A-Za-z0-9_.:-]{1,64}$/

interface DeviceCodeGrant {
  readonly deviceCode: Redacted.Redacted<string>
  readonly userCode: string
  readonly verificationUri: string
  readonly verificationUriComplete: string | null
  readonly expiresInSeconds: number
  readonly intervalSeconds: number
}

interface TokenGrant {
  readonly accessToken: Redacted.Redacted<string>
  readonly refreshToken: Option.Option<Redacted.Redacted<string>>
  readonly expiresInSeconds: number | null
}

/**
 * The three calls, form-encoded as RFC 6749 requires. A decoded answer is never echoed: decode
 * failures become "an unreadable answer", errors carry the OAuth error code alone, since either
 * could hold a token.
 */
const makeOAuthClient = (settings: AgentDeviceAuthSettings, http: HttpClient.HttpClient) => {
  const call = <A>(
    url: URL,
    params: Record<string, string>,
    decode: (text: string) => Option.Option<A>
  ): Effect.Effect<A, OAuthFailure> =>
    http
      .execute(HttpClientRequest.post(url).pipe(HttpClientRequest.acceptJson, HttpClientRequest.bodyUrlParams(params)))
      .pipe(
        Effect.flatMap((response) => Effect.map(response.text, (text) => ({ status: response.status, text }))),
        Effect.timeout(settings.requestTimeout),
        Effect.mapError(
          (error) =>
            new OAuthUnavailable({
              detail: Cause.isTimeoutError(error)
                ? "the provider did not answer in time"
                : "the provider could not be reached"
            })
        ),
        Effect.flatMap(({ status, text }): Effect.Effect<A, OAuthFailure> => {
          if (status >= 200 && status < 300) {
            return Option.match(decode(text), {
              onNone: () => Effect.fail(new OAuthUnavailable({ detail: "the provider gave an unreadable answer" })),
              onSome: Effect.succeed
            })
          }
          if (status === 429 || status >= 500) {
            return Effect.fail(new OAuthUnavailable({ detail: `the provider answered HTTP ${status}` }))
          }
          const refusal = Schema.decodeUnknownOption(ErrorAnswer)(text)
          const code = Option.isSome(refusal) && ERROR_CODE.test(refusal.value.error) ? refusal.value.error : null
          return Effect.fail(new OAuthRefused({ code: code ?? `http_${status}`, status }))
        })
      )

  const decodeTokens = (text: string) =>
    Option.map(
      Schema.decodeUnknownOption(TokenAnswer)(text),
      (answer): TokenGrant => ({
        accessToken: Redacted.make(answer.access_token),
        refreshToken: Option.map(Option.fromUndefinedOr(answer.refresh_token), (token) => Redacted.make(token)),
        expiresInSeconds: answer.expires_in ?? null
      })
    )

  return {
    /** RFC 8628 §3.1–3.2. */
    requestDeviceCode: call(
      settings.deviceAuthorizationUrl,
      settings.scope === ""
        ? { client_id: settings.clientId }
        : { client_id: settings.clientId, scope: settings.scope },
      (text) =>
        Option.map(
          Schema.decodeUnknownOption(DeviceAuthorizationAnswer)(text),
          (answer): DeviceCodeGrant => ({
            deviceCode: Redacted.make(answer.device_code),
            userCode: answer.user_code,
            verificationUri: answer.verification_uri,
            verificationUriComplete: answer.verification_uri_complete ?? null,
            expiresInSeconds: answer.expires_in,
            // RFC 8628 §3.2: "If no value is provided, clients MUST use 5 as the default."
            intervalSeconds: Math.max(1, Math.ceil(answer.interval ?? 5))
          })
        )
    ),
    /** RFC 8628 §3.4–3.5. */
    pollToken: (deviceCode: Redacted.Redacted<string>) =>
      call(
        settings.tokenUrl,
        { grant_type: DEVICE_CODE_GRANT, device_code: Redacted.value(deviceCode), client_id: settings.clientId },
        decodeTokens
      ),
    /** RFC 6749 §6. */
    refresh: (refreshToken: Redacted.Redacted<string>) =>
      call(
        settings.tokenUrl,
        { grant_type: "refresh_token", refresh_token: Redacted.value(refreshToken), client_id: settings.clientId },
        decodeTokens
      )
  }
}

// ---------------------------------------------------------------------------------------------
// Behaviour

const iso = (date: Date | null) => (date === null ? null : date.toISOString())

export const toDeviceAuthorizationView = (row: DeviceAuthorizationRecord): DeviceAuthorizationView => ({
  id: row.id,
  organization_id: row.organizationId,
  repository_id: row.repositoryId,
  scope: row.scope,
  provider: row.provider,
  status: row.status,
  user_code: row.userCode,
  verification_uri: row.verificationUri,
  verification_uri_complete: row.verificationUriComplete,
  interval_seconds: row.intervalSeconds,
  expires_at: iso(row.expiresAt),
  token_expires_at: iso(row.tokenExpiresAt),
  last_refreshed_at: iso(row.lastRefreshedAt),
  error: row.error,
  created_at: row.createdAt.toISOString(),
  updated_at: row.updatedAt.toISOString()
})

const stateOf = (row: DeviceAuthorizationRecord): DeviceAuthorizationState => ({
  provider: row.provider,
  status: row.status,
  userCode: row.userCode,
  verificationUri: row.verificationUri,
  verificationUriComplete: row.verificationUriComplete,
  intervalSeconds: row.intervalSeconds,
  expiresAt: row.expiresAt,
  tokenExpiresAt: row.tokenExpiresAt,
  lastRefreshedAt: row.lastRefreshedAt,
  error: row.error,
  flowId: row.flowId,
  nextAlarmAt: row.nextAlarmAt,
  failures: row.failures
})

const isActive = (status: DeviceAuthorizationStatus) => status === "PENDING" || status === "AUTHORIZED"

/** A lost alarm (its handling failed for good) is made up for when someone next looks after this. */
const OVERDUE = Duration.minutes(1)

const CLEARED: DeviceAuthorizationSecrets = { deviceCode: null, accessToken: null, refreshToken: null }

type RefreshOutcome =
  | { readonly _tag: "Refreshed"; readonly token: AgentAccessToken }
  | { readonly _tag: "Ended"; readonly row: DeviceAuthorizationRecord }
  | { readonly _tag: "Deferred"; readonly row: DeviceAuthorizationRecord }

type OAuthClient = ReturnType<typeof makeOAuthClient>

/**
 * What the steps of one entity's flows share: the entity's own client (for its alarms), its
 * in-memory timer, the mirrored row's store and the provider.
 */
interface Flow {
  readonly settings: AgentDeviceAuthSettings
  readonly store: DeviceAuthorizations["Service"]
  readonly oauth: OAuthClient
  readonly self: ReturnType<Effect.Success<typeof AgentDeviceAuth.client>>
  readonly timer: FiberHandle.FiberHandle<void, never>
}

const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))
const after = (from: Date, millis: number) => new Date(from.getTime() + millis)
const backoff = (settings: AgentDeviceAuthSettings, failures: number) =>
  Math.min(Duration.toMillis(settings.retryMax), Duration.toMillis(settings.retryBase) * 2 ** (failures - 1))
/** Before expiry by the margin, but never in the first half of the token's life. */
const refreshAt = (settings: AgentDeviceAuthSettings, from: Date, expiresAt: Date) =>
  new Date(
    Math.max(
      expiresAt.getTime() - Duration.toMillis(settings.refreshMargin),
      from.getTime() + (expiresAt.getTime() - from.getTime()) / 2
    )
  )

const withKey = <A, R>(
  entityId: string,
  parsed: Option.Option<DeviceAuthorizationKey>,
  use: (key: DeviceAuthorizationKey) => Effect.Effect<A, AgentDeviceAuthError, R>
): Effect.Effect<A, AgentDeviceAuthError, R> =>
  Option.match(parsed, {
    onNone: () =>
      Effect.fail(
        new AgentDeviceAuthError({
          reason: "InvalidId",
          message: `"${entityId}" is not ORGANIZATION:<organization>:- or REPOSITORY:<organization>:<repository>`
        })
      ),
    onSome: use
  })

/**
 * Sets the alarm for `at`: the durable one first, so a crash before the row is written
 * leaves an alarm that finds the poll or refresh due, rather than a row nobody wakes.
 */
const arm = Effect.fn("AgentDeviceAuth.arm")(function* (flow: Flow, flowId: string, at: Date) {
  yield* flow.self
    .Alarm(new AlarmPayload({ flowId, at: DateTime.fromDateUnsafe(at) }), { discard: true })
    .pipe(Effect.retry({ schedule: Schedule.exponential(Duration.millis(50)), times: 4 }), Effect.orDie)
  const delay = Math.max(0, at.getTime() - (yield* Clock.currentTimeMillis))
  yield* FiberHandle.run(
    flow.timer,
    Effect.sleep(Duration.millis(delay)).pipe(
      Effect.andThen(flow.self.Wake({ flowId }, { discard: true })),
      Effect.ignore
    )
  )
})

const logStatus = (row: DeviceAuthorizationRecord) =>
  Effect.logInfo("device_authorization_status").pipe(
    Effect.annotateLogs({ device_authorization_id: row.id, status: row.status, flow_id: row.flowId })
  )

/** The entity's own writes: a store failure here is a defect (only `Start` can name a scope that is not). */
const save = (
  flow: Flow,
  key: DeviceAuthorizationKey,
  state: DeviceAuthorizationState,
  secrets: DeviceAuthorizationSecrets
) => flow.store.save(key, state, secrets).pipe(Effect.orDie)

/** Ends the flow (or the sign-in): no alarm, every secret erased. */
const end = Effect.fn("AgentDeviceAuth.end")(function* (
  flow: Flow,
  key: DeviceAuthorizationKey,
  row: DeviceAuthorizationRecord,
  status: DeviceAuthorizationStatus,
  error: string | null
) {
  yield* FiberHandle.clear(flow.timer)
  const ended = yield* save(flow, key, { ...stateOf(row), status, error, nextAlarmAt: null, failures: 0 }, CLEARED)
  yield* logStatus(ended)
  return ended
})

/** Stores a token grant (the device code's, or a refresh's) and sets the refresh alarm. */
const storeTokens = Effect.fn("AgentDeviceAuth.storeTokens")(function* (
  flow: Flow,
  key: DeviceAuthorizationKey,
  row: DeviceAuthorizationRecord,
  grant: TokenGrant,
  at: Date,
  refreshed: boolean
) {
  const tokenExpiresAt = grant.expiresInSeconds === null ? null : after(at, grant.expiresInSeconds * 1000)
  const refreshable = Option.isSome(grant.refreshToken) || (refreshed && row.hasRefreshToken)
  // Without a refresh token the alarm only marks the sign-in over once the token expires.
  const next =
    tokenExpiresAt === null ? null : refreshable ? refreshAt(flow.settings, at, tokenExpiresAt) : tokenExpiresAt
  if (next !== null) yield* arm(flow, row.flowId, next)
  const stored = yield* save(
    flow,
    key,
    {
      ...stateOf(row),
      status: "AUTHORIZED",
      tokenExpiresAt,
      lastRefreshedAt: refreshed ? at : null,
      error: null,
      nextAlarmAt: next,
      failures: 0
    },
    {
      deviceCode: null,
      accessToken: grant.accessToken,
      // A refresh answer without a refresh token leaves the current one valid (RFC 6749 §6).
      ...(Option.isSome(grant.refreshToken)
        ? { refreshToken: grant.refreshToken.value }
        : refreshed
          ? {}
          : { refreshToken: null })
    }
  )
  if (!refreshed) yield* logStatus(stored)
  return { token: { access_token: grant.accessToken, expires_at: iso(tokenExpiresAt) }, row: stored }
})

const CODE_EXPIRED = "The sign-in code expired before it was approved; start the sign-in again."

/**
 * Sets the next poll of a PENDING flow `delay` after `answeredAt` and records it. The interval
 * runs from the answer, so no two requests are closer than it (RFC 8628 §3.5).
 */
const pollAgain = (
  flow: Flow,
  key: DeviceAuthorizationKey,
  row: DeviceAuthorizationRecord,
  answeredAt: Date,
  next: { readonly intervalSeconds: number; readonly delay: number; readonly failures: number },
  error: string | null
) =>
  Effect.gen(function* () {
    const due = after(answeredAt, next.delay)
    // Never past the code's end: the alarm then marks the flow EXPIRED on time.
    const alarmAt = row.expiresAt !== null && due.getTime() > row.expiresAt.getTime() ? row.expiresAt : due
    yield* arm(flow, row.flowId, alarmAt)
    return yield* save(
      flow,
      key,
      {
        ...stateOf(row),
        intervalSeconds: next.intervalSeconds,
        nextAlarmAt: alarmAt,
        failures: next.failures,
        error
      },
      {}
    )
  })

/** One poll of the token endpoint for a PENDING flow (RFC 8628 §3.4–3.5). */
const poll = Effect.fn("AgentDeviceAuth.poll")(function* (
  flow: Flow,
  key: DeviceAuthorizationKey,
  row: DeviceAuthorizationRecord,
  at: Date
) {
  if (row.expiresAt !== null && at.getTime() >= row.expiresAt.getTime()) {
    return yield* end(flow, key, row, "EXPIRED", CODE_EXPIRED)
  }
  const secrets = yield* Effect.result(flow.store.openSecrets(key))
  if (Result.isFailure(secrets) || Option.isNone(secrets.success.deviceCode)) {
    return yield* end(
      flow,
      key,
      row,
      "FAILED",
      "The device code of this sign-in cannot be read; start the sign-in again."
    )
  }
  const answer = yield* Effect.result(flow.oauth.pollToken(secrets.success.deviceCode.value))
  if (Result.isSuccess(answer)) return (yield* storeTokens(flow, key, row, answer.success, at, false)).row
  const failure = answer.failure
  const interval = row.intervalSeconds ?? 5
  const answeredAt = yield* now
  if (failure._tag === "OAuthUnavailable") {
    const failures = row.failures + 1
    yield* Effect.logWarning("device_authorization_poll_failed").pipe(
      Effect.annotateLogs({ device_authorization_id: key.id, detail: failure.detail, failures })
    )
    return yield* pollAgain(
      flow,
      key,
      row,
      answeredAt,
      { intervalSeconds: interval, delay: Math.max(interval * 1000, backoff(flow.settings, failures)), failures },
      `Polling the provider failed (${failure.detail}); retrying.`
    )
  }
  switch (failure.code) {
    case "authorization_pending":
      return yield* pollAgain(
        flow,
        key,
        row,
        answeredAt,
        { intervalSeconds: interval, delay: interval * 1000, failures: 0 },
        null
      )
    case "slow_down":
      // RFC 8628 §3.5: "the interval MUST be increased by 5 seconds for this and all subsequent requests".
      return yield* pollAgain(
        flow,
        key,
        row,
        answeredAt,
        { intervalSeconds: interval + 5, delay: (interval + 5) * 1000, failures: 0 },
        null
      )
    case "access_denied":
      return yield* end(flow, key, row, "DENIED", "The sign-in was denied at the provider.")
    case "expired_token":
      return yield* end(flow, key, row, "EXPIRED", CODE_EXPIRED)
    default:
      return yield* end(flow, key, row, "FAILED", `The provider refused the device code (${failure.code}).`)
  }
})

/** Refreshes an AUTHORIZED sign-in (RFC 6749 §6). */
const refresh = Effect.fn("AgentDeviceAuth.refresh")(function* (
  flow: Flow,
  key: DeviceAuthorizationKey,
  row: DeviceAuthorizationRecord,
  at: Date
) {
  const ended = (status: DeviceAuthorizationStatus, error: string) =>
    Effect.map(end(flow, key, row, status, error), (ended): RefreshOutcome => ({ _tag: "Ended", row: ended }))
  const secrets = yield* Effect.result(flow.store.openSecrets(key))
  if (Result.isFailure(secrets)) {
    return yield* ended(
      "REAUTH_REQUIRED",
      "The stored AGENT_ONE credential cannot be opened with the instance's keys; sign in again."
    )
  }
  if (Option.isNone(secrets.success.refreshToken)) {
    return yield* ended(
      "REAUTH_REQUIRED",
      "The AGENT_ONE access token expired and the provider issued no refresh token; sign in again."
    )
  }
  const answer = yield* Effect.result(flow.oauth.refresh(secrets.success.refreshToken.value))
  if (Result.isSuccess(answer)) {
    const stored = yield* storeTokens(flow, key, row, answer.success, at, true)
    yield* Effect.logInfo("device_authorization_refreshed").pipe(
      Effect.annotateLogs({
        device_authorization_id: key.id,
        token_expires_at: stored.token.expires_at ?? "unknown"
      })
    )
    return { _tag: "Refreshed", token: stored.token } satisfies RefreshOutcome
  }
  const failure = answer.failure
  if (failure._tag === "OAuthRefused") {
    return yield* failure.code === "invalid_grant"
      ? ended(
          "REAUTH_REQUIRED",
          "The provider no longer accepts this AGENT_ONE sign-in (its refresh was refused: invalid_grant); sign in again."
        )
      : ended("FAILED", `The provider refused the token refresh (${failure.code}).`)
  }
  const failures = row.failures + 1
  const next = after(yield* now, backoff(flow.settings, failures))
  yield* Effect.logWarning("device_authorization_refresh_failed").pipe(
    Effect.annotateLogs({ device_authorization_id: key.id, detail: failure.detail, failures })
  )
  yield* arm(flow, row.flowId, next)
  const deferred = yield* save(
    flow,
    key,
    {
      ...stateOf(row),
      nextAlarmAt: next,
      failures,
      error: `Refreshing the access token failed (${failure.detail}); retrying.`
    },
    {}
  )
  return { _tag: "Deferred", row: deferred } satisfies RefreshOutcome
})

/**
 * What an alarm does: whatever the row says is due. An alarm of another flow, or one that
 * comes early, only makes sure the row's own alarm is set.
 */
const tick = Effect.fn("AgentDeviceAuth.tick")(function* (flow: Flow, key: DeviceAuthorizationKey, flowId: string) {
  const found = yield* flow.store.find(key)
  if (Option.isNone(found)) return
  const row = found.value
  if (row.flowId !== flowId || !isActive(row.status) || row.nextAlarmAt === null) return
  const at = yield* now
  if (at.getTime() < row.nextAlarmAt.getTime()) return yield* arm(flow, row.flowId, row.nextAlarmAt)
  // The provider's answer must reach the row: a device code is exchanged once, and a
  // refresh token, once used, is gone.
  yield* Effect.uninterruptible(
    row.status === "PENDING" ? Effect.asVoid(poll(flow, key, row, at)) : Effect.asVoid(refresh(flow, key, row, at))
  )
})

const onAlarm = (flow: Flow, entityId: string, parsed: Option.Option<DeviceAuthorizationKey>, flowId: string) =>
  Option.match(parsed, {
    onNone: () => Effect.void,
    onSome: (key) =>
      tick(flow, key, flowId).pipe(
        Effect.sandbox,
        Effect.retry({ schedule: Schedule.exponential(flow.settings.retryBase), times: 5 }),
        Effect.catch((cause) =>
          Effect.logError("device_authorization_alarm_failed", cause).pipe(
            Effect.annotateLogs({ device_authorization_id: entityId })
          )
        )
      )
  })

/** Makes up for an alarm whose handling failed for good (the database was away). */
const catchUp = (flow: Flow, row: DeviceAuthorizationRecord, at: Date) =>
  isActive(row.status) &&
  row.nextAlarmAt !== null &&
  at.getTime() - row.nextAlarmAt.getTime() > Duration.toMillis(OVERDUE)
    ? flow.self.Wake({ flowId: row.flowId }, { discard: true }).pipe(Effect.ignore)
    : Effect.void

const prompt = (row: DeviceAuthorizationRecord): DeviceAuthorizationPrompt => ({
  id: row.id,
  status: "PENDING",
  user_code: row.userCode ?? "",
  verification_uri: row.verificationUri ?? "",
  verification_uri_complete: row.verificationUriComplete,
  interval_seconds: row.intervalSeconds ?? 5,
  expires_at: iso(row.expiresAt) ?? ""
})

/** Asks the provider for a device code, retrying a provider that is away a couple of times. */
const requestDeviceCode = (flow: Flow) =>
  flow.oauth.requestDeviceCode.pipe(
    Effect.retry({
      schedule: Schedule.exponential(flow.settings.retryBase),
      times: 2,
      while: (error) => error._tag === "OAuthUnavailable"
    }),
    Effect.mapError((error) =>
      error._tag === "OAuthRefused"
        ? new AgentDeviceAuthError({
            reason: "ProviderRejected",
            message: `The provider refused the device authorization request (${error.code}).`
          })
        : new AgentDeviceAuthError({
            reason: "ProviderUnavailable",
            message: `The device authorization request failed: ${error.detail}.`
          })
    )
  )

const start = Effect.fn("AgentDeviceAuth.start")(function* (flow: Flow, key: DeviceAuthorizationKey) {
  const at = yield* now
  const existing = yield* flow.store.find(key)
  if (Option.isSome(existing)) {
    const row = existing.value
    // Asking twice shows the same code while it is good: the user may already be typing it.
    if (row.status === "PENDING" && row.expiresAt !== null && row.expiresAt.getTime() > at.getTime()) {
      return prompt(row)
    }
    if (row.status === "AUTHORIZED") {
      return yield* new AgentDeviceAuthError({
        reason: "AlreadyAuthorized",
        message: "AGENT_ONE is already signed in here; cancel that sign-in first to sign in again."
      })
    }
  }
  const grant = yield* requestDeviceCode(flow)
  const flowId = randomUUID()
  // The code's life counts from before the request, its first poll from after the answer.
  const expiresAt = after(at, grant.expiresInSeconds * 1000)
  const due = after(yield* now, grant.intervalSeconds * 1000)
  const next = due.getTime() > expiresAt.getTime() ? expiresAt : due
  yield* arm(flow, flowId, next)
  const row = yield* flow.store
    .save(
      key,
      {
        provider: AGENT_ONE,
        status: "PENDING",
        userCode: grant.userCode,
        verificationUri: grant.verificationUri,
        verificationUriComplete: grant.verificationUriComplete,
        intervalSeconds: grant.intervalSeconds,
        expiresAt,
        tokenExpiresAt: null,
        lastRefreshedAt: null,
        error: null,
        flowId,
        nextAlarmAt: next,
        failures: 0
      },
      { deviceCode: grant.deviceCode, accessToken: null, refreshToken: null }
    )
    .pipe(
      Effect.catchTag("DeviceAuthorizationsError", (error) =>
        Effect.fail(new AgentDeviceAuthError({ reason: "UnknownScope", message: error.message }))
      )
    )
  yield* logStatus(row)
  return prompt(row)
})

const status = Effect.fn("AgentDeviceAuth.status")(function* (flow: Flow, key: DeviceAuthorizationKey) {
  const found = yield* flow.store.find(key)
  if (Option.isNone(found)) return null
  yield* catchUp(flow, found.value, yield* now)
  return toDeviceAuthorizationView(found.value)
})

const cancel = Effect.fn("AgentDeviceAuth.cancel")(function* (flow: Flow, key: DeviceAuthorizationKey) {
  const found = yield* flow.store.find(key)
  if (Option.isNone(found)) return null
  const row = found.value
  return toDeviceAuthorizationView(isActive(row.status) ? yield* end(flow, key, row, "CANCELLED", null) : row)
})

/** Why there is no token to hand out: the sign-in is missing, over, or must be renewed. */
const notSignedIn = (row: DeviceAuthorizationRecord | undefined) =>
  new AgentDeviceAuthError(
    row?.status === "REAUTH_REQUIRED"
      ? {
          reason: "ReauthRequired",
          message: row.error ?? "The AGENT_ONE sign-in must be renewed; sign in again."
        }
      : {
          reason: "NotSignedIn",
          message: `AGENT_ONE is not signed in here (status ${row?.status ?? "NONE"})${row?.error ? `: ${row.error}` : "."}`
        }
  )

/** The stored access token, which is still good for longer than the margin. */
const storedToken = (flow: Flow, key: DeviceAuthorizationKey, expiresAt: Date | null) =>
  Effect.gen(function* () {
    const secrets = yield* flow.store.openSecrets(key).pipe(
      Effect.mapError(
        (error) =>
          new AgentDeviceAuthError({
            reason: "ReauthRequired",
            message: `The stored AGENT_ONE credential cannot be opened (${error.message}); sign in again.`
          })
      )
    )
    if (Option.isNone(secrets.accessToken)) {
      return yield* new AgentDeviceAuthError({
        reason: "ReauthRequired",
        message: "No AGENT_ONE access token is stored; sign in again."
      })
    }
    return { access_token: secrets.accessToken.value, expires_at: iso(expiresAt) }
  })

const accessToken = Effect.fn("AgentDeviceAuth.accessToken")(function* (flow: Flow, key: DeviceAuthorizationKey) {
  const found = yield* flow.store.find(key)
  const at = yield* now
  if (Option.isNone(found) || found.value.status !== "AUTHORIZED") {
    return yield* notSignedIn(Option.getOrUndefined(found))
  }
  const row = found.value
  yield* catchUp(flow, row, at)
  const expiresAt = row.tokenExpiresAt
  if (expiresAt === null || expiresAt.getTime() - at.getTime() > Duration.toMillis(flow.settings.refreshMargin)) {
    return yield* storedToken(flow, key, expiresAt)
  }
  const outcome = yield* Effect.uninterruptible(refresh(flow, key, row, at))
  switch (outcome._tag) {
    case "Refreshed":
      return outcome.token
    case "Ended":
      return yield* new AgentDeviceAuthError({
        reason: outcome.row.status === "REAUTH_REQUIRED" ? "ReauthRequired" : "NotSignedIn",
        message: outcome.row.error ?? "The AGENT_ONE sign-in ended; sign in again."
      })
    case "Deferred": {
      // The current token still works until it expires; the alarm keeps trying.
      if (expiresAt.getTime() > at.getTime()) {
        const secrets = yield* Effect.orDie(flow.store.openSecrets(key))
        if (Option.isSome(secrets.accessToken)) {
          return { access_token: secrets.accessToken.value, expires_at: iso(expiresAt) }
        }
      }
      return yield* new AgentDeviceAuthError({
        reason: "ProviderUnavailable",
        message: outcome.row.error ?? "The provider could not refresh the AGENT_ONE access token; retrying."
      })
    }
  }
})

export const AgentDeviceAuthLive = (settings: AgentDeviceAuthSettings) =>
  AgentDeviceAuth.toLayer(
    Effect.gen(function* () {
      const address = yield* Entity.CurrentAddress
      const flow: Flow = {
        settings,
        store: yield* DeviceAuthorizations,
        oauth: makeOAuthClient(settings, yield* HttpClient.HttpClient),
        self: (yield* AgentDeviceAuth.client)(address.entityId),
        timer: yield* FiberHandle.make<void, never>()
      }
      const entityId = address.entityId
      const parsed = parseAgentDeviceAuthId(entityId)
      return AgentDeviceAuth.of({
        Start: () => withKey(entityId, parsed, (key) => start(flow, key)),
        Status: () => withKey(entityId, parsed, (key) => status(flow, key)),
        Cancel: () => withKey(entityId, parsed, (key) => cancel(flow, key)),
        AccessToken: () => withKey(entityId, parsed, (key) => accessToken(flow, key)),
        Alarm: ({ payload }) => onAlarm(flow, entityId, parsed, payload.flowId),
        Wake: ({ payload }) => onAlarm(flow, entityId, parsed, payload.flowId)
      })
    })
  ).pipe(Layer.provide(NodeHttpClient.layerUndici))

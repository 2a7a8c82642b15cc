/**
 * AgentDeviceAuth (docs/interface.md: Coordinators; What the service does 7, 10) on the production
 * cluster runner (`layerTestCluster`: SQL message storage in a fresh Postgres, socket transport)
 * with the server's `device_authorizations` adapter, against the fake OAuth device authorization
 * server over real HTTP: the device-code flow to AUTHORIZED with the row mirrored and the tokens
 * sealed, RFC 8628's answers (slow_down, access_denied, expired_token, failures while polling), the
 * serialized refresh with rotating refresh tokens, REAUTH_REQUIRED on invalid_grant, the polling
 * alarm surviving a stop of the runner, and no secret in any log line.
 */
import {
  AgentDeviceAuth,
  type AgentDeviceAuthError,
  type AgentDeviceAuthSettings,
  agentDeviceAuthId
} from "@bosun/actors/auth/AgentDeviceAuth"
import {
  eventually,
  FakeDeviceAuthServer,
  type FakeDeviceAuthServerHandle,
  LogCapture,
  TestDatabase
} from "@bosun/testing"
import { freePort } from "@bosun/testing/RuntimeProcess"
import { assert, describe, it, layer } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { layerWorkflowTypes } from "../../src/app/cluster/WorkflowTypesLive.ts"
import { Secrets } from "../../src/platform/crypto/Secrets.ts"
import { layerTestCluster } from "../support/TestCluster.ts"
import { layerTestSecrets } from "../support/TestServer.ts"

const settingsFor = (fake: FakeDeviceAuthServerHandle): AgentDeviceAuthSettings => ({
  clientId: fake.clientId,
  scope: "openid offline_access",
  deviceAuthorizationUrl: fake.deviceAuthorizationUrl,
  tokenUrl: fake.tokenUrl,
  refreshMargin: Duration.seconds(30),
  retryBase: Duration.millis(200),
  retryMax: Duration.seconds(2),
  requestTimeout: Duration.seconds(5)
})

/** A production cluster runner with AGENT_ONE's device sign-in configured for the given fake. */
const runner = (runnerPort: number) =>
  Layer.unwrap(
    Effect.map(FakeDeviceAuthServer, (fake) =>
      layerTestCluster({
        workflowTypes: layerWorkflowTypes(Effect.succeed({})),
        runtime: { url: "http://127.0.0.1:9", token: "runtime-token-unused-0123" },
        runnerPort,
        settings: (base) => ({
          ...base,
          cluster: { ...base.cluster, deviceAuth: Option.some(settingsFor(fake)) }
        })
      })
    )
  )

const TestLayer = Layer.unwrap(Effect.map(Effect.promise(freePort), runner)).pipe(
  Layer.provideMerge(FakeDeviceAuthServer.layer())
)

const newOrganization = (name: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ id: string }>`INSERT INTO organizations (name) VALUES (${name}) RETURNING id`
    return row?.id ?? ""
  })

const newRepository = (organizationId: string, name: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ id: string }>`
      INSERT INTO repositories (organization_id, owner, name) VALUES (${organizationId}, 'acme', ${name}) RETURNING id`
    return row?.id ?? ""
  })

const clientOf = (id: string) => Effect.map(AgentDeviceAuth.client, (make) => make(id))

const statusOf = (id: string) => Effect.flatMap(clientOf(id), (client) => client.Status())

const untilStatus = (id: string, status: string, deadline = Duration.seconds(20)) =>
  eventually(statusOf(id), (view) => view?.status === status, deadline).pipe(
    Effect.map((view) => {
      assert.isNotNull(view)
      return view as NonNullable<typeof view>
    })
  )

interface StoredRow {
  readonly id: string
  readonly organization_id: string
  readonly repository_id: string | null
  readonly scope: string
  readonly provider: string
  readonly status: string
  readonly user_code: string | null
  readonly verification_uri: string | null
  readonly verification_uri_complete: string | null
  readonly interval_seconds: number | null
  readonly expires_at: Date | null
  readonly token_expires_at: Date | null
  readonly last_refreshed_at: Date | null
  readonly error: string | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly device_code: Uint8Array | null
  readonly access_token: Uint8Array | null
  readonly refresh_token: Uint8Array | null
  /** The whole row as Postgres prints it (bytea as hex). */
  readonly row_text: string
}

const storedRow = (organizationId: string, id: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<StoredRow>`
      SELECT d.id, d.organization_id, d.repository_id, d.scope, d.provider, d.status, d.user_code, d.verification_uri,
             d.verification_uri_complete, d.interval_seconds, d.expires_at, d.token_expires_at, d.last_refreshed_at,
             d.error, d.created_at, d.updated_at, d.device_code, d.access_token, d.refresh_token, d::text AS row_text
      FROM device_authorizations d WHERE d.organization_id = ${organizationId} AND d.id = ${id}`
    assert.isDefined(row)
    return row as StoredRow
  })

/** Opens a sealed column of the row with the instance's keys, as the adapter does. */
const opened = (id: string, column: "device_code" | "access_token" | "refresh_token", envelope: Uint8Array | null) =>
  Effect.gen(function* () {
    assert.isNotNull(envelope, `${column} is stored`)
    const secrets = yield* Secrets
    const value = yield* secrets.open(envelope as Uint8Array, { table: "device_authorizations", column, rowId: id })
    return Redacted.value(value)
  })

/** Neither the plaintext nor its bytes in hex occur anywhere in the row. */
const assertNotInRow = (row: StoredRow, plaintexts: ReadonlyArray<string>) => {
  for (const plaintext of plaintexts) {
    assert.notInclude(row.row_text, plaintext)
    assert.notInclude(row.row_text.toLowerCase(), Buffer.from(plaintext, "utf8").toString("hex"))
  }
}

const seconds = (iso: string | null) => (iso === null ? Number.NaN : new Date(iso).getTime() / 1000)

const gapsOf = (polls: ReadonlyArray<{ readonly at: number }>) =>
  polls.slice(1).map((poll, i) => poll.at - (polls[i]?.at ?? poll.at))

const reasonOf = (error: unknown) => (error as AgentDeviceAuthError).reason

layer(TestLayer, { excludeTestServices: true })("AgentDeviceAuth", (it) => {
  it.effect(
    "signs in by device code: PENDING with the code to show, AUTHORIZED once approved, the row mirrored field by field and the tokens sealed",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeDeviceAuthServer
        const organizationId = yield* newOrganization("device-flow")
        const id = agentDeviceAuthId(organizationId, null)
        assert.strictEqual(id, `ORGANIZATION:${organizationId}:-`)
        const auth = yield* clientOf(id)

        const before = Date.now()
        const prompt = yield* auth.Start()
        assert.deepStrictEqual(Object.keys(prompt).sort(), [
          "expires_at",
          "id",
          "interval_seconds",
          "status",
          "user_code",
          "verification_uri",
          "verification_uri_complete"
        ])
        assert.strictEqual(prompt.id, id)
        assert.strictEqual(prompt.status, "PENDING")
        assert.match(prompt.user_code, /^[B-Z]{4}-[B-Z]{4}$/)
        assert.strictEqual(prompt.verification_uri, `${fake.origin}/device`)
        assert.strictEqual(prompt.verification_uri_complete, `${fake.origin}/device?user_code=${prompt.user_code}`)
        assert.strictEqual(prompt.interval_seconds, 1)
        assert.isAtLeast(seconds(prompt.expires_at), before / 1000 + 600 - 1)
        assert.isAtMost(seconds(prompt.expires_at), Date.now() / 1000 + 600 + 1)
        const deviceCode = fake.issued().deviceCodes.at(-1) ?? ""
        assert.notInclude(JSON.stringify(prompt), deviceCode)
        // The device code is kept sealed, bound to this row, while the flow is pending.
        const pendingRow = yield* storedRow(organizationId, id)
        assert.strictEqual(yield* opened(id, "device_code", pendingRow.device_code), deviceCode)
        assert.deepStrictEqual([pendingRow.access_token, pendingRow.refresh_token], [null, null])
        assertNotInRow(pendingRow, [deviceCode])

        // Asking again while the code is good shows the same code, without a new request.
        assert.deepStrictEqual(yield* auth.Start(), prompt)
        assert.strictEqual(fake.count("device_authorization"), 1)

        const pending = yield* auth.Status()
        assert.isNotNull(pending)
        assert.deepInclude(pending, {
          id,
          organization_id: organizationId,
          repository_id: null,
          scope: "ORGANIZATION",
          provider: "AGENT_ONE",
          status: "PENDING",
          user_code: prompt.user_code,
          verification_uri: prompt.verification_uri,
          verification_uri_complete: prompt.verification_uri_complete,
          interval_seconds: 1,
          expires_at: prompt.expires_at,
          token_expires_at: null,
          last_refreshed_at: null,
          error: null
        })
        const early = yield* Effect.flip(auth.AccessToken())
        assert.strictEqual(reasonOf(early), "NotSignedIn")

        yield* eventually(
          Effect.sync(() => fake.polls(prompt.user_code)),
          (polls) => polls.length >= 2
        )
        assert.deepStrictEqual(
          fake.polls(prompt.user_code).map((poll) => [poll.clientId, poll.answer]),
          fake.polls(prompt.user_code).map(() => ["bosun-test-client", "authorization_pending"])
        )
        fake.approve(prompt.user_code)
        const authorized = yield* untilStatus(id, "AUTHORIZED")
        const approvedBy = Date.now()
        assert.strictEqual(fake.polls(prompt.user_code).at(-1)?.answer, "tokens")
        assert.deepInclude(authorized, {
          id,
          status: "AUTHORIZED",
          user_code: prompt.user_code,
          interval_seconds: 1,
          last_refreshed_at: null,
          error: null
        })
        assert.isAtMost(seconds(authorized.token_expires_at), approvedBy / 1000 + 3600 + 1)
        assert.isAtLeast(seconds(authorized.token_expires_at), approvedBy / 1000 + 3600 - 10)

        const row = yield* storedRow(organizationId, id)
        assert.deepStrictEqual(
          {
            id: row.id,
            organization_id: row.organization_id,
            repository_id: row.repository_id,
            scope: row.scope,
            provider: row.provider,
            status: row.status,
            user_code: row.user_code,
            verification_uri: row.verification_uri,
            verification_uri_complete: row.verification_uri_complete,
            interval_seconds: row.interval_seconds,
            expires_at: row.expires_at?.toISOString() ?? null,
            token_expires_at: row.token_expires_at?.toISOString() ?? null,
            last_refreshed_at: row.last_refreshed_at?.toISOString() ?? null,
            error: row.error,
            created_at: row.created_at.toISOString(),
            updated_at: row.updated_at.toISOString()
          },
          authorized
        )
        // The device code is spent and erased; the tokens are sealed, bound to this row.
        assert.isNull(row.device_code)
        const issued = fake.issued()
        assert.strictEqual(yield* opened(id, "access_token", row.access_token), issued.accessTokens[0])
        assert.strictEqual(yield* opened(id, "refresh_token", row.refresh_token), issued.refreshTokens[0])
        assertNotInRow(row, [...issued.deviceCodes, ...issued.accessTokens, ...issued.refreshTokens])

        const token = yield* auth.AccessToken()
        assert.strictEqual(Redacted.value(token.access_token), issued.accessTokens[0])
        assert.strictEqual(token.expires_at, authorized.token_expires_at)
        assert.strictEqual(fake.count("refresh_token"), 0)
        assert.strictEqual(String(token.access_token), "<redacted>")

        const again = yield* Effect.flip(auth.Start())
        assert.strictEqual(reasonOf(again), "AlreadyAuthorized")
      })
  )

  it.effect("a 5xx or a dropped connection while polling is retried, not a failure of the flow", () =>
    Effect.gen(function* () {
      const fake = yield* FakeDeviceAuthServer
      const organizationId = yield* newOrganization("device-flaky")
      const id = agentDeviceAuthId(organizationId, null)
      const auth = yield* clientOf(id)
      const prompt = yield* auth.Start()
      fake.failNext("device_code", 503, 2)
      yield* eventually(
        Effect.sync(() => fake.polls(prompt.user_code)),
        (polls) => polls.filter((poll) => poll.answer === "failure").length === 2
      )
      const during = yield* auth.Status()
      assert.strictEqual(during?.status, "PENDING")
      fake.failNext("device_code", "hang-up", 1)
      yield* eventually(
        Effect.sync(() => fake.polls(prompt.user_code)),
        (polls) => polls.some((poll) => poll.answer === "hang-up")
      )
      fake.approve(prompt.user_code)
      const authorized = yield* untilStatus(id, "AUTHORIZED")
      assert.isNull(authorized.error)
      const polls = fake.polls(prompt.user_code)
      assert.deepStrictEqual(
        polls.map((poll) => poll.answer).filter((answer) => answer !== "authorization_pending"),
        ["failure", "failure", "hang-up", "tokens"]
      )
      // Backing off never polls sooner than the interval.
      for (const gap of gapsOf(polls)) assert.isAtLeast(gap, 1000 - 20)
      assert.strictEqual(fake.tooFastPolls(), 0)
    })
  )

  it.effect("slow_down adds 5 seconds to the polling interval for this and every later poll", () =>
    Effect.gen(function* () {
      const fake = yield* FakeDeviceAuthServer
      const organizationId = yield* newOrganization("device-slow")
      const id = agentDeviceAuthId(organizationId, null)
      const auth = yield* clientOf(id)
      const prompt = yield* auth.Start()
      fake.slowDown(prompt.user_code)
      const polls = yield* eventually(
        Effect.sync(() => fake.polls(prompt.user_code)),
        (list) => list.length >= 3,
        Duration.seconds(25)
      )
      assert.deepStrictEqual(
        polls.slice(0, 3).map((poll) => poll.answer),
        ["slow_down", "authorization_pending", "authorization_pending"]
      )
      const gaps = gapsOf(polls.slice(0, 3))
      for (const gap of gaps) {
        assert.isAtLeast(gap, 6000)
        assert.isBelow(gap, 8000)
      }
      assert.strictEqual(fake.tooFastPolls(), 0)
      const view = yield* auth.Status()
      assert.strictEqual(view?.interval_seconds, 6)
      assert.strictEqual(fake.intervalOf(prompt.user_code), 6)
      assert.strictEqual((yield* auth.Cancel())?.status, "CANCELLED")
    })
  )

  it.effect("Cancel stops the polling and erases the device code; Start then begins a new flow", () =>
    Effect.gen(function* () {
      const fake = yield* FakeDeviceAuthServer
      const organizationId = yield* newOrganization("device-cancel")
      const id = agentDeviceAuthId(organizationId, null)
      const auth = yield* clientOf(id)
      const prompt = yield* auth.Start()
      yield* eventually(
        Effect.sync(() => fake.polls(prompt.user_code)),
        (polls) => polls.length >= 1
      )
      const cancelled = yield* auth.Cancel()
      assert.deepInclude(cancelled, { id, status: "CANCELLED", error: null, user_code: prompt.user_code })
      const polled = fake.polls(prompt.user_code).length
      const row = yield* storedRow(organizationId, id)
      assert.deepStrictEqual([row.device_code, row.access_token, row.refresh_token], [null, null, null])
      // Absence can only be seen over time: two intervals pass without a poll.
      yield* Effect.sleep(Duration.millis(2500))
      assert.strictEqual(fake.polls(prompt.user_code).length, polled)
      assert.strictEqual(reasonOf(yield* Effect.flip(auth.AccessToken())), "NotSignedIn")

      const next = yield* auth.Start()
      assert.notStrictEqual(next.user_code, prompt.user_code)
      assert.strictEqual((yield* auth.Status())?.status, "PENDING")
      assert.strictEqual((yield* auth.Cancel())?.status, "CANCELLED")
    })
  )

  it.effect("access_denied ends a repository's flow DENIED", () =>
    Effect.gen(function* () {
      const fake = yield* FakeDeviceAuthServer
      const organizationId = yield* newOrganization("device-denied")
      const repositoryId = yield* newRepository(organizationId, "denied")
      const id = agentDeviceAuthId(organizationId, repositoryId)
      assert.strictEqual(id, `REPOSITORY:${organizationId}:${repositoryId}`)
      const auth = yield* clientOf(id)
      const prompt = yield* auth.Start()
      fake.deny(prompt.user_code)
      const denied = yield* untilStatus(id, "DENIED")
      assert.deepInclude(denied, {
        organization_id: organizationId,
        repository_id: repositoryId,
        scope: "REPOSITORY",
        error: "The sign-in was denied at the provider."
      })
      assert.strictEqual(fake.polls(prompt.user_code).at(-1)?.answer, "access_denied")
      const row = yield* storedRow(organizationId, id)
      assert.isNull(row.device_code)
      const refused = yield* Effect.flip(auth.AccessToken())
      assert.strictEqual(reasonOf(refused), "NotSignedIn")
      assert.include((refused as AgentDeviceAuthError).message, "DENIED")
    })
  )

  it.effect("the code expiring ends the flow EXPIRED: at expires_in, and on expired_token", () =>
    Effect.gen(function* () {
      const fake = yield* FakeDeviceAuthServer
      fake.configure({ expiresIn: 2 })
      const lapsed = agentDeviceAuthId(yield* newOrganization("device-lapsed"), null)
      yield* Effect.flatMap(clientOf(lapsed), (client) => client.Start())
      fake.configure({ expiresIn: 600 })
      const expired = yield* untilStatus(lapsed, "EXPIRED")
      assert.strictEqual(expired.error, "The sign-in code expired before it was approved; start the sign-in again.")
      assert.isAtMost(fake.polls(expired.user_code ?? "").length, 2)

      const refused = agentDeviceAuthId(yield* newOrganization("device-expired"), null)
      const prompt = yield* Effect.flatMap(clientOf(refused), (client) => client.Start())
      fake.expire(prompt.user_code)
      yield* untilStatus(refused, "EXPIRED")
      assert.strictEqual(fake.polls(prompt.user_code).at(-1)?.answer, "expired_token")
    })
  )

  it.effect(
    "AccessToken near expiry refreshes once for 20 concurrent callers, and the rotated refresh token is stored",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeDeviceAuthServer
        const organizationId = yield* newOrganization("device-refresh")
        const id = agentDeviceAuthId(organizationId, null)
        const auth = yield* clientOf(id)
        // 20 s to live, within the 30 s margin; the alarm would refresh only after 10 s.
        fake.configure({ accessTokenTtl: 20 })
        const prompt = yield* auth.Start()
        fake.approve(prompt.user_code)
        yield* untilStatus(id, "AUTHORIZED")
        fake.configure({ accessTokenTtl: 3600 })
        const first = fake.issued()
        const refreshesBefore = fake.count("refresh_token")

        const tokens = yield* Effect.all(
          Array.from({ length: 20 }, () => auth.AccessToken()),
          { concurrency: "unbounded" }
        )
        const after = fake.issued()
        assert.strictEqual(fake.count("refresh_token") - refreshesBefore, 1)
        const fresh = after.accessTokens.at(-1)
        assert.notStrictEqual(fresh, first.accessTokens.at(-1))
        assert.deepStrictEqual(
          tokens.map((token) => Redacted.value(token.access_token)),
          tokens.map(() => fresh)
        )

        const rotated = after.refreshTokens.at(-1) ?? ""
        assert.notStrictEqual(rotated, first.refreshTokens.at(-1))
        assert.notInclude(fake.validRefreshTokens(), first.refreshTokens.at(-1) ?? "")
        assert.include(fake.validRefreshTokens(), rotated)
        const row = yield* storedRow(organizationId, id)
        assert.strictEqual(yield* opened(id, "refresh_token", row.refresh_token), rotated)
        assert.strictEqual(yield* opened(id, "access_token", row.access_token), fresh)
        assertNotInRow(row, [...after.accessTokens, ...after.refreshTokens])
        const view = yield* auth.Status()
        assert.strictEqual(view?.status, "AUTHORIZED")
        assert.isNotNull(view?.last_refreshed_at ?? null)
        assert.isAtLeast(seconds(view?.token_expires_at ?? null), Date.now() / 1000 + 3600 - 30)
        assert.strictEqual(tokens[0]?.expires_at, view?.token_expires_at)
      })
  )

  it.effect("the alarm refreshes before expiry, and retries a refresh that failed transiently", () =>
    Effect.gen(function* () {
      const fake = yield* FakeDeviceAuthServer
      const organizationId = yield* newOrganization("device-alarm")
      const id = agentDeviceAuthId(organizationId, null)
      const auth = yield* clientOf(id)
      // 4 s to live: the refresh is due at half its life, 2 s after the sign-in.
      fake.configure({ accessTokenTtl: 4 })
      const prompt = yield* auth.Start()
      fake.approve(prompt.user_code)
      const authorized = yield* untilStatus(id, "AUTHORIZED")
      fake.configure({ accessTokenTtl: 3600 })
      fake.failNext("refresh_token", 503, 1)
      const refreshesBefore = fake.requests.filter((request) => request.call === "refresh_token").length
      const refreshed = yield* eventually(statusOf(id), (view) => view?.last_refreshed_at !== null)
      const refreshes = fake.requests.filter((request) => request.call === "refresh_token").slice(refreshesBefore)
      assert.deepStrictEqual(
        refreshes.map((request) => request.answer),
        ["failure", "tokens"]
      )
      assert.isAtLeast((refreshes[1]?.at ?? 0) - (refreshes[0]?.at ?? 0), 200)
      // Refreshed before the old token expired.
      assert.isBelow(refreshes[0]?.at ?? Number.POSITIVE_INFINITY, seconds(authorized.token_expires_at) * 1000)
      assert.deepInclude(refreshed, { status: "AUTHORIZED", error: null })
      assert.isAtLeast(seconds(refreshed?.token_expires_at ?? null), Date.now() / 1000 + 3600 - 30)
      const token = yield* auth.AccessToken()
      assert.strictEqual(Redacted.value(token.access_token), fake.issued().accessTokens.at(-1))
    })
  )

  it.effect("a refresh refused with invalid_grant leaves the sign-in REAUTH_REQUIRED with a clear message", () =>
    Effect.gen(function* () {
      const fake = yield* FakeDeviceAuthServer
      const organizationId = yield* newOrganization("device-reauth")
      const id = agentDeviceAuthId(organizationId, null)
      const auth = yield* clientOf(id)
      fake.configure({ accessTokenTtl: 20 })
      const prompt = yield* auth.Start()
      fake.approve(prompt.user_code)
      yield* untilStatus(id, "AUTHORIZED")
      fake.configure({ accessTokenTtl: 3600 })
      fake.revokeRefreshTokens()

      const failure = (yield* Effect.flip(auth.AccessToken())) as AgentDeviceAuthError
      const message =
        "The provider no longer accepts this AGENT_ONE sign-in (its refresh was refused: invalid_grant); sign in again."
      assert.deepStrictEqual(
        [failure._tag, failure.reason, failure.message],
        ["AgentDeviceAuthError", "ReauthRequired", message]
      )
      assert.strictEqual(fake.requests.at(-1)?.answer, "invalid_grant")
      const view = yield* auth.Status()
      assert.deepInclude(view, { status: "REAUTH_REQUIRED", error: message })
      const row = yield* storedRow(organizationId, id)
      assert.deepStrictEqual([row.device_code, row.access_token, row.refresh_token], [null, null, null])
      const again = (yield* Effect.flip(auth.AccessToken())) as AgentDeviceAuthError
      assert.deepStrictEqual([again.reason, again.message], ["ReauthRequired", message])
      // Signing in again is how it ends.
      const next = yield* auth.Start()
      fake.approve(next.user_code)
      yield* untilStatus(id, "AUTHORIZED")
      assert.strictEqual(Redacted.value((yield* auth.AccessToken()).access_token), fake.issued().accessTokens.at(-1))
    })
  )

  it.effect("refuses an id that is not scope:organization:repository, and a scope that does not exist", () =>
    Effect.gen(function* () {
      const organizationId = yield* newOrganization("device-ids")
      for (const bad of [
        `ORGANIZATION:${organizationId}:some-repo`,
        `REPOSITORY:${organizationId}:-`,
        `TEAM:${organizationId}:-`,
        "nonsense"
      ]) {
        const error = (yield* Effect.flip(
          Effect.flatMap(clientOf(bad), (client) => client.Status())
        )) as AgentDeviceAuthError
        assert.strictEqual(error.reason, "InvalidId", bad)
        assert.strictEqual(
          reasonOf(yield* Effect.flip(Effect.flatMap(clientOf(bad), (client) => client.Start()))),
          "InvalidId"
        )
      }
      const otherOrganization = yield* newOrganization("device-ids-other")
      const foreign = yield* newRepository(otherOrganization, "foreign")
      for (const id of [agentDeviceAuthId("no-such-organization", null), agentDeviceAuthId(organizationId, foreign)]) {
        const client = yield* clientOf(id)
        assert.strictEqual(reasonOf(yield* Effect.flip(client.Start())), "UnknownScope")
        assert.isNull(yield* client.Status())
      }
    })
  )

  it.effect("no device code, access token or refresh token reaches a log line", () =>
    Effect.gen(function* () {
      const fake = yield* FakeDeviceAuthServer
      const capture = yield* LogCapture
      const logged = capture.lines.join("\n")
      assert.include(logged, "device_authorization_status")
      const issued = fake.issued()
      const secrets = [...issued.deviceCodes, ...issued.accessTokens, ...issued.refreshTokens]
      assert.isAbove(secrets.length, 10)
      for (const secret of secrets) assert.notInclude(logged, secret)
    })
  )
})

describe("AgentDeviceAuth across a restart", () => {
  it.live(
    "the polling alarm survives the runner stopping mid-PENDING: a new runner on the same database completes the flow without a new Start",
    () =>
      Effect.gen(function* () {
        const memoMap = yield* Layer.makeMemoMap
        const outer = yield* Effect.scope
        // What both runners share, built once: the fake, the database and the master key. The
        // runners' layers find these in the memo map; everything else is built anew each time.
        const shared = yield* Layer.buildWithMemoMap(
          Layer.mergeAll(
            FakeDeviceAuthServer.layer(),
            TestDatabase.layer,
            Secrets.layer.pipe(Layer.provide(layerTestSecrets()))
          ),
          memoMap,
          outer
        )
        const fake = Context.get(shared, FakeDeviceAuthServer)
        const start = Effect.gen(function* () {
          const scope = yield* Scope.make()
          yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
          const port = yield* Effect.promise(freePort)
          const context = yield* Layer.buildWithMemoMap(runner(port), memoMap, scope).pipe(
            Effect.provideContext(shared)
          )
          return { scope, context }
        })

        const first = yield* start
        const { id, prompt } = yield* Effect.gen(function* () {
          const organizationId = yield* newOrganization("device-restart")
          const id = agentDeviceAuthId(organizationId, null)
          const prompt = yield* Effect.flatMap(clientOf(id), (client) => client.Start())
          yield* eventually(
            Effect.sync(() => fake.polls(prompt.user_code)),
            (polls) => polls.length >= 1
          )
          return { id, prompt }
        }).pipe(Effect.provideContext(first.context))
        yield* Scope.close(first.scope, Exit.void)
        const pollsWhileStopped = fake.polls(prompt.user_code).length
        fake.approve(prompt.user_code)

        const second = yield* start
        const authorized = yield* untilStatus(id, "AUTHORIZED", Duration.seconds(40)).pipe(
          Effect.provideContext(second.context)
        )
        assert.strictEqual(authorized.user_code, prompt.user_code)
        assert.strictEqual(fake.count("device_authorization"), 1)
        const polls = fake.polls(prompt.user_code)
        assert.isAbove(polls.length, pollsWhileStopped)
        assert.strictEqual(polls.at(-1)?.answer, "tokens")
        const token = yield* Effect.flatMap(clientOf(id), (client) => client.AccessToken()).pipe(
          Effect.provideContext(second.context)
        )
        assert.strictEqual(Redacted.value(token.access_token), fake.issued().accessTokens[0])
        assert.isNotNull(authorized.token_expires_at)
        const issued = fake.issued()
        for (const context of [first.context, second.context]) {
          const logged = Context.get(context, LogCapture).lines.join("\n")
          assert.include(logged, "device_authorization_status")
          for (const secret of [...issued.deviceCodes, ...issued.accessTokens, ...issued.refreshTokens]) {
            assert.notInclude(logged, secret)
          }
        }
      }),
    120_000
  )
})

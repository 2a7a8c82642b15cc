/**
 * The production HTTP stack (`HttpLive`) on a loopback port 0, over a fresh test database, with
 * the log lines captured. Tests may add routes of their own next to `ApiRoutes`.
 */

import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createServer } from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { LogCapture, TestDatabase } from "@bosun/testing"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { NetAddress } from "effect/net"
import { layerClusterRunner } from "../../src/app/cluster/ClusterLive.ts"
import { WorkflowTypesLive } from "../../src/app/cluster/WorkflowTypesLive.ts"
import { ApiRoutes } from "../../src/app/HttpApp.ts"
import { EffectsWorkerLive, InboxWorkerLive } from "../../src/app/OutboxWorkers.ts"
import { AppProvidersLive, AppServicesLive, HttpLive } from "../../src/app/Server.ts"
import { ClusterProviderClientsLive } from "../../src/outbound/OutboundLive.ts"
import { AppConfig, type AppSettings, type MasterKeySettings } from "../../src/platform/config/AppConfig.ts"
import { InstanceSecrets } from "../../src/platform/config/InstanceSecrets.ts"
import { Migrator } from "../../src/platform/db/Migrator.ts"
import { AgentRuntime } from "../../src/platform/runtime/AgentRuntime.ts"
import { layerFileSystem } from "../../src/platform/storage/BlobStoreFileSystem.ts"
import { layerMemory } from "../../src/platform/storage/CacheMemory.ts"
import { layerPostgres } from "../../src/platform/storage/QueuePostgres.ts"
import { OutboxLive } from "../../src/platform/storage/StorageLive.ts"

export const migrationsDir = fileURLToPath(new URL("../../../../sql/", import.meta.url))

export const testSettings = (overrides: Partial<AppSettings> = {}): AppSettings => ({
  role: "all",
  host: "127.0.0.1",
  port: 0,
  baseUrl: new URL("http://127.0.0.1:0"),
  dataDir: "/nonexistent",
  databaseUrl: Option.none(),
  databasePoolSize: 5,
  maxBodyBytes: 1_048_576,
  webhookMaxBodyBytes: 26_214_400,
  webhookSecretCacheTtl: Duration.seconds(5),
  linearWebhookMaxAge: Duration.seconds(60),
  redisUrl: Option.none(),
  s3: Option.none(),
  masterKey: Option.none(),
  bootstrapToken: Option.none(),
  migrationsDir,
  dashboardDir: "/nonexistent/dashboard",
  migrationGateWait: Duration.millis(300),
  queues: {
    visibilityTimeout: Duration.millis(400),
    retryDelay: Duration.millis(100),
    pollInterval: Duration.millis(100)
  },
  outbox: { relayInterval: Duration.millis(200), grace: Duration.millis(300), resendAfter: Duration.minutes(15) },
  secretRotation: { lease: Duration.seconds(2), pollInterval: Duration.millis(200) },
  sessions: { idleTimeout: Duration.days(14), maxAge: Duration.days(30) },
  githubApiUrl: new URL("http://127.0.0.1:9/api/v3"),
  // GitHub's 5xx retried quickly and writes unpaced: tests wait for nothing a real GitHub needs.
  github: {
    retryBase: Duration.millis(20),
    retries: 3,
    writeInterval: Duration.millis(0),
    maxRateLimitWait: Duration.seconds(60)
  },
  composioApiUrl: new URL("http://127.0.0.1:9"),
  openRouterApiUrl: new URL("http://127.0.0.1:9/api/v1"),
  slackApiUrl: new URL("http://127.0.0.1:9/api/"),
  linearApiUrl: new URL("http://127.0.0.1:9/graphql"),
  composioApiKey: Option.none(),
  // A runtime nobody listens on: test servers launch no agent runtime of their own.
  runtime: {
    external: Option.some({ url: new URL("http://127.0.0.1:9"), token: Redacted.make("runtime-token-unused-0123") }),
    embeddedPort: 0,
    reviewAgentProfile: Option.none()
  },
  sseStreamDuration: Duration.seconds(55),
  sseKeepAliveInterval: Duration.seconds(15),
  metrics: Option.none(),
  sandboxes: { platformContainer: Option.none(), hostedSandbox: Option.none() },
  tracing: Option.none(),
  cluster: {
    runnerAddress: { host: "127.0.0.1", port: 0 },
    shardLockExpiration: Duration.seconds(5),
    refreshAssignmentsInterval: Duration.millis(500),
    shardHandoverWait: Duration.seconds(1),
    clientOnly: false,
    runnerHealth: { _tag: "ping" },
    usageTtl: Duration.seconds(60),
    scheduler: {
      lanes: { AGENT: 4, REVIEW: 4 },
      lease: Duration.seconds(30),
      retryBackoff: Duration.millis(200),
      idleTick: Duration.seconds(1),
      keepalive: Duration.millis(250)
    },
    attempts: {
      executeChunk: Duration.seconds(30),
      flushInterval: Duration.millis(200),
      flushMaxEvents: 100,
      heartbeatInterval: Duration.seconds(2),
      stepRetries: 3,
      stepRetryBase: Duration.millis(100)
    },
    deviceAuth: Option.none()
  },
  ...overrides
})

/** The bootstrap token every test server accepts. */
export const TEST_BOOTSTRAP_TOKEN = "test-bootstrap-token-0123456789abcdef"

/** A fresh random master key as `BOSUN_MASTER_KEY` would hold it. */
export const generateMasterKey = () => randomBytes(32).toString("base64")

export interface TestSecretsOptions {
  readonly masterKey?: MasterKeySettings
  /** `null`: no bootstrap token configured. */
  readonly bootstrapToken?: string | null
}

/** The instance secrets of a test server: a fresh master key (version 1) unless given. */
export const layerTestSecrets = (options: TestSecretsOptions = {}) =>
  Layer.sync(InstanceSecrets, () =>
    InstanceSecrets.of({
      masterKey: options.masterKey ?? { key: Redacted.make(generateMasterKey()), version: 1, previous: new Map() },
      bootstrapToken:
        options.bootstrapToken === null
          ? Option.none()
          : Option.some(Redacted.make(options.bootstrapToken ?? TEST_BOOTSTRAP_TOKEN)),
      embedded: Option.none()
    })
  )

/** A blob store in a temporary directory, removed with the layer. */
export const layerTemporaryBlobStore = Layer.unwrap(
  Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bosun-test-blobs-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    ),
    layerFileSystem
  )
)

/** The server's HTTP stack with `extra` routes beside the API; needs a `SqlClient`. */
export const layerHttp = <A = never, E = never, R = never>(options: {
  readonly extra?: Layer.Layer<A, E, R>
  readonly settings?: Partial<AppSettings>
  readonly secrets?: TestSecretsOptions
}) =>
  HttpLive(options.extra ? Layer.mergeAll(ApiRoutes, options.extra) : ApiRoutes).pipe(
    Layer.provideMerge(
      NodeHttpServer.layer(createServer, { port: testSettings(options.settings).port, host: "127.0.0.1" })
    ),
    Layer.provideMerge(Layer.mergeAll(InboxWorkerLive, EffectsWorkerLive)),
    Layer.provideMerge(ClusterProviderClientsLive),
    Layer.provideMerge(layerClusterRunner(WorkflowTypesLive)),
    Layer.provideMerge(AppProvidersLive),
    Layer.provideMerge(AppServicesLive),
    Layer.provideMerge(AgentRuntime.layer),
    Layer.provideMerge(
      OutboxLive.pipe(
        Layer.provideMerge(
          Layer.mergeAll(layerMemory, layerPostgres(testSettings(options.settings).queues), layerTemporaryBlobStore)
        )
      )
    ),
    Layer.provideMerge(Migrator.layer),
    Layer.provideMerge(layerTestSecrets(options.secrets)),
    Layer.provide(Layer.succeed(AppConfig, AppConfig.of(testSettings(options.settings))))
  )

/** The whole test server: HTTP stack, fresh database, captured logs; ready once migrations are applied. */
export const layerTestServer = <A = never, E = never, R = never>(
  options: {
    readonly extra?: Layer.Layer<A, E, R>
    readonly settings?: Partial<AppSettings>
    readonly secrets?: TestSecretsOptions
  } = {}
) =>
  layerHttp(options).pipe(
    Layer.tap((context) => Context.get(context, Migrator).awaitReady),
    Layer.provideMerge(TestDatabase.layer),
    Layer.provideMerge(LogCapture.layer)
  )

/** `http://127.0.0.1:<port>` of the running test server. */
export const baseUrl = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "UnixPathAddress" ? "" : `http://${NetAddress.formatInet(server.address)}`
)

export interface TestResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: unknown
}

/** Sends one request to the test server with `fetch` and reads the whole body. */
export const request = (path: string, init: RequestInit = {}) =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    return yield* Effect.promise(async (): Promise<TestResponse> => {
      const response = await fetch(`${base}${path}`, init)
      const text = await response.text()
      let json: unknown
      try {
        json = text === "" ? undefined : JSON.parse(text)
      } catch {
        json = undefined
      }
      return { status: response.status, headers: response.headers, text, json }
    })
  })

/** The captured log records whose `msg` is `msg`. */
export const logsNamed = (msg: string) =>
  Effect.gen(function* () {
    const capture = yield* LogCapture
    return (yield* capture.records).filter((record) => record.msg === msg)
  })

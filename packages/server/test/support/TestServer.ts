/**
 * The production HTTP stack (`HttpLive`) on a loopback port 0, over a fresh test database, with
 * the log lines captured. Tests may add routes of their own next to `ApiRoutes`.
 */

import { createServer } from "node:http"
import { fileURLToPath } from "node:url"
import { LogCapture, TestDatabase } from "@bosun/testing"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { HttpServer } from "effect/http"
import { NetAddress } from "effect/net"
import { AppConfig, type AppSettings } from "../../src/config/AppConfig.ts"
import { ApiRoutes } from "../../src/http/HttpApp.ts"
import { Migrator } from "../../src/persistence/Migrator.ts"
import { HttpLive } from "../../src/Server.ts"

export const migrationsDir = fileURLToPath(new URL("../../../../sql/", import.meta.url))

export const testSettings = (overrides: Partial<AppSettings> = {}): AppSettings => ({
  host: "127.0.0.1",
  port: 0,
  baseUrl: new URL("http://127.0.0.1:0"),
  dataDir: "/nonexistent",
  databaseUrl: Option.none(),
  databasePoolSize: 5,
  redisUrl: Option.none(),
  s3: Option.none(),
  masterKey: Option.none(),
  bootstrapToken: Option.none(),
  migrationsDir,
  migrationGateWait: Duration.millis(300),
  queues: {
    visibilityTimeout: Duration.millis(400),
    retryDelay: Duration.millis(100),
    pollInterval: Duration.millis(100)
  },
  outbox: { relayInterval: Duration.millis(200), grace: Duration.millis(300), resendAfter: Duration.minutes(15) },
  ...overrides
})

/** The server's HTTP stack with `extra` routes beside the API; needs a `SqlClient`. */
export const layerHttp = <A = never, E = never, R = never>(options: {
  readonly extra?: Layer.Layer<A, E, R>
  readonly settings?: Partial<AppSettings>
}) =>
  HttpLive(options.extra ? Layer.mergeAll(ApiRoutes, options.extra) : ApiRoutes).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
    Layer.provideMerge(Migrator.layer),
    Layer.provide(Layer.succeed(AppConfig, AppConfig.of(testSettings(options.settings))))
  )

/** The whole test server: HTTP stack, fresh database, captured logs; ready once migrations are applied. */
export const layerTestServer = <A = never, E = never, R = never>(
  options: { readonly extra?: Layer.Layer<A, E, R>; readonly settings?: Partial<AppSettings> } = {}
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

/**
 * The source of truth (docs/interface.md: What the service does 4): a Postgres pool as `SqlClient`.
 * With `DATABASE_URL` it connects there; without it, it starts the embedded Postgres under
 * `BOSUN_DATA_DIR/pg` and connects to that, through the Unix socket in that directory.
 */

import * as path from "node:path"
import { EmbeddedPostgres, embeddedUrl, runningEndpoint } from "@bosun/platform/EmbeddedPostgres"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, type Redacted } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { InstanceSecrets, StartupError } from "../config/InstanceSecrets.ts"

/** A pool of `maxConnections` on `url`. */
export const layerPool = (url: Redacted.Redacted<string>, maxConnections: number) =>
  PgClient.layer({ url, maxConnections, applicationName: "bosun" })

export const DatabaseLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) return layerPool(config.databaseUrl.value, config.databasePoolSize)
    const secrets = yield* InstanceSecrets
    if (Option.isNone(secrets.embedded)) {
      return yield* new StartupError({ message: "DATABASE_URL is unset but the embedded secrets are missing" })
    }
    const embedded = EmbeddedPostgres.layer({
      dataDir: path.join(config.dataDir, "pg"),
      password: secrets.embedded.value.postgresPassword
    })
    const pool = Layer.unwrap(
      Effect.gen(function* () {
        const pg = yield* EmbeddedPostgres
        return layerPool(pg.url, config.databasePoolSize)
      })
    )
    return pool.pipe(Layer.provideMerge(embedded))
  })
)

/**
 * For the `bosun` CLI: like `DatabaseLive`, except that on the embedded default it connects to
 * the Postgres a running server already holds on `BOSUN_DATA_DIR/pg` (two postmasters cannot
 * share one data directory), and starts it only when no server is running.
 */
export const DatabaseCliLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) return DatabaseLive
    const secrets = yield* InstanceSecrets
    const endpoint = yield* runningEndpoint(path.join(config.dataDir, "pg"))
    if (Option.isNone(endpoint) || Option.isNone(secrets.embedded)) return DatabaseLive
    return layerPool(embeddedUrl(secrets.embedded.value.postgresPassword, endpoint.value), 2)
  })
)

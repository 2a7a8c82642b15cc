/**
 * Chooses each storage role's adapter from the configuration (DESIGN: Storage roles):
 *
 * | role | with the setting | without it (embedded default) |
 * | --- | --- | --- |
 * | blob store | `BOSUN_S3_BUCKET`: S3 API | files under `BOSUN_DATA_DIR/blobs` |
 * | cache | `REDIS_URL`: Redis | in-process map |
 * | queues | `REDIS_URL`: Redis Streams | Postgres `queue_messages` |
 *
 * The outbox always lives in Postgres; its relay starts once the migrations are applied.
 */

import * as path from "node:path"
import { Effect, Layer, Option } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { Migrator } from "../persistence/Migrator.ts"
import { layerFileSystem } from "./BlobStoreFileSystem.ts"
import { layerS3 } from "./BlobStoreS3.ts"
import { layerMemory } from "./CacheMemory.ts"
import { layerRedis as layerRedisCache } from "./CacheRedis.ts"
import { Outbox } from "./Outbox.ts"
import { layerPostgres } from "./QueuePostgres.ts"
import { layerRedis as layerRedisQueues } from "./QueueRedis.ts"
import { Redis } from "./Redis.ts"

export const BlobStoreLive = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    Option.match(config.s3, {
      onNone: () => layerFileSystem(path.join(config.dataDir, "blobs")),
      onSome: layerS3
    })
  )
)

/** Cache and queues, on one shared Redis connection when `REDIS_URL` is set. */
export const CacheAndQueuesLive = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    Option.match(config.redisUrl, {
      onNone: () => Layer.merge(layerMemory, layerPostgres(config.queues)),
      onSome: (url) =>
        Layer.merge(layerRedisCache(), layerRedisQueues({ ...config.queues, prefix: "bosun:queue:" })).pipe(
          Layer.provide(Redis.layer(url))
        )
    })
  )
)

export const OutboxLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const migrator = yield* Migrator
    return Outbox.layer({ ...config.outbox, ready: migrator.awaitReady })
  })
)

export const StorageLive = OutboxLive.pipe(Layer.provideMerge(Layer.merge(BlobStoreLive, CacheAndQueuesLive)))

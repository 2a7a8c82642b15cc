/**
 * Chooses each storage role's adapter from the configuration (docs/interface.md: Design rules):
 *
 * | role | with the setting | without it (embedded default) |
 * | --- | --- | --- |
 * | blob store | `BOSUN_S3_BUCKET`: S3 API | files under `BOSUN_DATA_DIR/blobs` |
 * | cache | `REDIS_URL`: Redis | in-process map |
 * | queues | `REDIS_URL`: Redis Streams | Postgres `queue_messages` |
 *
 * The outbox always lives in Postgres; its relay starts once the migrations are applied.
 *
 * The S3 and Redis adapters are imported only when their setting is present: the AWS SDK and
 * ioredis together hold about 50 MB of a process's memory, which a one-process install on the
 * embedded defaults never uses (the idle-RSS budget is 200 MB).
 */

import * as path from "node:path"
import { Effect, Layer, Option } from "effect"
import { AppConfig } from "../config/AppConfig.ts"
import { Migrator } from "../db/Migrator.ts"
import { layerFileSystem } from "./BlobStoreFileSystem.ts"
import { layerMemory } from "./CacheMemory.ts"
import { Outbox } from "./Outbox.ts"
import { layerPostgres } from "./QueuePostgres.ts"

export const BlobStoreLive = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    Option.match(config.s3, {
      onNone: () => layerFileSystem(path.join(config.dataDir, "blobs")),
      onSome: (settings) =>
        Layer.unwrap(Effect.promise(() => import("./BlobStoreS3.ts")).pipe(Effect.map((s3) => s3.layerS3(settings))))
    })
  )
)

/** Cache and queues, on one shared Redis connection when `REDIS_URL` is set. */
export const CacheAndQueuesLive = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    Option.match(config.redisUrl, {
      onNone: () => Layer.merge(layerMemory, layerPostgres(config.queues)),
      onSome: (url) =>
        Layer.unwrap(
          Effect.promise(() =>
            Promise.all([import("./CacheRedis.ts"), import("./QueueRedis.ts"), import("@bosun/platform/Redis")])
          ).pipe(
            Effect.map(([cache, queues, redis]) =>
              Layer.merge(cache.layerRedis(), queues.layerRedis({ ...config.queues, prefix: "bosun:queue:" })).pipe(
                Layer.provide(redis.Redis.layer(url))
              )
            )
          )
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

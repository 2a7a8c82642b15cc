/**
 * Both queue adapters against the same conformance suite: Postgres (a fresh migrated database)
 * and Redis Streams (a real server, each run under its own key prefix).
 */
import { layerTestRedis, redisMissingReason, redisUrl, TestDatabase, testKeyPrefix } from "@bosun/testing"
import { describe } from "@effect/vitest"
import { Layer } from "effect"
import { runMigrations } from "../../../src/platform/db/Migrator.ts"
import { layerPostgres } from "../../../src/platform/storage/QueuePostgres.ts"
import { layerRedis } from "../../../src/platform/storage/QueueRedis.ts"
import { migrationsDir } from "../../support/TestServer.ts"
import { queueConformance, testQueueSettings } from "./QueueConformance.ts"

const MigratedDatabase = Layer.effectDiscard(runMigrations(migrationsDir)).pipe(Layer.provideMerge(TestDatabase.layer))

queueConformance("Postgres", layerPostgres(testQueueSettings).pipe(Layer.provideMerge(MigratedDatabase)))

describe.skipIf(redisUrl() === null)(`Redis (${redisMissingReason()})`, () => {
  queueConformance(
    "Redis Streams",
    layerRedis({ ...testQueueSettings, prefix: testKeyPrefix() }).pipe(
      Layer.provide(layerTestRedis),
      Layer.provideMerge(TestDatabase.layer)
    )
  )
})

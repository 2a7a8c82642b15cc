/**
 * Both cache adapters against the same conformance suite: in-process, and Redis (a real server,
 * each run under its own key prefix).
 */
import { layerTestRedis, redisMissingReason, redisUrl, testKeyPrefix } from "@bosun/testing"
import { describe } from "@effect/vitest"
import { Layer } from "effect"
import { layerMemory } from "../../../src/platform/storage/CacheMemory.ts"
import { layerRedis } from "../../../src/platform/storage/CacheRedis.ts"
import { cacheConformance } from "./CacheConformance.ts"

cacheConformance("in-process", layerMemory)

describe.skipIf(redisUrl() === null)(`Redis (${redisMissingReason()})`, () => {
  cacheConformance("Redis", layerRedis(`${testKeyPrefix()}cache:`).pipe(Layer.provide(layerTestRedis)))
})

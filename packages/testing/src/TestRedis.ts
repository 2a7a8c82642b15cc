/**
 * Redis for a test file: the server the global setup found or started, a `Redis` connection
 * layer on it, and a key prefix unique to the file so files can share the server.
 */

import { randomBytes } from "node:crypto"
import { Redis } from "@bosun/platform/Redis"
import { Effect, Layer, Redacted } from "effect"
import { provided } from "./Provided.ts"

/** The Redis URL, or null when the run has none (the reason is in `redisMissingReason`). */
export const redisUrl = (): string | null => provided("bosun.redisUrl")
export const redisMissingReason = (): string => provided("bosun.redisMissing") ?? "Redis is available"

/** A prefix for every key a test file writes: `bosun:test:<random>:`. */
export const testKeyPrefix = () => `bosun:test:${randomBytes(5).toString("hex")}:`

/** A `Redis` connection to the test server; dies when there is none (guard with `redisUrl()`). */
export const layerTestRedis: Layer.Layer<Redis> = Layer.unwrap(
  Effect.sync(() => {
    const url = redisUrl()
    if (url === null)
      return Layer.effect(Redis, Effect.die(new Error(`no Redis for this run: ${redisMissingReason()}`)))
    return Redis.layer(Redacted.make(url)).pipe(Layer.orDie)
  })
)

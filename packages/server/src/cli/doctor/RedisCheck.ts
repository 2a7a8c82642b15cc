/**
 * `bosun doctor`, the Redis check: when `REDIS_URL` is set, one connection and a PING.
 *
 * It does not use the shared `Redis` layer on purpose: the server's connection reconnects without
 * end (right for a server riding out a Redis restart, wrong for a diagnosis), and its connect error
 * is "Connection is closed." where the operator needs "connection refused" or "wrong password".
 * This probe connects once, never reconnects, and keeps the error that closed it.
 */

import { RedisError } from "@bosun/platform/Redis"
import { Effect, Option, Redacted } from "effect"
import { Redis as IORedis } from "ioredis"
import type { AppSettings } from "../../platform/config/AppConfig.ts"
import {
  CheckFailed,
  type CheckResult,
  connectionProblem,
  describeCause,
  displayUrl,
  PROBE_TIMEOUT,
  rootCode,
  runCheck,
  skipped
} from "./CheckResult.ts"

export const REDIS = "Redis"

const explain = (shown: string) => (error: RedisError) => {
  const network = connectionProblem(rootCode(error.cause))
  if (network !== undefined) {
    return new CheckFailed({
      message: `cannot connect to ${shown}: ${network}`,
      fix: "start Redis there, or correct REDIS_URL (unset it to keep the cache in-process and the queues in Postgres)"
    })
  }
  const reason = describeCause(error.cause)
  if (/NOAUTH|WRONGPASS|invalid password|invalid username-password/i.test(reason)) {
    return new CheckFailed({
      message: `${shown} refused the connection's credentials (${reason.split(" ")[0]})`,
      fix: "put the right user and password in REDIS_URL (redis://USER:PASSWORD@HOST:PORT)"
    })
  }
  return new CheckFailed({
    message: `${shown}: ${error.message}: ${reason}`,
    fix: "check REDIS_URL and the Redis server's log"
  })
}

/** Connects once, PINGs, disconnects; the timeout of `runCheck` bounds it, and the client never retries. */
const ping = Effect.fn("Doctor.redisPing")(function* (url: Redacted.Redacted<string>) {
  const shown = displayUrl(Redacted.value(url))
  let lastError: unknown
  const client = yield* Effect.acquireRelease(
    Effect.sync(() => {
      const client = new IORedis(Redacted.value(url), {
        lazyConnect: true,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
        connectTimeout: 4000
      })
      // Without a listener ioredis prints each error to stderr; the last one is what the line reports.
      client.on("error", (error: unknown) => {
        lastError = error
      })
      return client
    }),
    (client) => Effect.sync(() => client.disconnect())
  )
  yield* Effect.tryPromise({
    try: () => client.connect(),
    catch: (cause) => new RedisError({ message: "cannot connect", cause: lastError ?? cause })
  }).pipe(Effect.mapError(explain(shown)))
  const answer = yield* Effect.tryPromise({
    try: () => client.ping(),
    catch: (cause) => new RedisError({ message: "PING failed", cause })
  }).pipe(Effect.mapError(explain(shown)))
  return `${shown} answers PING (${answer})`
})

/** The Redis line: skipped without `REDIS_URL`, else the PING probe within `PROBE_TIMEOUT`. */
export const checkRedis = (settings: AppSettings): Effect.Effect<CheckResult> =>
  Option.match(settings.redisUrl, {
    onNone: () =>
      Effect.succeed(
        skipped(REDIS, "not configured (REDIS_URL unset): the cache is in-process and the queues use Postgres")
      ),
    onSome: (url) =>
      runCheck(REDIS, Effect.scoped(ping(url)), {
        timeout: PROBE_TIMEOUT,
        onTimeout: "check that REDIS_URL points at Redis and that no firewall drops the connection"
      })
  })

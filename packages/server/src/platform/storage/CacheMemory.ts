/**
 * In-process cache adapter, the embedded default: a map with expiry times read from Effect's
 * `Clock` (so tests can move time). Expired entries are dropped when read and swept when the
 * map has grown since the last sweep; one process means no sharing is needed.
 */
import { Clock, type Duration, Effect, Layer, Option } from "effect"
import { Cache, makeGetOrLoad, ttlMillis } from "./Cache.ts"

export const makeMemoryCache = Effect.sync(() => {
  const entries = new Map<string, { readonly value: string; readonly expiresAt: number }>()
  let sweepAt = 1024

  const get = Effect.fn("Cache.get")(function* (key: string) {
    const now = yield* Clock.currentTimeMillis
    const entry = entries.get(key)
    if (entry === undefined) return Option.none<string>()
    if (entry.expiresAt <= now) {
      entries.delete(key)
      return Option.none<string>()
    }
    return Option.some(entry.value)
  })

  const set = Effect.fn("Cache.set")(function* (key: string, value: string, ttl: Duration.Input) {
    const now = yield* Clock.currentTimeMillis
    entries.set(key, { value, expiresAt: now + ttlMillis(ttl) })
    if (entries.size >= sweepAt) {
      for (const [k, e] of entries) if (e.expiresAt <= now) entries.delete(k)
      sweepAt = Math.max(1024, entries.size * 2)
    }
  })

  const remove = (key: string) =>
    Effect.sync(() => {
      entries.delete(key)
    }).pipe(Effect.withSpan("Cache.delete"))

  return Cache.of({ get, set, delete: remove, getOrLoad: makeGetOrLoad(get, set) })
})

export const layerMemory = Layer.effect(Cache, makeMemoryCache)

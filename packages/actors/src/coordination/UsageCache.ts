/**
 * UsageCache, one entity per organization (docs/interface.md: What the service does 8,
 * Coordinators, UsageCache; Design rules): the provider's usage and quota figures, cached for a TTL
 * (60 s by default) and fetched single-flight, so a burst of lookups costs one provider call and
 * every caller of that flight gets its answer or its failure. A failure is never cached.
 *
 * It also serializes the agent's token refresh per organization: refreshes never overlap, one
 * asked for while the same provider's refresh is pending joins it, and a finished refresh drops
 * that provider's cached usage. The cache is memory only — losing it with the entity (idle, moved)
 * costs one more provider call. The provider calls sit behind the `UsageSource` port, which the
 * server provides.
 */
import { ProviderUsage } from "@bosun/domain"
import { Clock, Context, Deferred, Duration, Effect, Exit, Metric, Schema, Scope, Semaphore } from "effect"
import { Entity, type Sharding } from "effect/cluster"
import { Rpc } from "effect/rpc"

/** One reading of a provider's usage for an organization; `figures` is the provider's own shape. */
export const UsageSnapshot = ProviderUsage
export type UsageSnapshot = ProviderUsage

/**
 * Why a lookup or refresh failed: the organization has no credential for the provider, the
 * provider reports no usage (or has no token to refresh), or the provider's call failed.
 */
export const UsageFailureReason = Schema.Literals(["NO_CREDENTIAL", "NOT_REPORTED", "PROVIDER_ERROR"])

export class UsageLookupFailed extends Schema.TaggedError<UsageLookupFailed>()("UsageLookupFailed", {
  organizationId: Schema.String,
  provider: Schema.String,
  reason: UsageFailureReason,
  message: Schema.String
}) {}

/** The provider side: what the cache calls when it has nothing fresh, and the agent's token refresh. */
export class UsageSource extends Context.Service<
  UsageSource,
  {
    lookup(organizationId: string, provider: string): Effect.Effect<UsageSnapshot, UsageLookupFailed>
    refreshToken(organizationId: string, provider: string): Effect.Effect<void, UsageLookupFailed>
  }
>()("bosun/actors/coordination/UsageSource") {}

export const Lookup = Rpc.make("Lookup", {
  payload: { provider: Schema.String },
  success: UsageSnapshot,
  error: UsageLookupFailed
})

export const RefreshToken = Rpc.make("RefreshToken", {
  payload: { provider: Schema.String },
  error: UsageLookupFailed
})

export const UsageCache = Entity.make("UsageCache", [Lookup, RefreshToken])

export interface UsageCacheSettings {
  /** How long a snapshot answers lookups before the provider is asked again. */
  readonly ttl: Duration.Duration
}

export const DEFAULT_USAGE_TTL = Duration.seconds(60)

/** Lookups by how they were answered: `hit` (cache), `joined` (a flight in progress), `fetched` (a new flight). */
export const usageLookups = Metric.counter("bosun_usage_cache_lookups_total", {
  description: "Usage lookups at the UsageCache entities of this runner, by outcome"
})

/** Token refreshes by whether they `started` a provider call or `joined` a pending one. */
export const tokenRefreshes = Metric.counter("bosun_usage_cache_token_refreshes_total", {
  description: "Agent token refreshes at the UsageCache entities of this runner, by outcome"
})

const counted = (metric: Metric.Metric<number, Metric.CounterState<number>>, outcome: string) =>
  Metric.update(Metric.withAttributes(metric, { outcome }), 1)

interface Cached {
  readonly snapshot: UsageSnapshot
  readonly at: number
}

export const layerUsageCache = (settings: UsageCacheSettings) =>
  UsageCache.toLayer(
    Effect.gen(function* () {
      const organizationId = (yield* Entity.CurrentAddress).entityId
      const source = yield* UsageSource
      // Flights run in the entity's scope, not the first caller's: its leaving must not fail the others.
      const scope = yield* Scope.Scope
      const ttlMillis = Duration.toMillis(settings.ttl)
      const cached = new Map<string, Cached>()
      const lookups = new Map<string, Deferred.Deferred<UsageSnapshot, UsageLookupFailed>>()
      const refreshes = new Map<string, Deferred.Deferred<void, UsageLookupFailed>>()
      const oneRefreshAtATime = yield* Semaphore.make(1)
      // Bumped by every refresh: a lookup that started before a refresh ended answers its callers
      // but is not cached, since it may have read with the old token.
      const generations = new Map<string, number>()
      const generation = (provider: string) => generations.get(provider) ?? 0

      const fetch = Effect.fn("UsageCache.fetch")(function* (
        provider: string,
        flight: Deferred.Deferred<UsageSnapshot, UsageLookupFailed>
      ) {
        const startedIn = generation(provider)
        const exit = yield* Effect.exit(source.lookup(organizationId, provider))
        const now = yield* Clock.currentTimeMillis
        lookups.delete(provider)
        if (Exit.isSuccess(exit) && generation(provider) === startedIn) {
          cached.set(provider, { snapshot: exit.value, at: now })
        }
        yield* Deferred.done(flight, exit)
      })

      const refresh = Effect.fn("UsageCache.refresh")(function* (
        provider: string,
        pending: Deferred.Deferred<void, UsageLookupFailed>
      ) {
        const exit = yield* oneRefreshAtATime.withPermits(1)(Effect.exit(source.refreshToken(organizationId, provider)))
        refreshes.delete(provider)
        // Even a failed refresh may have replaced the token at the provider.
        generations.set(provider, generation(provider) + 1)
        cached.delete(provider)
        yield* Deferred.done(pending, exit)
      })

      // Each call decides in one uninterruptible step how it is answered, and a flight or refresh it
      // registers is started in that step too: one registered but never started would hold every
      // later caller forever. Only the waiting is interruptible.
      const answerLookup = (provider: string) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const hit = cached.get(provider)
          if (hit !== undefined && now - hit.at < ttlMillis) {
            yield* counted(usageLookups, "hit")
            return Effect.succeed(hit.snapshot)
          }
          const inFlight = lookups.get(provider)
          if (inFlight !== undefined) {
            yield* counted(usageLookups, "joined")
            return Deferred.await(inFlight)
          }
          const flight = Deferred.makeUnsafe<UsageSnapshot, UsageLookupFailed>()
          lookups.set(provider, flight)
          yield* Effect.forkIn(fetch(provider, flight), scope)
          yield* counted(usageLookups, "fetched")
          return Deferred.await(flight)
        })

      const answerRefresh = (provider: string) =>
        Effect.gen(function* () {
          const pending = refreshes.get(provider)
          if (pending !== undefined) {
            yield* counted(tokenRefreshes, "joined")
            return Deferred.await(pending)
          }
          const started = Deferred.makeUnsafe<void, UsageLookupFailed>()
          refreshes.set(provider, started)
          yield* Effect.forkIn(refresh(provider, started), scope)
          yield* counted(tokenRefreshes, "started")
          return Deferred.await(started)
        })

      return UsageCache.of({
        Lookup: ({ payload: { provider } }) => Effect.flatten(Effect.uninterruptible(answerLookup(provider))),
        RefreshToken: ({ payload: { provider } }) => Effect.flatten(Effect.uninterruptible(answerRefresh(provider)))
      })
    }),
    {
      concurrency: "unbounded",
      // Kept past the TTL so a quiet organization's snapshot is still there for its next lookup.
      maxIdleTime: Duration.sum(settings.ttl, Duration.minutes(1))
    }
  )

/** Production's cache: the 60 s TTL (docs/interface.md: Coordinators, UsageCache). */
export const UsageCacheLive = layerUsageCache({ ttl: DEFAULT_USAGE_TTL })

/** The cluster failing to deliver a message is not something a caller of the cache can act on. */
const undeliverable = {
  MailboxFull: Effect.die,
  AlreadyProcessingMessage: Effect.die,
  PersistenceError: Effect.die,
  EntityNotAssignedToRunner: Effect.die
} as const

/** The organization's usage at `provider`, at most one TTL old. */
export const lookupUsage = Effect.fn("UsageCache.lookupUsage")(function* (
  organizationId: string,
  provider: string
): Effect.fn.Return<UsageSnapshot, UsageLookupFailed, Sharding.Sharding> {
  const cache = (yield* UsageCache.client)(organizationId)
  return yield* cache.Lookup({ provider }).pipe(Effect.catchTags(undeliverable))
})

/** Refreshes the agent's token at `provider`, or joins the refresh already pending for it. */
export const refreshAgentToken = Effect.fn("UsageCache.refreshAgentToken")(function* (
  organizationId: string,
  provider: string
): Effect.fn.Return<void, UsageLookupFailed, Sharding.Sharding> {
  const cache = (yield* UsageCache.client)(organizationId)
  return yield* cache.RefreshToken({ provider }).pipe(Effect.catchTags(undeliverable))
})

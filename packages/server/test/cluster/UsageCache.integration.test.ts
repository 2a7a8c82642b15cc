/**
 * The UsageCache coordinator (docs/interface.md: What the service does 8, Coordinators, UsageCache)
 * on the production cluster runner: single-flight lookups (50 concurrent lookups, one provider
 * call), the TTL (shortened to 1.5 s here), failures shared by a flight and never cached, token
 * refreshes serialized and joined per organization and dropping the cached usage, and one cache
 * per organization. The provider is the test's counting `UsageSource`, gated by Deferreds; the
 * callers are known to have joined a flight (the cache's outcome counters) before its gate opens.
 */
import {
  lookupUsage,
  refreshAgentToken,
  UsageLookupFailed,
  type UsageSnapshot,
  UsageSource
} from "@bosun/actors/coordination/UsageCache"
import { eventually } from "@bosun/testing"
import { freePort } from "@bosun/testing/RuntimeProcess"
import { assert, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Metric } from "effect"
import { layerWorkflowTypes } from "../../src/app/cluster/WorkflowTypesLive.ts"
import { layerTestCluster } from "../support/TestCluster.ts"

const TTL = Duration.millis(1500)
const LOOKUPS = "bosun_usage_cache_lookups_total"
const REFRESHES = "bosun_usage_cache_token_refreshes_total"

interface SourceCall {
  readonly kind: "lookup" | "refresh"
  readonly organizationId: string
  readonly provider: string
  readonly n: number
  readonly startedAt: number
  endedAt: number | undefined
}

/** A provider that counts its calls; per organization, a test decides what a call does before answering. */
const fakeSource = (() => {
  const calls: Array<SourceCall> = []
  const before = new Map<string, (call: SourceCall) => Effect.Effect<void, UsageLookupFailed>>()
  let inside = 0
  let mostRefreshesInside = 0
  const call = (kind: SourceCall["kind"], organizationId: string, provider: string) =>
    Effect.suspend(() => {
      const entry: SourceCall = {
        kind,
        organizationId,
        provider,
        n: calls.length + 1,
        startedAt: Date.now(),
        endedAt: undefined
      }
      calls.push(entry)
      if (kind === "refresh") {
        inside++
        mostRefreshesInside = Math.max(mostRefreshesInside, inside)
      }
      return (before.get(organizationId) ?? (() => Effect.void))(entry).pipe(
        Effect.ensuring(
          Effect.sync(() => {
            entry.endedAt = Date.now()
            if (kind === "refresh") inside--
          })
        ),
        Effect.as(entry)
      )
    })
  const source = UsageSource.of({
    lookup: (organizationId, provider) =>
      Effect.map(
        call("lookup", organizationId, provider),
        (entry): UsageSnapshot => ({
          provider,
          fetched_at: new Date(entry.startedAt).toISOString(),
          figures: { call: entry.n, organization: organizationId, requests_remaining: 1_000 - entry.n }
        })
      ),
    refreshToken: (organizationId, provider) => Effect.asVoid(call("refresh", organizationId, provider))
  })
  return {
    source,
    callsOf: (organizationId: string, kind: SourceCall["kind"]) =>
      calls.filter((entry) => entry.organizationId === organizationId && entry.kind === kind),
    setBefore: (organizationId: string, f: (call: SourceCall) => Effect.Effect<void, UsageLookupFailed>) =>
      before.set(organizationId, f),
    mostRefreshesInside: () => mostRefreshesInside
  }
})()

const cluster = Layer.unwrap(
  Effect.map(Effect.promise(freePort), (runnerPort) =>
    layerTestCluster({
      workflowTypes: layerWorkflowTypes(Effect.succeed({})),
      // No attempt runs here: the runtime is never called.
      runtime: { url: "http://127.0.0.1:9", token: "unused" },
      runnerPort,
      settings: (base) => ({ ...base, cluster: { ...base.cluster, usageTtl: TTL } }),
      usageSource: Layer.succeed(UsageSource, fakeSource.source)
    })
  )
)

let orgs = 0
const freshOrg = (name: string) => `org-${name}-${orgs++}`

/** The organization's cache through the client helpers callers use. */
const cacheOf = (organizationId: string) => ({
  Lookup: ({ provider }: { readonly provider: string }) => lookupUsage(organizationId, provider),
  RefreshToken: ({ provider }: { readonly provider: string }) => refreshAgentToken(organizationId, provider)
})

/** A counter of the cache's, summed over this runner, for one outcome. */
const counter = (id: string, outcome: string) =>
  Effect.map(Metric.snapshot, (snapshots) => {
    let total = 0
    for (const snapshot of snapshots) {
      if (snapshot.id === id && snapshot.type === "Counter" && snapshot.attributes?.outcome === outcome) {
        total += Number(snapshot.state.count)
      }
    }
    return total
  })

/**
 * Marks the counters now; `until` then waits for the entity to have decided how it answers that
 * many more calls (once a caller has joined a flight, that flight's outcome is its answer).
 */
const markCounters = Effect.gen(function* () {
  const lookups = { fetched: yield* counter(LOOKUPS, "fetched"), joined: yield* counter(LOOKUPS, "joined") }
  const refreshes = { started: yield* counter(REFRESHES, "started"), joined: yield* counter(REFRESHES, "joined") }
  const since = Effect.gen(function* () {
    return {
      fetched: (yield* counter(LOOKUPS, "fetched")) - lookups.fetched,
      lookupsJoined: (yield* counter(LOOKUPS, "joined")) - lookups.joined,
      started: (yield* counter(REFRESHES, "started")) - refreshes.started,
      refreshesJoined: (yield* counter(REFRESHES, "joined")) - refreshes.joined
    }
  })
  return {
    since,
    until: (expected: Partial<Effect.Success<typeof since>>) =>
      eventually(
        since,
        (counts) => Object.entries(expected).every(([name, value]) => counts[name as keyof typeof counts] === value),
        Duration.seconds(10)
      )
  }
})

const failure = (organizationId: string, provider: string) =>
  new UsageLookupFailed({
    organizationId,
    provider,
    reason: "PROVIDER_ERROR",
    message: "the usage endpoint answered 503"
  })

layer(cluster, { excludeTestServices: true, timeout: "120 seconds" })("the UsageCache coordinator", (it) => {
  it.effect("50 concurrent lookups cost one provider call, and all 50 get the same snapshot", () =>
    Effect.gen(function* () {
      const org = freshOrg("burst")
      const gate = yield* Deferred.make<void>()
      fakeSource.setBefore(org, () => Deferred.await(gate))
      const cache = cacheOf(org)
      const marks = yield* markCounters
      const lookups = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: 50 }), () => cache.Lookup({ provider: "anthropic" }), {
          concurrency: "unbounded"
        })
      )
      // One lookup started the flight and the other 49 joined it while the provider call was still out.
      yield* marks.until({ fetched: 1, lookupsJoined: 49 })
      yield* Deferred.succeed(gate, undefined)
      const snapshots = yield* Fiber.join(lookups)

      const calls = fakeSource.callsOf(org, "lookup")
      assert.strictEqual(calls.length, 1)
      const call = calls[0]
      assert.strictEqual(snapshots.length, 50)
      const [first] = snapshots
      assert.deepStrictEqual(first, {
        provider: "anthropic",
        fetched_at: new Date(call?.startedAt ?? 0).toISOString(),
        figures: { call: call?.n, organization: org, requests_remaining: 1_000 - (call?.n ?? 0) }
      })
      for (const snapshot of snapshots) assert.deepStrictEqual(snapshot, first)
    })
  )

  it.effect("within the TTL lookups are answered from the cache; after it the provider is asked again", () =>
    Effect.gen(function* () {
      const org = freshOrg("ttl")
      const cache = cacheOf(org)
      const first = yield* cache.Lookup({ provider: "anthropic" })
      const cachedAt = Date.now()
      const again = yield* cache.Lookup({ provider: "anthropic" })
      assert.isBelow(Date.now() - cachedAt, Duration.toMillis(TTL), "the second lookup came within the TTL")
      assert.deepStrictEqual(again, first)
      assert.strictEqual(fakeSource.callsOf(org, "lookup").length, 1)

      const fresh = yield* eventually(
        cache.Lookup({ provider: "anthropic" }),
        (snapshot) => snapshot.figures.call !== first.figures.call,
        Duration.seconds(10)
      )
      const calls = fakeSource.callsOf(org, "lookup")
      assert.strictEqual(calls.length, 2, "polling within the TTL asked the provider nothing")
      assert.strictEqual(fresh.figures.call, calls[1]?.n)
      assert.isAtLeast((calls[1]?.startedAt ?? 0) - (calls[0]?.endedAt ?? 0), Duration.toMillis(TTL) - 5)
    })
  )

  it.effect("a failed provider call reaches every lookup of its flight and is not cached", () =>
    Effect.gen(function* () {
      const org = freshOrg("failing")
      const gate = yield* Deferred.make<void>()
      fakeSource.setBefore(org, () => Effect.andThen(Deferred.await(gate), Effect.fail(failure(org, "anthropic"))))
      const cache = cacheOf(org)
      const marks = yield* markCounters
      const lookups = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: 10 }), () => Effect.exit(cache.Lookup({ provider: "anthropic" })), {
          concurrency: "unbounded"
        })
      )
      yield* marks.until({ fetched: 1, lookupsJoined: 9 })
      yield* Deferred.succeed(gate, undefined)
      const exits = yield* Fiber.join(lookups)
      assert.strictEqual(fakeSource.callsOf(org, "lookup").length, 1)
      for (const exit of exits) {
        assert.isTrue(Exit.isFailure(exit))
        const error = Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined
        assert.strictEqual(error?._tag, "Fail")
        if (error?._tag === "Fail") {
          assert.instanceOf(error.error, UsageLookupFailed)
          assert.deepStrictEqual(
            {
              organizationId: error.error.organizationId,
              provider: error.error.provider,
              message: error.error.message
            },
            { organizationId: org, provider: "anthropic", message: "the usage endpoint answered 503" }
          )
        }
      }

      fakeSource.setBefore(org, () => Effect.void)
      const recovered = yield* cache.Lookup({ provider: "anthropic" })
      assert.strictEqual(fakeSource.callsOf(org, "lookup").length, 2, "the next lookup asked the provider again")
      assert.strictEqual(recovered.figures.call, fakeSource.callsOf(org, "lookup")[1]?.n)
    })
  )

  it.effect(
    "token refreshes of one organization never overlap, and one asked for while its provider's refresh is pending joins it",
    () =>
      Effect.gen(function* () {
        const org = freshOrg("refresh")
        const gate = yield* Deferred.make<void>()
        fakeSource.setBefore(org, (call) => (call.kind === "refresh" ? Deferred.await(gate) : Effect.void))
        const cache = cacheOf(org)
        const marks = yield* markCounters
        const refreshes = yield* Effect.forkChild(
          Effect.forEach(
            ["anthropic", "openai", "anthropic", "openai", "anthropic", "openai", "anthropic", "anthropic"],
            (provider) => cache.RefreshToken({ provider }),
            { concurrency: "unbounded" }
          )
        )
        // One refresh per provider started; the other six joined the pending one of their provider.
        yield* marks.until({ started: 2, refreshesJoined: 6 })
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(refreshes)

        const calls = fakeSource.callsOf(org, "refresh")
        assert.deepStrictEqual(calls.map((call) => call.provider).sort(), ["anthropic", "openai"])
        assert.isAtLeast(calls[1]?.startedAt ?? 0, calls[0]?.endedAt ?? Number.POSITIVE_INFINITY)
        assert.strictEqual(fakeSource.mostRefreshesInside(), 1)

        // Finished refreshes are not joined: the next one calls the provider again.
        yield* cache.RefreshToken({ provider: "anthropic" })
        assert.strictEqual(fakeSource.callsOf(org, "refresh").length, 3)
      })
  )

  it.effect("a failed refresh fails every caller that joined it", () =>
    Effect.gen(function* () {
      const org = freshOrg("refresh-fails")
      const gate = yield* Deferred.make<void>()
      fakeSource.setBefore(org, () => Effect.andThen(Deferred.await(gate), Effect.fail(failure(org, "anthropic"))))
      const cache = cacheOf(org)
      const marks = yield* markCounters
      const refreshes = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: 3 }), () => Effect.flip(cache.RefreshToken({ provider: "anthropic" })), {
          concurrency: "unbounded"
        })
      )
      yield* marks.until({ started: 1, refreshesJoined: 2 })
      yield* Deferred.succeed(gate, undefined)
      const errors = yield* Fiber.join(refreshes)
      assert.strictEqual(fakeSource.callsOf(org, "refresh").length, 1)
      for (const error of errors) {
        assert.deepStrictEqual(
          { tag: error._tag, organizationId: error.organizationId, provider: error.provider },
          { tag: "UsageLookupFailed", organizationId: org, provider: "anthropic" }
        )
      }
    })
  )

  it.effect("a token refresh drops the provider's cached usage, so the next lookup asks the provider", () =>
    Effect.gen(function* () {
      const org = freshOrg("invalidate")
      const cache = cacheOf(org)
      const before = yield* cache.Lookup({ provider: "anthropic" })
      const other = yield* cache.Lookup({ provider: "openai" })
      assert.deepStrictEqual(yield* cache.Lookup({ provider: "anthropic" }), before)
      assert.strictEqual(fakeSource.callsOf(org, "lookup").length, 2)

      yield* cache.RefreshToken({ provider: "anthropic" })
      const after = yield* cache.Lookup({ provider: "anthropic" })
      assert.notStrictEqual(after.figures.call, before.figures.call)
      assert.deepStrictEqual(yield* cache.Lookup({ provider: "openai" }), other, "another provider's entry stays")
      assert.deepStrictEqual(
        fakeSource.callsOf(org, "lookup").map((call) => call.provider),
        ["anthropic", "openai", "anthropic"]
      )
    })
  )

  it.effect("organizations do not share a cache entry", () =>
    Effect.gen(function* () {
      const one = freshOrg("one")
      const two = freshOrg("two")
      const first = yield* lookupUsage(one, "anthropic")
      const second = yield* lookupUsage(two, "anthropic")
      assert.strictEqual(first.figures.organization, one)
      assert.strictEqual(second.figures.organization, two)
      assert.notStrictEqual(first.figures.call, second.figures.call)
      assert.deepStrictEqual(yield* lookupUsage(one, "anthropic"), first)
      assert.strictEqual(fakeSource.callsOf(one, "lookup").length, 1)
      assert.strictEqual(fakeSource.callsOf(two, "lookup").length, 1)
    })
  )
})

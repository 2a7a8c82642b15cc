/**
 * Shard locks taken as soon as their last owner lets go (target: < 1 s after SIGTERM).
 *
 * Effect Cluster's acquisition loop asks `RunnerStorage.acquire` for every shard assigned to this
 * runner and then sleeps one second, whatever it got. A runner stopping gracefully leaves the
 * runner list first and then releases its shards one by one (two queries each on its lock
 * session: 150 shards take about 0.2 s here), so a survivor that sees the new assignments asks a
 * little too early, gets some or none, and waits that whole second for the rest: the Scheduler's
 * failover after a SIGTERM measured 0.27–1.34 s, the spread being that sleep.
 *
 * This wraps the SQL runner storage: an acquire that did not get every shard asks again for the
 * missing ones, every `spacing`. It stops at `window`, or earlier once it holds some shards and
 * asking has brought no new one for `quiet` — the shards it has cannot start their entities
 * until it returns, so a straggler still held by an entity that is slow to stop is left to the
 * next round rather than kept waiting for. A lock held for long (a live owner that is not
 * letting go) costs the loop at most one `window` per round and nothing else. Each retry asks only
 * for the shards this runner does not hold: the storage's advisory locks are re-entrant, so a
 * held one is never locked twice. The window stays well inside the loop's own timeout on
 * `acquire` (the lock refresh interval), so a retry is never cut off with a lock taken and not
 * reported.
 */
import { Duration, Effect, Layer } from "effect"
import { RunnerStorage, type ShardId } from "effect/cluster"

export interface PromptAcquisitionSettings {
  /** How long an acquire keeps asking for shards another runner still holds. */
  readonly window: Duration.Duration
  /** How long it waits between two asks. */
  readonly spacing: Duration.Duration
  /**
   * Once it holds some shards, how long it goes on asking without getting another: the shards it
   * has wait for the acquire to return (their entities start only then), so stragglers are left
   * to the next round once the releases have stopped coming.
   */
  readonly quiet: Duration.Duration
}

const retryMissing = (storage: RunnerStorage.RunnerStorage["Service"], settings: PromptAcquisitionSettings) => {
  const windowMillis = Duration.toMillis(settings.window)
  const quietMillis = Duration.toMillis(settings.quiet)
  // Untraced, as the SQL storage's own calls are: the acquisition loop runs every second on every
  // runner, and a span per round would be a trace a second of nothing.
  return Effect.fnUntraced(function* (
    address: Parameters<typeof storage.acquire>[0],
    shardIds: Iterable<ShardId.ShardId>
  ) {
    const wanted = Array.from(shardIds)
    const acquired = yield* storage.acquire(address, wanted)
    if (acquired.length >= wanted.length || windowMillis <= 0) return acquired
    const started = Date.now()
    let progressed = acquired.length > 0 ? started : undefined
    const held = new Set(acquired.map(String))
    let missing = wanted.filter((shardId) => !held.has(String(shardId)))
    while (missing.length > 0) {
      const now = Date.now()
      if (now - started >= windowMillis || (progressed !== undefined && now - progressed >= quietMillis)) break
      yield* Effect.sleep(settings.spacing)
      // A retry that fails must not lose the shards already locked: they are reported, and the
      // missing ones are left to the next round as without this wrapper.
      const more = yield* storage.acquire(address, missing).pipe(Effect.orElseSucceed((): Array<ShardId.ShardId> => []))
      if (more.length === 0) continue
      progressed = Date.now()
      acquired.push(...more)
      for (const shardId of more) held.add(String(shardId))
      missing = missing.filter((shardId) => !held.has(String(shardId)))
    }
    return acquired
  })
}

/** Wraps the `RunnerStorage` it is given (provide the SQL one beneath it). */
export const layerPromptShardAcquisition = (settings: PromptAcquisitionSettings) =>
  Layer.effect(
    RunnerStorage.RunnerStorage,
    Effect.gen(function* () {
      const storage = yield* RunnerStorage.RunnerStorage
      return RunnerStorage.RunnerStorage.of({ ...storage, acquire: retryMissing(storage, settings) })
    })
  )

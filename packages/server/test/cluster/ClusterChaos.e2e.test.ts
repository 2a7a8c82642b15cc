/**
 * Three runners under faults (the bounded version of `npm run bench:cluster`): three production
 * server processes on one Postgres and one Redis review pull requests that arrive as webhooks,
 * round robin, while the server running the Scheduler is SIGKILLed at a third of the reviews and
 * its successor SIGTERMed at two thirds (`@bosun/testing` ReviewCluster). Every run must finish
 * once, every pull request get exactly one review, every run's events match the runtime's own log,
 * and no two servers may ever have run the Scheduler at the same time. The failover times are
 * printed beside the targets.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { freshDatabase, redisMissingReason, redisUrl } from "@bosun/testing"
import { runReviewCluster } from "@bosun/testing/ReviewCluster"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"

const PRS = 45

describe.skipIf(redisUrl() === null)(`three runners under faults (${redisMissingReason()})`, () => {
  it.live(
    `${PRS} reviews from webhooks: a SIGKILL and a SIGTERM lose no run, no event and no review, publish nothing twice, and never run the Scheduler twice at once`,
    () =>
      Effect.gen(function* () {
        const database = yield* freshDatabase
        const root = yield* Effect.acquireRelease(
          Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bosun-chaos-"))),
          (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
        )
        const report = yield* runReviewCluster({
          root,
          databaseUrl: database.url,
          // A logical database of its own: the servers' queue and cache keys cannot meet another test's.
          redisUrl: `${redisUrl()}/9`,
          runners: 3,
          prs: PRS,
          rate: 6,
          reviewConcurrency: 8,
          shardLockExpiration: "5 seconds",
          chaos: true,
          timeoutMs: 180_000
        })

        assert.deepStrictEqual(report.undelivered, [], "every delivery was acknowledged by a live server")
        assert.lengthOf(report.runs, PRS, "one review run per pull request")
        assert.deepStrictEqual(
          report.runs.map((run) => run.number),
          Array.from({ length: PRS }, (_, i) => i + 1)
        )
        const wrong = report.runs.filter((run) => run.status !== "SUCCEEDED" || run.attempts !== 1 || run.reviews !== 1)
        assert.deepStrictEqual(wrong, [], "each run SUCCEEDED in one attempt and GitHub holds exactly one review")
        assert.deepStrictEqual(report.eventMismatches, [], "every run's events are the runtime's, none lost or doubled")
        assert.isAtLeast(report.events, PRS)

        assert.deepStrictEqual(report.schedulerOverlaps, [], "never two Schedulers at once")
        // The first runner to hold it, the one after the SIGKILL, the one after the SIGTERM.
        assert.isAtLeast(new Set(report.schedulerIntervals.map((interval) => interval.server)).size, 3)

        const kill = report.kill
        const term = report.term
        assert.isDefined(kill)
        assert.isDefined(term)
        console.log(
          [
            `cluster chaos: ${PRS} reviews on 3 runners in ${report.wallSeconds.toFixed(1)} s (${report.runsPerSecond.toFixed(2)} runs/s), ${report.events} events`,
            `  SIGKILL: the Scheduler ran again ${kill?.schedulerSeconds.toFixed(2)} s later (target < 10 s; shard lock 5 s); the last of ${kill?.inFlight} runs in flight finished ${kill?.inFlightSeconds.toFixed(1)} s later`,
            `  SIGTERM: the Scheduler ran again ${term?.schedulerSeconds.toFixed(2)} s later (target < 1 s); the process exited after ${term?.exitSeconds.toFixed(2)} s; the last of ${term?.inFlight} runs in flight finished ${term?.inFlightSeconds.toFixed(1)} s later`
          ].join("\n")
        )
        // Guards well above the targets, so a slow spell of the machine does not fail the suite;
        // the figures themselves are printed and recorded by `npm run bench:cluster`.
        assert.isBelow(kill?.schedulerSeconds ?? Number.NaN, 20)
        assert.isBelow(term?.schedulerSeconds ?? Number.NaN, 10)
        assert.strictEqual(report.termExitCode, 0, "the SIGTERMed server stopped gracefully")
      }),
    { timeout: 360_000 }
  )
})

/**
 * `npm run bench:cluster`: several runners for real, measured and broken.
 *
 * 1. **Throughput on 1, 2 and 3 runners.** BENCH_CLUSTER_PRS pull requests (default 90) reviewed
 *    from webhooks by 1, then 2, then 3 production server processes (`@bosun/testing`
 *    ReviewCluster: role `all`, socket transport, one Postgres, one Redis, the real runtime with a
 *    CUSTOM review profile that writes a fixed review at once), each count on a fresh database.
 *    Deliveries go out at BENCH_CLUSTER_RATE per second (default 30, open loop, more than this
 *    machine can review, so the figure is capacity): runs/s from the first delivery to the last
 *    review run's end. Each server's REVIEW lane is BENCH_CLUSTER_CONCURRENCY (default 8).
 *    Baseline, in the same run: the runtime alone doing the same runs (`POST /v1/runs` with the
 *    same profile and checkout, tail to the end), BENCH_CLUSTER_CONCURRENCY at a time, no control
 *    plane: runs/s.
 * 2. **The chaos test in full.** BENCH_CLUSTER_CHAOS_PRS (default 300) reviews at
 *    BENCH_CLUSTER_CHAOS_RATE per second (default 6) on 3 runners; the server running the
 *    Scheduler is SIGKILLed at a third of the reviews and its successor SIGTERMed at two thirds.
 *    Every run must finish once with one review on GitHub, every run's events must equal the
 *    runtime's log, and no two servers may have run the Scheduler at once: a violation is printed
 *    and exits 1. Failover times are printed beside their targets (< 10 s after SIGKILL with
 *    BOSUN_SHARD_LOCK_EXPIRATION 5 s, < 1 s after SIGTERM); targets are never an exit code.
 *
 * Needs DATABASE_URL (else an embedded Postgres per phase) and REDIS_URL (its logical database 10
 * is flushed before and after each phase). Figures go to `.bench/cluster.json`.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type ReviewClusterReport, runReviewCluster } from "@bosun/testing/ReviewCluster"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Redacted, References } from "effect"
import { benchDatabase } from "./BenchDatabase.ts"
import { runContext, writeReport } from "./Report.ts"
import { SERVER_NODE_FLAGS } from "./ServerFlags.ts"

const settings = {
  prs: Number(process.env.BENCH_CLUSTER_PRS ?? 90),
  rate: Number(process.env.BENCH_CLUSTER_RATE ?? 30),
  concurrency: Number(process.env.BENCH_CLUSTER_CONCURRENCY ?? 8),
  chaosPrs: Number(process.env.BENCH_CLUSTER_CHAOS_PRS ?? 300),
  chaosRate: Number(process.env.BENCH_CLUSTER_CHAOS_RATE ?? 6),
  shardLockExpiration: "5 seconds"
}
const targets = { killSeconds: 10, termSeconds: 1 }

const redisBase = process.env.REDIS_URL
if (redisBase === undefined || redisBase === "") {
  process.stderr.write("bench:cluster needs REDIS_URL (the runners share their queues and cache there)\n")
  process.exit(2)
}
const redisUrl = `${redisBase.replace(/\/\d*$/, "")}/10`

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits
const log = (line: string) => process.stdout.write(`${line}\n`)

/** One phase on a fresh database and directory, everything removed after. */
const phase = (
  label: string,
  options: {
    readonly runners: number
    readonly prs: number
    readonly rate: number
    readonly chaos: boolean
    readonly direct?: { readonly runs: number; readonly concurrency: number }
  }
) =>
  Effect.gen(function* () {
    log(`\n${label}`)
    const scope = yield* Effect.scope
    const db = yield* benchDatabase(scope, { maxConnections: 2 }).pipe(
      Effect.provideService(References.MinimumLogLevel, "Warn")
    )
    yield* Effect.addFinalizer(() => db.drop)
    const configured = Context.get(db.context, PgClient.PgClient).config.url
    const databaseUrl = configured === undefined ? "" : Redacted.value(configured)
    const root = yield* Effect.acquireRelease(
      Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "bosun-bench-cluster-"))),
      (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
    )
    return yield* runReviewCluster({
      root,
      databaseUrl,
      redisUrl,
      runners: options.runners,
      prs: options.prs,
      rate: options.rate,
      reviewConcurrency: settings.concurrency,
      shardLockExpiration: settings.shardLockExpiration,
      chaos: options.chaos,
      nodeFlags: SERVER_NODE_FLAGS,
      timeoutMs: Math.max(300_000, options.prs * 5_000),
      progress: (line) => log(`  ${line}`),
      ...(options.direct === undefined ? {} : { direct: options.direct })
    })
  }).pipe(Effect.scoped)

/** What must hold after any phase: the correctness half of the chaos test. */
const violations = (report: ReviewClusterReport, prs: number) => {
  const found: Array<string> = []
  if (report.undelivered.length > 0) found.push(`undelivered: ${report.undelivered.join(", ")}`)
  if (report.runs.length !== prs) found.push(`${report.runs.length} review runs for ${prs} pull requests`)
  for (const run of report.runs) {
    if (run.status !== "SUCCEEDED" || run.attempts !== 1 || run.reviews !== 1) {
      found.push(
        `#${run.number}: ${run.status}, ${run.attempts} attempts, ${run.reviews} reviews${run.error === null ? "" : ` (${run.error})`}`
      )
    }
  }
  for (const mismatch of report.eventMismatches) found.push(`#${mismatch.number} events: ${mismatch.problem}`)
  for (const [a, b] of report.schedulerOverlaps) {
    found.push(`Scheduler on servers ${a.server} and ${b.server} at once (${a.start}–${a.end ?? "…"} / ${b.start})`)
  }
  return found
}

const main = Effect.gen(function* () {
  log(
    `bench:cluster — ${settings.prs} reviews per runner count at ${settings.rate}/s, REVIEW lane ${settings.concurrency} per server; chaos: ${settings.chaosPrs} reviews at ${settings.chaosRate}/s on 3 runners`
  )
  const throughput: Array<{ runners: number; runsPerSecond: number; seconds: number; violations: Array<string> }> = []
  let direct: ReviewClusterReport["direct"]
  for (const runners of [1, 2, 3]) {
    const report = yield* phase(`throughput, ${runners} runner${runners === 1 ? "" : "s"}`, {
      runners,
      prs: settings.prs,
      rate: settings.rate,
      chaos: false,
      ...(runners === 1 ? { direct: { runs: settings.prs, concurrency: settings.concurrency } } : {})
    })
    if (runners === 1) direct = report.direct
    throughput.push({
      runners,
      runsPerSecond: round(report.runsPerSecond),
      seconds: round(report.wallSeconds, 1),
      violations: violations(report, settings.prs)
    })
  }
  const chaos = yield* phase("chaos, 3 runners", {
    runners: 3,
    prs: settings.chaosPrs,
    rate: settings.chaosRate,
    chaos: true
  })
  const chaosViolations = violations(chaos, settings.chaosPrs)
  if (chaos.termExitCode !== 0) chaosViolations.push(`the SIGTERMed server exited with ${chaos.termExitCode}`)

  log("\nthroughput (reviews from webhooks to the last run's end)")
  for (const row of throughput) {
    log(`  ${row.runners} runner${row.runners === 1 ? " " : "s"}: ${row.runsPerSecond} runs/s (${row.seconds} s)`)
  }
  log(
    `  baseline, the runtime alone (same runs, ${settings.concurrency} at a time, no control plane): ${round(direct?.runsPerSecond ?? Number.NaN)} runs/s`
  )
  const kill = chaos.kill
  const term = chaos.term
  log(
    `\nchaos: ${settings.chaosPrs} reviews on 3 runners, ${round(chaos.runsPerSecond)} runs/s, ${chaos.events} events`
  )
  log(
    `  SIGKILL → Scheduler on another runner: ${round(kill?.schedulerSeconds ?? Number.NaN)} s (target < ${targets.killSeconds} s) ${(kill?.schedulerSeconds ?? Number.POSITIVE_INFINITY) < targets.killSeconds ? "PASS" : "MISS"}; last of ${kill?.inFlight} runs in flight finished ${round(kill?.inFlightSeconds ?? Number.NaN, 1)} s later`
  )
  log(
    `  SIGTERM → Scheduler on another runner: ${round(term?.schedulerSeconds ?? Number.NaN)} s (target < ${targets.termSeconds} s) ${(term?.schedulerSeconds ?? Number.POSITIVE_INFINITY) < targets.termSeconds ? "PASS" : "MISS"}; exited after ${round(term?.exitSeconds ?? Number.NaN)} s; last of ${term?.inFlight} runs in flight finished ${round(term?.inFlightSeconds ?? Number.NaN, 1)} s later`
  )
  const allViolations = [...throughput.flatMap((row) => row.violations), ...chaosViolations]
  log(
    allViolations.length === 0
      ? "  every run once, one review each, no event lost, never two Schedulers at once: PASS"
      : `  VIOLATIONS:\n${allViolations.map((line) => `    ${line}`).join("\n")}`
  )
  yield* Effect.promise(() =>
    writeReport("cluster", {
      ...runContext("cluster"),
      settings,
      targets,
      throughput,
      baseline: direct,
      chaos: {
        runsPerSecond: round(chaos.runsPerSecond),
        seconds: round(chaos.wallSeconds, 1),
        events: chaos.events,
        kill,
        term,
        schedulerIntervals: chaos.schedulerIntervals.length,
        violations: chaosViolations
      }
    })
  )
  if (allViolations.length > 0) process.exitCode = 1
})

Effect.runPromise(main).catch((error: unknown) => {
  process.stderr.write(
    `bench:cluster failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`
  )
  process.exitCode = 1
})

/**
 * Recurring deep scans: a repository's five-field cron expression (UTC), and the cluster cron that
 * launches what is due. The cron (`ClusterCron` "DeepScanSchedules", every minute) runs on exactly
 * one runner of the cluster; each due occurrence is claimed with its row locked
 * (`DeepScanSchedulesRepo.claim`, SKIP LOCKED) and, in that same transaction, launches one scan at
 * the default branch's head — as `POST .../deep-scans` does, joining a scan of that head that has
 * not finished — and moves the schedule to its next occurrence, recording the scan and run it
 * started. A launch that cannot be made (the repository is gone or unreachable, GitHub answers no
 * head) is recorded as the schedule's `last_error` and the schedule still moves on: a broken
 * occurrence does not repeat every minute. Occurrences missed while no runner was up collapse into
 * one.
 */
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { Cron, Effect, Option, Result } from "effect"
import { ClusterCron } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { GitHubApp } from "../../outbound/github/GitHubApp.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import { DeepScanSchedulesRepo, type DueSchedule } from "./DeepScanSchedulesRepo.ts"
import { DeepScansRepo } from "./DeepScansRepo.ts"

/** How many due schedules one tick launches; the rest wait for the next minute. */
const BATCH = 50

/** A five-field cron expression (minute hour day-of-month month day-of-week) in UTC, or why it is not one. */
export const parseSchedule = (expression: string): Result.Result<Cron.Cron, string> => {
  if (expression.trim().split(/\s+/).length !== 5) {
    return Result.fail("a deep-scan schedule is five cron fields: minute hour day-of-month month day-of-week (UTC)")
  }
  return Result.mapError(Cron.parse(expression, "UTC"), (error) => error.message)
}

/** The first occurrence of `cron` after `after`. */
export const nextOccurrence = (cron: Cron.Cron, after: Date): Date => Cron.next(cron, after)

/** Launches every schedule due now (one scan per occurrence); answers how many scans it started. */
export const launchDueScans = Effect.gen(function* () {
  const schedules = yield* DeepScanSchedulesRepo
  const scans = yield* DeepScansRepo
  const repositories = yield* RepositoriesRepo
  const github = yield* GitHubApp
  const sql = yield* SqlClient.SqlClient

  const launchOne = (due: DueSchedule) =>
    Effect.gen(function* () {
      const found = yield* repositories.find(due.organizationId, due.repositoryId)
      // The head is asked for before the transaction: no row stays locked on a GitHub call.
      const head: Result.Result<{ readonly sha: string; readonly branch: string }, string> =
        Option.isNone(found) || !found.value.available
          ? Result.fail("The GitHub App no longer reaches this repository")
          : yield* github.branchHead(due.organizationId, found.value, found.value.default_branch).pipe(
              Effect.map((sha) => Result.succeed({ sha, branch: found.value.default_branch })),
              Effect.catch((error) => Effect.succeed(Result.fail(error.message)))
            )
      return yield* sql.withTransaction(
        Effect.gen(function* () {
          const claimed = yield* schedules.claim(due)
          if (Option.isNone(claimed)) return false
          const parsed = parseSchedule(claimed.value.cron)
          const now = new Date()
          // An expression that no longer parses (written before a stricter check) waits a day, with why.
          const nextRunAt = Result.isSuccess(parsed)
            ? nextOccurrence(parsed.success, now)
            : new Date(now.getTime() + 86_400_000)
          if (Result.isFailure(parsed) || Result.isFailure(head)) {
            const error = Result.isFailure(parsed) ? parsed.failure : Result.isFailure(head) ? head.failure : ""
            yield* schedules.advance(claimed.value, { nextRunAt, deepScanId: null, runId: null, error })
            return false
          }
          const unfinished = yield* scans.findUnfinished(due.organizationId, due.repositoryId, head.success.sha)
          if (Option.isSome(unfinished)) {
            yield* schedules.advance(claimed.value, {
              nextRunAt,
              deepScanId: unfinished.value.id,
              runId: null,
              error: null
            })
            return false
          }
          const created = yield* scans.create(due.organizationId, {
            repositoryId: due.repositoryId,
            defaultBranch: head.success.branch,
            headSha: head.success.sha,
            requestedBy: null
          })
          yield* schedules.advance(claimed.value, {
            nextRunAt,
            deepScanId: created.id,
            runId: created.runId,
            error: null
          })
          yield* Effect.logInfo("deep_scan_scheduled").pipe(
            Effect.annotateLogs({
              org_id: due.organizationId,
              repository_id: due.repositoryId,
              deep_scan_id: created.id,
              run_id: created.runId
            })
          )
          return true
        })
      )
    }).pipe(Effect.orDie)

  const launched = yield* Effect.forEach(yield* schedules.due(BATCH), launchOne)
  const count = launched.filter(Boolean).length
  if (count > 0) yield* wakeScheduler
  return count
})

/** The cluster's cron: every minute, on one runner, the due schedules are launched. */
export const DeepScanCronLive = ClusterCron.make({
  name: "DeepScanSchedules",
  cron: Cron.parseUnsafe("* * * * *", "UTC"),
  execute: launchDueScans.pipe(
    Effect.asVoid,
    Effect.catchCause((cause) => Effect.logWarning("deep_scan_schedules_failed", cause))
  )
})

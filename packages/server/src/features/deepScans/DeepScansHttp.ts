/**
 * `GET .../deep-scans`, `GET .../deep-scans/{deep_scan_id}` and `POST .../deep-scans`
 * (docs/interface.md: Organization endpoints). Any member may list and launch. A launch asks
 * GitHub, as the organization's App, for the head of the repository's default branch and pins the
 * scan to it; a second launch at the same head while the first has not finished answers the first's
 * id rather than paying for the same audit twice. Launches are audited.
 *
 * Findings: any member may list them and decide a pending one; a decision is audited
 * (`deep_scan.finding.accept` / `.reject`, with the reason code) and answered with the finding.
 * A member may ask for the scan's fix work item (`FixWorkItem`), audited as `deep_scan.fix`.
 * Launches and fixes wake the Scheduler after their commit.
 *
 * Schedules: members read a repository's recurring deep scan; ADMINs set its cron
 * expression (400 `invalid_cron` for one that is not five fields, nothing written) or remove it,
 * both audited (`deep_scan.schedule.set` / `.remove`). `DeepScanSchedules` launches what is due.
 */
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import {
  BadGateway,
  BadRequest,
  BosunApi,
  Conflict,
  CurrentUser,
  DEFAULT_DEEP_SCAN_PAGE_SIZE,
  type DeepScanLaunch,
  type DeepScanScheduleInput,
  ErrorCodes,
  type FindingDecisionInput,
  NotFound
} from "@bosun/domain"
import { Effect, Option, Result } from "effect"
import { Sharding } from "effect/cluster"
import { GitHubApp } from "../../outbound/github/GitHubApp.ts"
import type { GitHubAppError } from "../../outbound/github/GitHubClient.ts"
import { AuditLog } from "../../platform/db/AuditLog.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { RepositoriesRepo } from "../repositories/index.ts"
import { DeepScanFindingsRepo } from "./DeepScanFindingsRepo.ts"
import { nextOccurrence, parseSchedule } from "./DeepScanSchedules.ts"
import { DeepScanSchedulesRepo } from "./DeepScanSchedulesRepo.ts"
import { DeepScansRepo } from "./DeepScansRepo.ts"
import { makeFixWorkItems } from "./FixWorkItem.ts"

const repositoryNotFound = NotFound.fromCode(ErrorCodes.notFound, "No repository has this id in this organization")
const scheduleNotFound = NotFound.fromCode(ErrorCodes.notFound, "This repository has no deep-scan schedule")
const scanNotFound = NotFound.fromCode(ErrorCodes.notFound, "No deep scan has this id in this organization")

/** GitHub's answer, as the launch's client sees it. */
const toHttp = (error: GitHubAppError) => {
  switch (error.reason) {
    case "NotConfigured":
      return Conflict.fromCode(ErrorCodes.githubAppUnconfigured, error.message)
    case "NotInstalled":
      return Conflict.fromCode(ErrorCodes.githubAppNotInstalled, error.message)
    case "NotFound":
      return Conflict.fromCode(ErrorCodes.defaultBranchNotFound, error.message)
    case "Refused":
    case "RateLimited":
    case "Unavailable":
      return BadGateway.fromCode(ErrorCodes.githubUnavailable, error.message)
  }
}

type OrgParams = { readonly organization_id: string }
type RepositoryParams = OrgParams & { readonly repository_id: string }
type ScanParams = OrgParams & { readonly deep_scan_id: string }
type FindingParams = ScanParams & { readonly finding_id: string }
type ListQuery = { readonly repository_id?: string | undefined; readonly page_size?: number | undefined }
type ScheduleBody = typeof DeepScanScheduleInput.Type

/** The services the handlers use, read once when the group is built (see `group`). */
const deepScanServices = Effect.gen(function* () {
  const access = yield* OrgAccess
  const scans = yield* DeepScansRepo
  const repositories = yield* RepositoriesRepo
  const github = yield* GitHubApp
  const audit = yield* AuditLog
  const findings = yield* DeepScanFindingsRepo
  const createFix = yield* makeFixWorkItems
  const schedules = yield* DeepScanSchedulesRepo
  const repositoryOf = (organizationId: string, repositoryId: string) =>
    Effect.flatMap(repositories.find(organizationId, repositoryId), (found) =>
      Option.isSome(found) ? Effect.succeed(found.value) : Effect.fail(repositoryNotFound)
    )
  const wake = Effect.provideService(wakeScheduler, Sharding.Sharding, yield* Sharding.Sharding)
  return { access, scans, repositories, github, audit, findings, createFix, schedules, repositoryOf, wake }
})

type DeepScanServices = Effect.Success<typeof deepScanServices>

/** A repository's recurring deep scan: read by members, set and removed by ADMINs. */
const scheduleHandlers = ({ access, audit, schedules, repositoryOf }: DeepScanServices) => ({
  schedule: ({ params }: { readonly params: RepositoryParams }) =>
    Effect.gen(function* () {
      yield* access.member(params.organization_id)
      yield* repositoryOf(params.organization_id, params.repository_id)
      const schedule = yield* schedules.find(params.organization_id, params.repository_id)
      if (Option.isNone(schedule)) return yield* scheduleNotFound
      return { data: schedule.value }
    }),
  setSchedule: ({ params, payload }: { readonly params: RepositoryParams; readonly payload: ScheduleBody }) =>
    Effect.gen(function* () {
      yield* access.require(params.organization_id, "ADMIN")
      const user = yield* CurrentUser
      const repository = yield* repositoryOf(params.organization_id, params.repository_id)
      const cron = payload.cron.trim().replace(/\s+/g, " ")
      const parsed = parseSchedule(cron)
      if (Result.isFailure(parsed)) {
        return yield* BadRequest.fromCode(ErrorCodes.invalidCron, `The cron expression is invalid: ${parsed.failure}`)
      }
      const saved = yield* audit.audited(
        schedules
          .put(params.organization_id, repository.id, {
            cron,
            nextRunAt: nextOccurrence(parsed.success, new Date()),
            userId: user.userId
          })
          .pipe(Effect.map(Option.some)),
        () => ({
          organizationId: params.organization_id,
          actor: { kind: "user", userId: user.userId },
          action: "deep_scan.schedule.set",
          target: `repository:${repository.id}`,
          details: { cron }
        })
      )
      if (Option.isNone(saved)) return yield* Effect.die(new Error("the schedule was not written"))
      return { data: saved.value }
    }),
  removeSchedule: ({ params }: { readonly params: RepositoryParams }) =>
    Effect.gen(function* () {
      yield* access.require(params.organization_id, "ADMIN")
      const user = yield* CurrentUser
      const repository = yield* repositoryOf(params.organization_id, params.repository_id)
      const removed = yield* audit.audited(
        Effect.map(schedules.remove(params.organization_id, repository.id), (done) =>
          done ? Option.some(done) : Option.none()
        ),
        () => ({
          organizationId: params.organization_id,
          actor: { kind: "user", userId: user.userId },
          action: "deep_scan.schedule.remove",
          target: `repository:${repository.id}`
        })
      )
      if (Option.isNone(removed)) return yield* scheduleNotFound
    })
})

/** A scan's findings, the decisions on them, and the fix work item made from the accepted ones. */
const findingHandlers = ({ access, scans, audit, findings, createFix, wake }: DeepScanServices) => ({
  fix: ({ params }: { readonly params: ScanParams }) =>
    Effect.gen(function* () {
      yield* access.member(params.organization_id)
      const user = yield* CurrentUser
      const created = yield* audit.audited(
        Effect.map(createFix(params.organization_id, params.deep_scan_id), Option.some),
        (outcome) =>
          outcome._tag === "Created"
            ? {
                organizationId: params.organization_id,
                actor: { kind: "user", userId: user.userId },
                action: "deep_scan.fix",
                target: `deep_scan:${params.deep_scan_id}`,
                details: { work_item_id: outcome.workItemId, findings: outcome.findings }
              }
            : undefined
      )
      const outcome = Option.getOrThrow(created)
      switch (outcome._tag) {
        case "NotFound":
          return yield* scanNotFound
        case "NothingAccepted":
          return yield* Conflict.fromCode(
            ErrorCodes.noAcceptedFindings,
            "Accept at least one finding of this scan before asking for its fix"
          )
        case "RepositoryUnavailable":
          return yield* Conflict.fromCode(
            ErrorCodes.repositoryUnavailable,
            "The GitHub App no longer reaches this repository"
          )
        case "Exists":
          return { data: { work_item_id: outcome.workItemId, created: false } }
        case "Created":
          yield* wake
          return { data: { work_item_id: outcome.workItemId, created: true } }
      }
    }),
  findings: ({ params }: { readonly params: ScanParams }) =>
    Effect.gen(function* () {
      yield* access.member(params.organization_id)
      const scan = yield* scans.find(params.organization_id, params.deep_scan_id)
      if (Option.isNone(scan)) return yield* scanNotFound
      return { data: yield* findings.list(params.organization_id, params.deep_scan_id) }
    }),
  decideFinding: ({ params, payload }: { readonly params: FindingParams; readonly payload: FindingDecisionInput }) =>
    Effect.gen(function* () {
      yield* access.member(params.organization_id)
      const user = yield* CurrentUser
      // The decision and its audit row commit together; nothing is audited when nothing was decided.
      const decided = yield* audit.audited(
        Effect.map(
          findings.decide(params.organization_id, params.deep_scan_id, params.finding_id, payload, user.userId),
          (outcome) => (outcome._tag === "Decided" ? Option.some(outcome.finding) : Option.none())
        ),
        () => ({
          organizationId: params.organization_id,
          actor: { kind: "user", userId: user.userId },
          action: `deep_scan.finding.${payload.decision}`,
          target: `deep_scan_finding:${params.finding_id}`,
          details: { deep_scan_id: params.deep_scan_id, reason: payload.reason ?? null }
        })
      )
      if (Option.isSome(decided)) return { data: decided.value }
      const current = yield* findings.decisionOf(params.organization_id, params.deep_scan_id, params.finding_id)
      if (Option.isNone(current)) {
        return yield* NotFound.fromCode(ErrorCodes.notFound, "No finding has this id in this deep scan")
      }
      return yield* Conflict.fromCode(
        ErrorCodes.findingAlreadyDecided,
        `The finding was ${current.value.toLowerCase()} already`
      )
    })
})

/** The scans themselves: the list, one scan, and a launch at the default branch's head. */
const scanHandlers = ({ access, scans, repositories, github, audit, wake }: DeepScanServices) => ({
  list: ({ params, query }: { readonly params: OrgParams; readonly query: ListQuery }) =>
    Effect.gen(function* () {
      yield* access.member(params.organization_id)
      const data = yield* scans.list(params.organization_id, {
        repositoryId: query.repository_id,
        limit: query.page_size ?? DEFAULT_DEEP_SCAN_PAGE_SIZE
      })
      return { data }
    }),
  get: ({ params }: { readonly params: ScanParams }) =>
    Effect.gen(function* () {
      yield* access.member(params.organization_id)
      const scan = yield* scans.find(params.organization_id, params.deep_scan_id)
      if (Option.isNone(scan)) return yield* scanNotFound
      return { data: scan.value }
    }),
  launch: ({ params, payload }: { readonly params: OrgParams; readonly payload: typeof DeepScanLaunch.Type }) =>
    Effect.gen(function* () {
      yield* access.member(params.organization_id)
      const user = yield* CurrentUser
      const found = yield* repositories.find(params.organization_id, payload.repository_id)
      if (Option.isNone(found)) return yield* repositoryNotFound
      const repository = found.value
      if (!repository.available) {
        return yield* Conflict.fromCode(
          ErrorCodes.repositoryUnavailable,
          "The GitHub App no longer reaches this repository"
        )
      }
      const headSha = yield* github
        .branchHead(params.organization_id, repository, repository.default_branch)
        .pipe(Effect.mapError(toHttp))
      const unfinished = yield* scans.findUnfinished(params.organization_id, repository.id, headSha)
      if (Option.isSome(unfinished)) return { data: { id: unfinished.value.id } }
      const created = yield* audit.audited(
        scans
          .create(params.organization_id, {
            repositoryId: repository.id,
            defaultBranch: repository.default_branch,
            headSha,
            requestedBy: user.userId
          })
          .pipe(Effect.map(Option.some)),
        (scan) => ({
          organizationId: params.organization_id,
          actor: { kind: "user", userId: user.userId },
          action: "deep_scan.launch",
          target: `deep_scan:${scan.id}`,
          details: { repository_id: repository.id, head_sha: headSha }
        })
      )
      if (Option.isNone(created)) return yield* Effect.die(new Error("deep scan launch wrote nothing"))
      yield* wake
      return { data: { id: created.value.id } }
    })
})

export const DeepScansHttp = group(
  BosunApi,
  "deepScans",
  Effect.fn(function* (handlers) {
    const services = yield* deepScanServices
    const scheduleRoutes = scheduleHandlers(services)
    const findingRoutes = findingHandlers(services)
    const scanRoutes = scanHandlers(services)
    return handlers
      .handle("schedule", scheduleRoutes.schedule)
      .handle("setSchedule", scheduleRoutes.setSchedule)
      .handle("removeSchedule", scheduleRoutes.removeSchedule)
      .handle("fix", findingRoutes.fix)
      .handle("findings", findingRoutes.findings)
      .handle("decideFinding", findingRoutes.decideFinding)
      .handle("list", scanRoutes.list)
      .handle("get", scanRoutes.get)
      .handle("launch", scanRoutes.launch)
  })
)

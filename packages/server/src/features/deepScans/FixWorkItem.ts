/**
 * One fix work item per deep scan: accepting findings can create one fix work item
 * (`fix_work_item_id`) whose run opens a pull request fixing them. The accepted findings are the
 * human decision, so the item is created ready to implement: kind BUG, source API, its plan the
 * accepted findings with their evidence and proposed fixes, on the scan's repository; its implement
 * run (the work items' own, which opens the pull request) is queued in the same transaction that
 * writes the item and links it to the scan. A second request answers the item already made; a scan
 * with no accepted finding has nothing to fix.
 */
import type { DeepScanFinding } from "@bosun/domain"
import { Effect, Option } from "effect"
import { SqlClient } from "effect/sql"
import { RepositoriesRepo } from "../repositories/index.ts"
import { WorkItemRuns, WorkItemsRepo } from "../workItems/index.ts"
import { DeepScanFindingsRepo } from "./DeepScanFindingsRepo.ts"

export type FixOutcome =
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "NothingAccepted" }
  | { readonly _tag: "RepositoryUnavailable" }
  | { readonly _tag: "Exists"; readonly workItemId: string }
  | { readonly _tag: "Created"; readonly workItemId: string; readonly findings: number }

/** The plan the implement run follows: every accepted finding, worst first, with what to change. */
export const fixPlan = (findings: ReadonlyArray<DeepScanFinding>) =>
  findings
    .map((finding, index) =>
      [
        `### ${index + 1}. ${finding.severity}: ${finding.title}`,
        `\`${finding.path}\` lines ${finding.start_line}-${finding.end_line}, in \`${finding.symbol}\`${
          finding.cwe === null ? "" : ` (${finding.cwe})`
        }${finding.verification.status === "VERIFIED" ? "; reproduced by the scan" : ""}.`,
        `Evidence:\n${finding.evidence.map((step) => `- \`${step.path}:${step.line}\`: ${step.note}`).join("\n")}`,
        `Fix:\n${finding.proposed_fix}`
      ].join("\n\n")
    )
    .join("\n\n")

export const makeFixWorkItems = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const findings = yield* DeepScanFindingsRepo
  const repositories = yield* RepositoriesRepo
  const workItems = yield* WorkItemsRepo
  const workItemRuns = yield* WorkItemRuns

  return (organizationId: string, deepScanId: string) =>
    sql
      .withTransaction(
        Effect.gen(function* () {
          // Locked: two requests at once make one item.
          const [scan] = yield* sql<{ repository_id: string; fix_work_item_id: string | null }>`
            SELECT repository_id, fix_work_item_id FROM deep_scans
            WHERE organization_id = ${organizationId} AND id = ${deepScanId} FOR UPDATE`
          if (scan === undefined) return { _tag: "NotFound" } as FixOutcome
          if (scan.fix_work_item_id !== null) return { _tag: "Exists", workItemId: scan.fix_work_item_id } as FixOutcome
          const accepted = (yield* findings.list(organizationId, deepScanId)).filter(
            (finding) => finding.decision === "ACCEPTED"
          )
          if (accepted.length === 0) return { _tag: "NothingAccepted" } as FixOutcome
          const repository = yield* repositories.find(organizationId, scan.repository_id)
          if (Option.isNone(repository) || !repository.value.available) {
            return { _tag: "RepositoryUnavailable" } as FixOutcome
          }
          const name = `${repository.value.owner}/${repository.value.name}`
          const title =
            accepted.length === 1
              ? `Fix ${accepted[0]?.title ?? "a deep-scan finding"}`
              : `Fix ${accepted.length} deep-scan findings in ${name}`
          const sessionKey = `deep-scan-fix:${deepScanId}`
          const item = yield* workItems.create(organizationId, {
            kind: "BUG",
            source: "API",
            title: title.slice(0, 200),
            summary: `Accepted findings of deep scan ${deepScanId} of ${name}.`,
            primaryRepositoryId: repository.value.id,
            state: "IN_PROGRESS",
            phase: "IMPLEMENTING",
            sessionKey,
            plan: { repository: name, title: title.slice(0, 200), plan: fixPlan(accepted) }
          })
          yield* sql`
            UPDATE deep_scans SET fix_work_item_id = ${item.id}, updated_at = now()
            WHERE organization_id = ${organizationId} AND id = ${deepScanId}`
          yield* workItemRuns.enqueueImplement(organizationId, {
            id: item.id,
            sessionKey,
            primaryRepositoryId: repository.value.id
          })
          return { _tag: "Created", workItemId: item.id, findings: accepted.length } as FixOutcome
        })
      )
      .pipe(Effect.orDie)
})

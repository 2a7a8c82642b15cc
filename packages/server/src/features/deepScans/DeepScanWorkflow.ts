/**
 * The run of a deep scan (docs/interface.md: Resources "Deep scan", egress tier DEEP_SCAN): a
 * `deep_scan` RunAttemptWorkflow on the AGENT lane, queued with the scan, one at a time per
 * repository (session `deep-scan:{repository}`).
 *
 * - prepare: a checkout of the default branch at the scan's pinned head SHA, the audit
 *   instructions and the output contract (`DeepScanOutput`), the repository's suppressions (so
 *   the agent does not spend time on what the team already ruled on), the team's approved
 *   memories, the approved secondary repositories read-only, the agent's credentials as
 *   work-item runs have them, on the DEEP_SCAN egress tier and a standard-4 sandbox.
 * - publish: `outputs/deep-scan.json` decoded with the domain contract; each finding gets Bosun's
 *   fingerprint, suppressed fingerprints are dropped (and counted), and HIGH/CRITICAL findings are
 *   judged against the run's own `changes.diff` (`FindingVerification`); the result is recorded
 *   once (`DeepScanFindingsRepo.record`). The scan's status, model and error are the run's.
 */
import type { WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import { CHANGES_PATH, DEEP_SCAN_OUTPUT_PATH, DeepScanOutput } from "@bosun/domain"
import { Effect, Option, Result, Schema } from "effect"
import { RepositoriesRepo } from "../repositories/index.ts"
import { CHECKOUT, fail, fullName, makeWorkItemRunSetup, parseChanges, workItemAttempt } from "../workItems/index.ts"
import { DeepScanFindingsRepo, type NewFinding } from "./DeepScanFindingsRepo.ts"
import { DEEP_SCAN_INSTRUCTIONS, deepScanPrompt } from "./DeepScanInstructions.ts"
import { DEEP_SCAN, DeepScansRepo } from "./DeepScansRepo.ts"
import { fingerprintOf, judge } from "./FindingVerification.ts"

const DEEP_SCAN_TIME_LIMIT_SECONDS = 3600

const decodeOutput = Schema.decodeUnknownEffect(Schema.fromJsonString(DeepScanOutput))

export const deepScanWorkflow = Effect.gen(function* () {
  const scans = yield* DeepScansRepo
  const findings = yield* DeepScanFindingsRepo
  const repositories = yield* RepositoriesRepo
  const { agentOf, checkoutOf, withConventions, withSecondaryRepositories } = yield* makeWorkItemRunSetup

  const scanOf = (run: { readonly organizationId: string; readonly runId: string }) =>
    Effect.gen(function* () {
      const scan = yield* scans.forRun(run.organizationId, run.runId)
      if (Option.isNone(scan)) return yield* fail("deep_scan_missing", "The deep scan of this run no longer exists")
      const repository = yield* repositories.find(run.organizationId, scan.value.repositoryId)
      if (Option.isNone(repository)) {
        return yield* fail("repository_missing", "The scanned repository is no longer connected")
      }
      return { scan: scan.value, repository: repository.value }
    })

  const type: WorkflowType = {
    lane: "AGENT",
    outputs: [DEEP_SCAN_OUTPUT_PATH, CHANGES_PATH],
    prepare: (run) =>
      Effect.gen(function* () {
        const { scan, repository } = yield* scanOf(run)
        const { configuration, credentials, settings } = yield* agentOf(run)
        const checkout = yield* checkoutOf(run.organizationId, repository, scan.headSha)
        const suppressed = yield* findings.suppressions(run.organizationId, repository.id)
        const attempt = yield* withSecondaryRepositories(
          run.organizationId,
          configuration,
          workItemAttempt(settings, run, {
            prompt: deepScanPrompt({
              repository: fullName(repository),
              headSha: scan.headSha,
              checkout: CHECKOUT,
              suppressed
            }),
            instructions: yield* withConventions(run, DEEP_SCAN_INSTRUCTIONS),
            repositories: [checkout],
            time_limit_seconds: DEEP_SCAN_TIME_LIMIT_SECONDS,
            provider_credentials: credentials
          })
        )
        return {
          ...attempt,
          request: { ...attempt.request, egress_tier: "DEEP_SCAN" as const },
          sandbox: { ...attempt.sandbox, instanceClass: "standard-4" as const, egressTier: "DEEP_SCAN" as const }
        }
      }),
    publish: ({ run, result, file }) =>
      Effect.gen(function* () {
        const { scan, repository } = yield* scanOf(run)
        const output = yield* decodeOutput(new TextDecoder().decode(yield* file(DEEP_SCAN_OUTPUT_PATH))).pipe(
          Effect.mapError((error) =>
            fail(
              "deep_scan_output_invalid",
              `The agent's report does not match the output contract: ${error.message.split("\n").slice(0, 3).join(" ")}`
            )
          )
        )
        const diff = result.files.some((entry) => entry.path === CHANGES_PATH)
          ? new TextDecoder().decode(yield* file(CHANGES_PATH))
          : ""
        const parsed = parseChanges(diff, CHECKOUT)
        // A diff Bosun cannot read (a binary file) proves no reproduction: they are judged unverified.
        const changes = Result.isSuccess(parsed) ? parsed.success : []
        const suppressed = new Set(
          (yield* findings.suppressions(run.organizationId, repository.id)).map((entry) => entry.fingerprint)
        )
        const kept = new Map<string, NewFinding>()
        let suppressedCount = 0
        for (const finding of output.findings) {
          const fingerprint = fingerprintOf(repository.id, finding)
          if (suppressed.has(fingerprint)) {
            suppressedCount += 1
            continue
          }
          if (kept.has(fingerprint)) continue
          const judged = judge(finding, changes)
          kept.set(fingerprint, {
            fingerprint,
            title: finding.title,
            severity: finding.severity,
            category: finding.category,
            cwe: finding.cwe,
            path: finding.path,
            startLine: finding.start_line,
            endLine: finding.end_line,
            symbol: finding.symbol,
            evidence: finding.evidence,
            proposedFix: finding.proposed_fix,
            verification: judged.status,
            verificationReason: judged.reason,
            reproduction:
              finding.reproduction === undefined ? null : { ...finding.reproduction, test_content: judged.testContent }
          })
        }
        yield* findings.record(
          run.organizationId,
          { id: scan.id, repositoryId: repository.id },
          {
            summary: output.summary,
            complete: output.coverage.complete && output.coverage.skipped.length === 0,
            skipped: output.coverage.skipped,
            suppressedCount,
            findings: [...kept.values()]
          }
        )
        yield* Effect.logInfo("deep_scan_recorded").pipe(
          Effect.annotateLogs({
            org_id: run.organizationId,
            deep_scan_id: scan.id,
            findings: kept.size,
            suppressed: suppressedCount
          })
        )
      })
  }

  return { [DEEP_SCAN]: type }
})

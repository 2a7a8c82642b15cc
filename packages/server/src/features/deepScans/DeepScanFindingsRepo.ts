/**
 * A deep scan's findings, their triage and the repository's suppressions
 * (`sql/0033_deep_scan_findings.sql`). A scan's result is recorded once (a publish run again
 * inserts nothing twice: one finding per fingerprint per scan), and every write recounts the scan's
 * finding_count, decision_counts and risk_level (the worst accepted-or-pending finding; NONE
 * without one) in the same transaction. A rejection writes the suppression the repository's later
 * scans honour. Every query filters by organization.
 */
import type {
  DeepScanFinding,
  FindingDecisionInput,
  ReproductionAttempt,
  ScanSeverity,
  VerificationStatus
} from "@bosun/domain"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { iso } from "../../platform/db/Timestamps.ts"

/** A finding as the scan's publish records it. */
export interface NewFinding {
  readonly fingerprint: string
  readonly title: string
  readonly severity: ScanSeverity
  readonly category: string
  readonly cwe: string | null
  readonly path: string
  readonly startLine: number
  readonly endLine: number
  readonly symbol: string
  readonly evidence: ReadonlyArray<{ readonly path: string; readonly line: number; readonly note: string }>
  readonly proposedFix: string
  readonly verification: VerificationStatus
  readonly verificationReason: string | null
  readonly reproduction: (ReproductionAttempt & { readonly test_content: string | null }) | null
}

export interface ScanResult {
  readonly summary: string
  readonly complete: boolean
  readonly skipped: ReadonlyArray<{ readonly path: string; readonly reason: string }>
  readonly suppressedCount: number
  readonly findings: ReadonlyArray<NewFinding>
}

/** A suppressed finding, as the next scan's agent is told not to report it again. */
export interface Suppression {
  readonly fingerprint: string
  readonly reasonCode: string
  readonly title: string | null
  readonly category: string | null
  readonly path: string | null
  readonly symbol: string | null
}

export type DecideOutcome =
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "AlreadyDecided"; readonly decision: string }
  | { readonly _tag: "Decided"; readonly finding: DeepScanFinding }

interface FindingRow {
  readonly id: string
  readonly deep_scan_id: string
  readonly fingerprint: string
  readonly title: string
  readonly severity: ScanSeverity
  readonly category: string
  readonly cwe: string | null
  readonly path: string
  readonly start_line: number
  readonly end_line: number
  readonly symbol: string
  readonly evidence: DeepScanFinding["evidence"]
  readonly proposed_fix: string
  readonly verification_status: VerificationStatus
  readonly verification_reason: string | null
  readonly reproduction: {
    readonly test_path: string
    readonly test_content: string | null
    readonly command: string
    readonly exit_code: number
    readonly output: string
  } | null
  readonly decision: DeepScanFinding["decision"]
  readonly reason_code: DeepScanFinding["reason_code"]
  readonly reason_note: string | null
  readonly decided_by: string | null
  readonly decided_at: Date | null
  readonly created_at: Date
}

const toFinding = (row: FindingRow): DeepScanFinding => ({
  id: row.id,
  deep_scan_id: row.deep_scan_id,
  fingerprint: row.fingerprint,
  title: row.title,
  severity: row.severity,
  category: row.category,
  cwe: row.cwe,
  path: row.path,
  start_line: row.start_line,
  end_line: row.end_line,
  symbol: row.symbol,
  evidence: row.evidence,
  proposed_fix: row.proposed_fix,
  verification: {
    status: row.verification_status,
    reason: row.verification_reason,
    reproduction:
      row.reproduction === null
        ? null
        : {
            test_path: row.reproduction.test_path,
            test_content: row.reproduction.test_content,
            command: row.reproduction.command,
            exit_code: row.reproduction.exit_code,
            output: row.reproduction.output
          }
  },
  decision: row.decision,
  reason_code: row.reason_code,
  reason_note: row.reason_note,
  decided_by: row.decided_by,
  decided_at: iso(row.decided_at),
  created_at: row.created_at.toISOString()
})

type Sql = SqlClient.SqlClient
type Columns = ReturnType<Sql["literal"]>

/** The columns of a finding as `FindingRow` reads them. */
const findingColumns = (sql: Sql) =>
  sql.literal(`id, deep_scan_id, fingerprint, title, severity, category, cwe, path, start_line,
    end_line, symbol, evidence, proposed_fix, verification_status, verification_reason, reproduction, decision,
    reason_code, reason_note, decided_by, decided_at, created_at`)

/** Recounts the scan's findings, decisions and risk level (in the caller's transaction). */
const recount = (sql: Sql, organizationId: string, deepScanId: string) =>
  sql`
    UPDATE deep_scans s SET
      finding_count = c.total, accepted_count = c.accepted, pending_count = c.pending,
      rejected_count = c.rejected, risk_level = coalesce(c.worst, 'NONE'), updated_at = now()
    FROM (
      SELECT count(*)::int AS total,
             count(*) FILTER (WHERE decision = 'ACCEPTED')::int AS accepted,
             count(*) FILTER (WHERE decision = 'PENDING')::int AS pending,
             count(*) FILTER (WHERE decision = 'REJECTED')::int AS rejected,
             (ARRAY['LOW', 'MEDIUM', 'HIGH', 'CRITICAL'])[
               max(array_position(ARRAY['LOW', 'MEDIUM', 'HIGH', 'CRITICAL'], severity))
                 FILTER (WHERE decision <> 'REJECTED')] AS worst
      FROM deep_scan_findings WHERE organization_id = ${organizationId} AND deep_scan_id = ${deepScanId}
    ) c
    WHERE s.organization_id = ${organizationId} AND s.id = ${deepScanId}`

/** Reads of a repository's suppressions and a scan's findings. */
const readers = (sql: Sql, columns: Columns) => {
  const suppressions = Effect.fn("DeepScanFindingsRepo.suppressions")(function* (
    organizationId: string,
    repositoryId: string
  ) {
    const rows = yield* sql<{
      fingerprint: string
      reason_code: string
      title: string | null
      category: string | null
      path: string | null
      symbol: string | null
    }>`
      SELECT x.fingerprint, x.reason_code, f.title, f.category, f.path, f.symbol
      FROM deep_scan_suppressions x
      LEFT JOIN deep_scan_findings f ON f.id = x.finding_id AND f.organization_id = x.organization_id
      WHERE x.organization_id = ${organizationId} AND x.repository_id = ${repositoryId}
      ORDER BY x.created_at`.pipe(Effect.orDie)
    return rows.map((row) => ({
      fingerprint: row.fingerprint,
      reasonCode: row.reason_code,
      title: row.title,
      category: row.category,
      path: row.path,
      symbol: row.symbol
    }))
  })

  const list = Effect.fn("DeepScanFindingsRepo.list")(function* (organizationId: string, deepScanId: string) {
    const rows = yield* sql<FindingRow>`
      SELECT ${columns} FROM deep_scan_findings
      WHERE organization_id = ${organizationId} AND deep_scan_id = ${deepScanId}
      ORDER BY array_position(ARRAY['CRITICAL', 'HIGH', 'MEDIUM', 'LOW'], severity), path, start_line, id`.pipe(
      Effect.orDie
    )
    return rows.map(toFinding)
  })

  const decisionOf = Effect.fn("DeepScanFindingsRepo.decisionOf")(function* (
    organizationId: string,
    deepScanId: string,
    findingId: string
  ) {
    const [row] = yield* sql<{ decision: string }>`
      SELECT decision FROM deep_scan_findings
      WHERE organization_id = ${organizationId} AND deep_scan_id = ${deepScanId} AND id = ${findingId}`.pipe(
      Effect.orDie
    )
    return Option.map(Option.fromNullishOr(row), (found) => found.decision)
  })

  return { suppressions, list, decisionOf }
}

/** Writes of a scan's findings and their triage, each recounting the scan in its transaction. */
const writers = (sql: Sql, columns: Columns) => {
  const record = Effect.fn("DeepScanFindingsRepo.record")(function* (
    organizationId: string,
    scan: { readonly id: string; readonly repositoryId: string },
    result: ScanResult
  ) {
    yield* sql
      .withTransaction(
        Effect.gen(function* () {
          for (const finding of result.findings) {
            yield* sql`
              INSERT INTO deep_scan_findings
                (organization_id, deep_scan_id, repository_id, fingerprint, title, severity, category, cwe, path,
                 start_line, end_line, symbol, evidence, proposed_fix, verification_status, verification_reason,
                 reproduction)
              VALUES (${organizationId}, ${scan.id}, ${scan.repositoryId}, ${finding.fingerprint}, ${finding.title},
                      ${finding.severity}, ${finding.category}, ${finding.cwe}, ${finding.path}, ${finding.startLine},
                      ${finding.endLine}, ${finding.symbol}, ${JSON.stringify(finding.evidence)}::jsonb,
                      ${finding.proposedFix}, ${finding.verification}, ${finding.verificationReason},
                      ${finding.reproduction === null ? null : JSON.stringify(finding.reproduction)}::jsonb)
              ON CONFLICT (deep_scan_id, fingerprint) DO NOTHING`
          }
          yield* sql`
            UPDATE deep_scans SET summary = ${result.summary},
                   completion_status = ${result.complete ? "COMPLETE" : "PARTIAL"},
                   coverage_skipped = ${JSON.stringify(result.skipped)}::jsonb,
                   suppressed_count = ${result.suppressedCount}, updated_at = now()
            WHERE organization_id = ${organizationId} AND id = ${scan.id}`
          yield* recount(sql, organizationId, scan.id)
        })
      )
      .pipe(Effect.orDie)
  })

  const decide = Effect.fn("DeepScanFindingsRepo.decide")(function* (
    organizationId: string,
    deepScanId: string,
    findingId: string,
    input: FindingDecisionInput,
    userId: string
  ) {
    return yield* sql
      .withTransaction(
        Effect.gen(function* () {
          const rejected = input.decision === "reject"
          const [row] = yield* sql<FindingRow & { repository_id: string }>`
            UPDATE deep_scan_findings SET
              decision = ${rejected ? "REJECTED" : "ACCEPTED"}, reason_code = ${rejected ? (input.reason ?? null) : null},
              reason_note = ${input.note ?? null}, decided_by = ${userId}, decided_at = now()
            WHERE organization_id = ${organizationId} AND deep_scan_id = ${deepScanId} AND id = ${findingId}
              AND decision = 'PENDING'
            RETURNING ${columns}, repository_id`
          if (row === undefined) {
            const [existing] = yield* sql<{ decision: string }>`
              SELECT decision FROM deep_scan_findings
              WHERE organization_id = ${organizationId} AND deep_scan_id = ${deepScanId} AND id = ${findingId}`
            return existing === undefined
              ? ({ _tag: "NotFound" } as const)
              : ({ _tag: "AlreadyDecided", decision: existing.decision } as const)
          }
          if (rejected) {
            yield* sql`
              INSERT INTO deep_scan_suppressions
                (organization_id, repository_id, fingerprint, reason_code, reason_note, finding_id, created_by)
              VALUES (${organizationId}, ${row.repository_id}, ${row.fingerprint}, ${input.reason ?? "false_positive"},
                      ${input.note ?? null}, ${row.id}, ${userId})
              ON CONFLICT (organization_id, repository_id, fingerprint) DO UPDATE SET
                reason_code = excluded.reason_code, reason_note = excluded.reason_note,
                finding_id = excluded.finding_id, created_by = excluded.created_by, created_at = now()`
          }
          yield* recount(sql, organizationId, deepScanId)
          return { _tag: "Decided", finding: toFinding(row) } as const
        })
      )
      .pipe(Effect.orDie)
  })

  return { record, decide }
}

export class DeepScanFindingsRepo extends Context.Service<
  DeepScanFindingsRepo,
  {
    /** The repository's suppressions, with what the finding that made each one said. */
    readonly suppressions: (organizationId: string, repositoryId: string) => Effect.Effect<ReadonlyArray<Suppression>>
    /** Records the scan's result and findings once, and recounts the scan. */
    readonly record: (
      organizationId: string,
      scan: { readonly id: string; readonly repositoryId: string },
      result: ScanResult
    ) => Effect.Effect<void>
    /** The scan's findings, worst first. */
    readonly list: (organizationId: string, deepScanId: string) => Effect.Effect<ReadonlyArray<DeepScanFinding>>
    /** The finding's decision (PENDING, ACCEPTED, REJECTED); none when the scan has no such finding. */
    readonly decisionOf: (
      organizationId: string,
      deepScanId: string,
      findingId: string
    ) => Effect.Effect<Option.Option<string>>
    /** Accepts or rejects a pending finding (a rejection suppresses its fingerprint); recounts the scan. */
    readonly decide: (
      organizationId: string,
      deepScanId: string,
      findingId: string,
      input: FindingDecisionInput,
      userId: string
    ) => Effect.Effect<DecideOutcome>
  }
>()("bosun/server/persistence/DeepScanFindingsRepo") {
  static readonly layer = Layer.effect(
    DeepScanFindingsRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const columns = findingColumns(sql)
      return DeepScanFindingsRepo.of({ ...readers(sql, columns), ...writers(sql, columns) })
    })
  )
}

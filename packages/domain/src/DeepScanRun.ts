/**
 * What a deep scan's agent must produce (docs/interface.md: Resources "Deep scan", egress tier
 * DEEP_SCAN): an audit of the whole repository for security and correctness risks, and for every
 * HIGH or CRITICAL finding a second step in the same sandbox that tries to confirm it with a
 * reproduction — a test the agent writes under `bosun-repro/` and runs, which fails while the flaw
 * is there. Output that does not match is rejected and nothing is recorded.
 *
 * A finding's fingerprint (what a rejection suppresses in later scans) is Bosun's, not the
 * agent's: the SHA-256 of the repository, the CWE (or the category when there is none), the path
 * and the symbol the sink is in — stable across commits that move lines, different for the same
 * flaw in another function.
 */
import { Schema } from "effect"

const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))
const Line = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000_000 }))
/** A path inside the repository, as the checkout has it: relative, no `..`. */
const RepoPath = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(1024),
  Schema.isPattern(/^(?!\/)(?!.*(?:^|\/)\.\.(?:\/|$)).+$/)
)

/** A deep-scan finding's severity (no INFO: a scan reports risks, not remarks). */
export const ScanSeverity = Schema.Literals(["LOW", "MEDIUM", "HIGH", "CRITICAL"])
export type ScanSeverity = typeof ScanSeverity.Type

/** One step of the path from where the input enters to the sink it reaches. */
export const EvidenceStep = Schema.Struct({
  path: RepoPath,
  line: Line,
  /** What happens to the input here. */
  note: Text(1_000)
})

/** What the agent's reproduction showed (its second step, HIGH and CRITICAL findings only). */
export const ReproductionAttempt = Schema.Struct({
  /** Whether the reproduction showed the flaw (the test failed as the flaw predicts). */
  confirmed: Schema.Boolean,
  /** The test or script it wrote, under `bosun-repro/`. */
  test_path: RepoPath,
  /** The command it ran, from the repository's root. */
  command: Text(1_000),
  exit_code: Schema.Int,
  /** The end of what the command printed. */
  output: Schema.String.check(Schema.isMaxLength(8_000))
})
export type ReproductionAttempt = typeof ReproductionAttempt.Type

export const DeepScanFindingOutput = Schema.Struct({
  title: Text(200),
  severity: ScanSeverity,
  /** `sql_injection`, `path_traversal`, `race_condition`, ... */
  category: Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9_]{0,63}$/)),
  cwe: Schema.NullOr(Schema.String.check(Schema.isPattern(/^CWE-[1-9][0-9]{0,4}$/))),
  path: RepoPath,
  start_line: Line,
  end_line: Line,
  /** The function, method or route the sink is in. */
  symbol: Text(200),
  /** The path from input to sink, in order. */
  evidence: Schema.Array(EvidenceStep).check(Schema.isMinLength(1), Schema.isMaxLength(30)),
  /** The change that removes the flaw, in Markdown (a diff where it helps). */
  proposed_fix: Text(20_000),
  /** Required for HIGH and CRITICAL: what the reproduction showed. */
  reproduction: Schema.optional(ReproductionAttempt)
}).check(
  Schema.makeFilter((finding) => (finding.end_line >= finding.start_line ? undefined : "end_line is before start_line"))
)
export type DeepScanFindingOutput = typeof DeepScanFindingOutput.Type

export const DeepScanOutput = Schema.Struct({
  /** What was audited and what stands out, in Markdown. */
  summary: Text(20_000),
  coverage: Schema.Struct({
    /** True when every part of the repository was read. */
    complete: Schema.Boolean,
    /** What was not, and why. */
    skipped: Schema.Array(Schema.Struct({ path: RepoPath, reason: Text(500) })).check(Schema.isMaxLength(200))
  }),
  findings: Schema.Array(DeepScanFindingOutput).check(Schema.isMaxLength(200))
})
export type DeepScanOutput = typeof DeepScanOutput.Type

/** Where a deep scan's agent leaves its report (`$BOSUN_OUTPUT_DIR/deep-scan.json`). */
export const DEEP_SCAN_OUTPUT_PATH = "outputs/deep-scan.json"

/** Where reproductions go in the checkout. */
export const REPRODUCTION_DIR = "bosun-repro"

/**
 * VERIFIED: the reproduction failed as the flaw predicts, and its test is in the run's changes;
 * UNVERIFIED: it was tried and did not confirm the flaw, or its proof does not hold (shown with
 * why, never dropped); NOT_REQUIRED: LOW and MEDIUM findings are not reproduced.
 */
export const VerificationStatus = Schema.Literals(["VERIFIED", "UNVERIFIED", "NOT_REQUIRED"])
export type VerificationStatus = typeof VerificationStatus.Type

export const FindingDecision = Schema.Literals(["PENDING", "ACCEPTED", "REJECTED"])
export type FindingDecision = typeof FindingDecision.Type

/** Why a finding was rejected; a rejection suppresses its fingerprint in the repository's next scans. */
export const RejectionReason = Schema.Literals(["false_positive", "accepted_risk", "not_applicable", "wont_fix"])
export type RejectionReason = typeof RejectionReason.Type

/** A deep scan's finding as the API shows it. */
export const DeepScanFinding = Schema.Struct({
  id: Schema.String,
  deep_scan_id: Schema.String,
  fingerprint: Schema.String,
  title: Schema.String,
  severity: ScanSeverity,
  category: Schema.String,
  cwe: Schema.NullOr(Schema.String),
  path: Schema.String,
  start_line: Schema.Int,
  end_line: Schema.Int,
  symbol: Schema.String,
  evidence: Schema.Array(EvidenceStep),
  proposed_fix: Schema.String,
  verification: Schema.Struct({
    status: VerificationStatus,
    /** Why it is UNVERIFIED; null otherwise. */
    reason: Schema.NullOr(Schema.String),
    /** The reproduction as the agent ran it, with the test's content from the run's changes. */
    reproduction: Schema.NullOr(
      Schema.Struct({
        test_path: Schema.String,
        test_content: Schema.NullOr(Schema.String),
        command: Schema.String,
        exit_code: Schema.Int,
        output: Schema.String
      })
    )
  }),
  decision: FindingDecision,
  reason_code: Schema.NullOr(RejectionReason),
  reason_note: Schema.NullOr(Schema.String),
  decided_by: Schema.NullOr(Schema.String),
  decided_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
export type DeepScanFinding = typeof DeepScanFinding.Type

/** `POST .../findings/{finding_id}/decision`. A rejection needs its reason. */
export const FindingDecisionInput = Schema.Struct({
  decision: Schema.Literals(["accept", "reject"]),
  reason: Schema.optional(RejectionReason),
  note: Schema.optional(Schema.String.check(Schema.isMaxLength(2_000)))
}).check(
  Schema.makeFilter((input) =>
    input.decision === "reject" && input.reason === undefined
      ? "a rejection needs its reason (false_positive, accepted_risk, not_applicable or wont_fix)"
      : input.decision === "accept" && input.reason !== undefined
        ? "an acceptance takes no reason"
        : undefined
  )
)
export type FindingDecisionInput = typeof FindingDecisionInput.Type

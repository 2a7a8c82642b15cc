/**
 * The review agent's output contract: what a review run's agent must leave in
 * `outputs/review.json`. The publish step decodes it with this Schema and posts nothing from output
 * that does not match — a review is never posted half-parsed.
 *
 * A finding anchors to lines of one file on one side of the diff (RIGHT: the pull request's head,
 * LEFT: its base); `suggestion` is replacement text for exactly those lines, shown by GitHub as a
 * suggested change. Severities rank CRITICAL > HIGH > MEDIUM > LOW > INFO; the inline comments a
 * review posts are the highest-ranked up to its `comment_limit`. `description` is the pull request's
 * description the agent writes when the repository enables automatic_pr_description; it is optional
 * so a review without that feature still matches.
 */
import { Schema } from "effect"

export const FINDING_SEVERITIES = ["CRITICAL", "HIGH", "MEDIUM", "LOW", "INFO"] as const
export const FindingSeverity = Schema.Literals(FINDING_SEVERITIES)
export type FindingSeverity = typeof FindingSeverity.Type

/** Lower is more severe: the order inline comments are chosen in. */
export const severityRank = (severity: FindingSeverity): number => FINDING_SEVERITIES.indexOf(severity)

export const DiffSide = Schema.Literals(["LEFT", "RIGHT"])
export type DiffSide = typeof DiffSide.Type

const Line = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

export const ReviewFinding = Schema.Struct({
  /** Repository-relative, `/`-separated, as the diff names it. */
  path: Text(4096),
  start_line: Line,
  end_line: Line,
  side: DiffSide,
  severity: FindingSeverity,
  /** What kind of problem: `security`, `correctness`, `performance`, … or a CWE id such as `CWE-89`. */
  category: Text(64),
  title: Text(200),
  body: Text(20_000),
  suggestion: Schema.optional(Schema.String.check(Schema.isMaxLength(20_000))),
  /** The ids of the team's memories (given in the instructions) that shaped this finding. */
  memory_ids: Schema.optional(Schema.Array(Text(128)).check(Schema.isMaxLength(20)))
}).check(
  Schema.makeFilter((finding) => (finding.end_line >= finding.start_line ? undefined : "end_line is before start_line"))
)
export type ReviewFinding = typeof ReviewFinding.Type

/** A finding the agent did not raise because one of the team's memories says the code is fine. */
export const SuppressedByMemory = Schema.Struct({
  memory_id: Text(128),
  path: Text(4096),
  note: Text(1_000)
})

export const ReviewOutput = Schema.Struct({
  summary: Text(20_000),
  suppressed: Schema.optional(Schema.Array(SuppressedByMemory).check(Schema.isMaxLength(100))),
  findings: Schema.Array(ReviewFinding).check(Schema.isMaxLength(500)),
  /** Markdown for the pull request's body (automatic_pr_description); Bosun places it between its markers. */
  description: Schema.optional(Schema.String.check(Schema.isMaxLength(20_000)))
})
export type ReviewOutput = typeof ReviewOutput.Type

/** Where a review run's agent leaves its output (`$BOSUN_OUTPUT_DIR/review.json` in the sandbox). */
export const REVIEW_OUTPUT_PATH = "outputs/review.json"

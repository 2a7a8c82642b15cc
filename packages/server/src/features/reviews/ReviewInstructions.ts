/**
 * What a review run's agent is told (the diff range, the policy, the enabled memories, custom
 * instructions and the output contract): the prompt names the pull request, the commits to compare
 * and the files to read — only those the coverage ledger gave it, the skipped ones named with their
 * reason so the agent does not claim to have read them — and the instructions carry the strictness,
 * the repository's guidance and custom instructions, the approved conventions (memories), and the
 * exact JSON the publish step decodes — with a `description` of the pull request only when the
 * repository enables automatic_pr_description.
 */
import type { ReviewPolicy } from "@bosun/domain"
import type { Coverage } from "./ReviewPlan.ts"

export interface ReviewSubject {
  readonly repository: string
  readonly number: number
  readonly title: string
  readonly baseSha: string
  readonly headSha: string
  /** The checkout's directory under the workspace. */
  readonly checkoutPath: string
}

export interface Convention {
  /** The memory's id: the agent cites it in `memory_ids` and `suppressed`, which is how its effect is measured. */
  readonly id: string
  readonly convention: string
  readonly rationale: string | null
}

const STRICTNESS: Record<ReviewPolicy["strictness"], string> = {
  LOW: "Report only problems that would break behaviour, lose data or open a security hole. Do not comment on style, naming or structure.",
  MEDIUM:
    "Report correctness, security and performance problems, and maintainability problems a careful reviewer would block on. Skip matters of taste.",
  HIGH: "Report every problem a careful senior reviewer would raise, including maintainability, naming and missing tests, ranked by severity."
}

const DESCRIPTION_FIELD = `
  "description": "a description of the pull request for its reviewers, in Markdown",`

const DESCRIPTION_GUIDE = `Also write "description": a description of this pull request for the people who will review it,
in Markdown, at most a few short sections — what the change does and why, how to test it, and its
risks (what could break, what needs a careful look). Do not restate the diff file by file or line by
line. Bosun puts it into the pull request's description, beside the author's own text.`

const outputContract = (
  describe: boolean
) => `Write your review as JSON to the file review.json in the directory named by the environment
variable BOSUN_OUTPUT_DIR, exactly in this shape (no other keys):

{
  "summary": "what the change does and your overall assessment, in a few sentences of Markdown",${describe ? DESCRIPTION_FIELD : ""}
  "findings": [
    {
      "path": "src/file.ts",             // as the diff names it, relative to the repository root
      "start_line": 12, "end_line": 14,  // line numbers in the file on that side of the diff
      "side": "RIGHT",                   // RIGHT: the new code (head); LEFT: removed code (base)
      "severity": "HIGH",                // CRITICAL, HIGH, MEDIUM, LOW or INFO
      "category": "security",            // security, correctness, performance, maintainability, ... or a CWE id
      "title": "one line",
      "body": "why it is a problem and how to fix it, in Markdown",
      "suggestion": "optional: replacement text for exactly lines start_line..end_line",
      "memory_ids": ["optional: ids of the team's conventions that shaped this finding"]
    }
  ],
  "suppressed": [
    // optional: what you did not report because one of the team's conventions says it is fine
    { "memory_id": "the convention's id", "path": "src/file.ts", "note": "what you left out, in one line" }
  ]
}

${describe ? `${DESCRIPTION_GUIDE}\n\n` : ""}Anchor each finding to lines the pull request changed where you can. An empty findings list is a
valid review. Output that does not match this shape is rejected and nothing is posted.`

const fileList = (coverage: Coverage) => coverage.reviewed.map((file) => `- ${file.path}`).join("\n") || "- (none)"

export const reviewPrompt = (subject: ReviewSubject, coverage: Coverage): string => {
  const parts = [
    `Review pull request #${subject.number} of ${subject.repository}: "${subject.title}".`,
    `The repository is checked out at the pull request's head in ./${subject.checkoutPath}. The change is \`git diff ${subject.baseSha}...${subject.headSha}\`.`,
    `Review these changed files:\n${fileList(coverage)}`
  ]
  if (coverage.skipped.length > 0) {
    parts.push(
      `These changed files are out of scope; do not report on them:\n${coverage.skipped
        .map((file) => `- ${file.path} (${file.reason.toLowerCase().replace("_", " ")})`)
        .join("\n")}`
    )
  }
  parts.push("Do not change any file in the repository. Write only the review file described in your instructions.")
  return parts.join("\n\n")
}

export const reviewInstructions = (input: {
  readonly policy: ReviewPolicy
  readonly customInstructions: string
  readonly conventions: ReadonlyArray<Convention>
  /** automatic_pr_description is ENABLED: the output contract asks for a `description` too. */
  readonly describePullRequest: boolean
}): string => {
  const parts = [
    "You are Bosun's code reviewer. You review a pull request and report findings; you never push or edit code.",
    `Strictness ${input.policy.strictness}: ${STRICTNESS[input.policy.strictness]}`
  ]
  if (input.policy.guidance.trim() !== "")
    parts.push(`Review guidance for this repository:\n${input.policy.guidance.trim()}`)
  if (input.customInstructions.trim() !== "") {
    parts.push(`Instructions from the repository's maintainers:\n${input.customInstructions.trim()}`)
  }
  if (input.conventions.length > 0) {
    parts.push(
      `Conventions this team has approved (follow them; report code that breaks them). Cite a convention's id in a finding's "memory_ids" when it shaped the finding, and list in "suppressed" what you left out because one says the code is fine:\n${input.conventions
        .map(
          (entry) =>
            `- [${entry.id}] ${entry.convention}${entry.rationale === null ? "" : ` (why: ${entry.rationale})`}`
        )
        .join("\n")}`
    )
  }
  parts.push(outputContract(input.describePullRequest))
  return parts.join("\n\n")
}

/**
 * What a memory-distill run's agent is told: the feedback word for word, where it was given (the
 * pull request, the file, the Bosun finding it answers), the organization's memories that exist
 * (with their ids, so a restatement is named rather than proposed twice), and the output contract
 * `MemoryProposal`.
 */
import type { Memory } from "@bosun/domain"

export interface DistillSubject {
  readonly repository: string
  readonly sourceType: string
  readonly reasonCode: string | null
  readonly actor: string | null
  readonly text: string
  readonly pullRequestNumber: number | null
  readonly filePath: string | null
  readonly finding: { readonly title: string; readonly category: string; readonly severity: string } | null
}

export const MEMORY_DISTILL_INSTRUCTIONS = `You are Bosun's memory keeper. Bosun reviews this team's pull requests; when people answer its
findings or ask it to remember something, you decide whether their words state a convention the team
holds — a rule a reviewer should apply to future code — and write it down precisely.

Propose a convention only when the feedback states or clearly implies a durable rule ("we always ...",
"never ...", "X is fine here because our Y does Z"). A one-off fix, a question, thanks or a complaint
without a rule is not one: answer "propose": false and say why.

Write the convention as a rule a reviewer can apply without the original context, in one or two
sentences, in the team's own terms. Choose scope REPOSITORY when it is about this repository's code,
ORGANIZATION only when the feedback says it holds everywhere. If one of the existing memories listed
already states the convention (even in other words), do not write it again: give its id as
"restates_memory_id".

Write your answer as JSON to the file memory.json in the directory named by the environment variable
BOSUN_OUTPUT_DIR, exactly in this shape (no other keys):

{
  "propose": true,
  "convention": "the rule, one or two sentences",
  "purpose": "what following it achieves",
  "rationale": "why the team holds it, from the feedback",
  "scope": "REPOSITORY",
  "language": "typescript or null",
  "restates_memory_id": null,
  "reason": "why this is (or is not) a convention worth keeping"
}

When nothing is worth keeping: {"propose": false, "reason": "..."}. Do not change any file.`

const describeSource = (subject: DistillSubject) => {
  switch (subject.sourceType) {
    case "REMEMBER_COMMAND":
      return "asked Bosun to remember"
    case "THUMBS_DOWN":
      return `gave a Bosun finding a 👎${subject.reasonCode === null ? "" : ` (reason: ${subject.reasonCode})`} and wrote`
    default:
      return "replied to a Bosun finding"
  }
}

export const memoryDistillPrompt = (subject: DistillSubject, existing: ReadonlyArray<Memory>): string => {
  const where = [
    `Repository: ${subject.repository}.`,
    subject.pullRequestNumber === null ? null : `Pull request: #${subject.pullRequestNumber}.`,
    subject.filePath === null ? null : `File: ${subject.filePath}.`,
    subject.finding === null
      ? null
      : `The finding it answers: "${subject.finding.title}" (${subject.finding.severity}, ${subject.finding.category}).`
  ].filter((line) => line !== null)
  const memories =
    existing.length === 0
      ? "The organization has no memories yet."
      : `The organization's memories (id, lifecycle, scope: convention):\n${existing
          .map(
            (memory) =>
              `- ${memory.id} (${memory.lifecycle}, ${memory.scope === "ORGANIZATION" ? "organization" : `${memory.repository_owner}/${memory.repository_name}`}): ${memory.convention}`
          )
          .join("\n")}`
  return [
    `${subject.actor === null ? "Someone" : `@${subject.actor}`} ${describeSource(subject)}:`,
    subject.text
      .split("\n")
      .map((line) => `> ${line}`)
      .join("\n"),
    where.join("\n"),
    memories,
    "Decide whether this states a convention worth keeping, and write memory.json."
  ].join("\n\n")
}

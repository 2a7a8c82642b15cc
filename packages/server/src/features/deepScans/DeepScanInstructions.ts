/**
 * What a deep scan asks of the agent: audit the whole repository at the pinned commit for security
 * and correctness risks, confirm each HIGH or CRITICAL finding with a reproduction in the same
 * sandbox (a second step: a test under `bosun-repro/` that fails while the flaw is there), skip
 * what earlier rejections suppressed, and write the report in the shape of `DeepScanOutput` (domain
 * `DeepScanRun.ts`), which publish enforces.
 */
import { REPRODUCTION_DIR } from "@bosun/domain"
import type { Suppression } from "./DeepScanFindingsRepo.ts"

export interface DeepScanSubject {
  readonly repository: string
  readonly headSha: string
  readonly checkout: string
  readonly suppressed: ReadonlyArray<Suppression>
}

export const deepScanPrompt = (subject: DeepScanSubject): string =>
  [
    `Audit ${subject.repository} at commit ${subject.headSha}, checked out in ./${subject.checkout}, for security and correctness risks.`,
    subject.suppressed.length === 0
      ? ""
      : `The team has already ruled on these; do not report them again:\n${subject.suppressed
          .map(
            (entry) =>
              `- ${entry.title ?? "a finding"} (${entry.category ?? "?"} in ${entry.path ?? "?"}, ${entry.symbol ?? "?"}): ${entry.reasonCode}`
          )
          .join("\n")}`,
    "Write your report as your instructions describe."
  ]
    .filter((part) => part !== "")
    .join("\n\n")

export const DEEP_SCAN_INSTRUCTIONS = `You are Bosun's security and correctness auditor. Read the whole repository, not only the files that look
interesting. For every real risk you find, trace the path from where untrusted input enters to the sink it
reaches, and propose the fix.

Then, as a second step, try to confirm every HIGH or CRITICAL finding: write a small test or script under
${REPRODUCTION_DIR}/ in the checkout that exercises the flaw and FAILS while the flaw is there (exit code not 0),
run it from the checkout's root, and record what happened. A reproduction that passes, or that you could not
run, is reported with confirmed false: say so honestly; the finding is still shown, marked unverified. Do not
change any other file.

Write the report as JSON to deep-scan.json in the directory named by the environment variable BOSUN_OUTPUT_DIR,
exactly in this shape (no other keys):

{"summary": "what you audited and what stands out, in Markdown",
 "coverage": {"complete": true, "skipped": [{"path": "dir/or/file", "reason": "why it was not read"}]},
 "findings": [{
   "title": "one line", "severity": "LOW" | "MEDIUM" | "HIGH" | "CRITICAL",
   "category": "snake_case_category", "cwe": "CWE-89" or null,
   "path": "file/the/sink/is/in", "start_line": 10, "end_line": 12,
   "symbol": "the function, method or route the sink is in",
   "evidence": [{"path": "file", "line": 3, "note": "what happens to the input here"}],
   "proposed_fix": "the change, in Markdown",
   "reproduction": {"confirmed": true, "test_path": "${REPRODUCTION_DIR}/name.test.js", "command": "node ${REPRODUCTION_DIR}/name.test.js",
                    "exit_code": 1, "output": "the end of what it printed"}
 }]}

"reproduction" is required for HIGH and CRITICAL findings and optional otherwise. Paths are relative to the
checkout's root. coverage.complete is false when you skipped anything; list what and why.
Output that does not match this shape is rejected and nothing is recorded.`

/**
 * Bosun's judgement of a deep-scan finding's reproduction and its fingerprint: unconfirmed findings
 * are shown as unverified, never silently dropped, and a rejection becomes a suppression the next
 * scans honour.
 *
 * The agent's word is not the proof. A HIGH or CRITICAL finding is VERIFIED only when its
 * reproduction says confirmed, exited non-zero (a failing test is the proof), lives under
 * `bosun-repro/`, and its test is among the run's own changes (`changes.diff`, which the runtime
 * takes from the sandbox's checkout, not from the agent): the test's content is shown with the
 * finding. Anything short of that is UNVERIFIED with the reason. LOW and MEDIUM findings are not
 * reproduced (NOT_REQUIRED).
 */
import { createHash } from "node:crypto"
import type { DeepScanFindingOutput, VerificationStatus } from "@bosun/domain"
import { REPRODUCTION_DIR } from "@bosun/domain"
import type { FileChange } from "../workItems/index.ts"

/** The finding's identity across scans: repository, CWE (else category), path and symbol. */
export const fingerprintOf = (
  repositoryId: string,
  finding: Pick<DeepScanFindingOutput, "cwe" | "category" | "path" | "symbol">
) =>
  createHash("sha256")
    .update(
      JSON.stringify([repositoryId, finding.cwe ?? finding.category, finding.path, finding.symbol.trim().toLowerCase()])
    )
    .digest("hex")

/** The lines a change adds (a new file's content), from its patch. */
const addedText = (change: FileChange) =>
  change.patch.hunks
    .flatMap((hunk) => hunk.lines.filter((line) => line.startsWith("+")).map((line) => line.slice(1)))
    .join("\n")

export interface Judgement {
  readonly status: VerificationStatus
  readonly reason: string | null
  readonly testContent: string | null
}

export const judge = (finding: DeepScanFindingOutput, changes: ReadonlyArray<FileChange>): Judgement => {
  const reproduction = finding.reproduction
  const test = reproduction === undefined ? undefined : changes.find((change) => change.path === reproduction.test_path)
  const testContent = test === undefined || test.kind === "DELETE" ? null : addedText(test)
  if (finding.severity !== "HIGH" && finding.severity !== "CRITICAL") {
    return { status: "NOT_REQUIRED", reason: null, testContent }
  }
  if (reproduction === undefined) {
    return { status: "UNVERIFIED", reason: "No reproduction was attempted", testContent: null }
  }
  if (!reproduction.test_path.startsWith(`${REPRODUCTION_DIR}/`)) {
    return {
      status: "UNVERIFIED",
      reason: `The reproduction's test is not under ${REPRODUCTION_DIR}/`,
      testContent
    }
  }
  if (testContent === null) {
    return {
      status: "UNVERIFIED",
      reason: `${reproduction.test_path} is not among the run's changes: the test was not written in the sandbox`,
      testContent
    }
  }
  if (!reproduction.confirmed) {
    return { status: "UNVERIFIED", reason: "The reproduction did not show the flaw", testContent }
  }
  if (reproduction.exit_code === 0) {
    return {
      status: "UNVERIFIED",
      reason: "The reproduction exited 0: only a failing run shows the flaw",
      testContent
    }
  }
  return { status: "VERIFIED", reason: null, testContent }
}

/**
 * A finding's fingerprint: what makes the finding on one push the same finding on the next, so that
 * it is not posted twice, a dismissed one is not raised again, and one whose code changed and that
 * the agent no longer reports is resolved.
 *
 * It hashes the category, the title normalized (case, punctuation, digits and spacing do not
 * count: agents reword numbers and quotes between runs) and the code the finding anchors to,
 * normalized per line (indentation and trailing spaces do not count) — not the path's line
 * numbers, which shift whenever code above them changes, and not the path alone, so a file moved
 * with its code keeps its findings. The path's file name is mixed in so identical code in two
 * files is two findings.
 */
import { createHash } from "node:crypto"

/** The title as the fingerprint sees it. */
export const normalizeTitle = (title: string): string =>
  title
    .toLowerCase()
    .replace(/[0-9]+/g, "#")
    .replace(/[^\p{L}#]+/gu, " ")
    .trim()

/** The anchored code as the fingerprint sees it: each line trimmed, blank lines dropped. */
export const normalizeCode = (lines: ReadonlyArray<string>): string =>
  lines
    .map((line) => line.trim().replace(/\s+/g, " "))
    .filter((line) => line.length > 0)
    .join("\n")

const fileName = (path: string) => path.slice(path.lastIndexOf("/") + 1)

export const findingFingerprint = (finding: {
  readonly category: string
  readonly title: string
  readonly path: string
  /** The text of the lines the finding anchors to, on its side of the diff. */
  readonly code: ReadonlyArray<string>
}): string =>
  createHash("sha256")
    .update(
      [
        finding.category.toLowerCase(),
        normalizeTitle(finding.title),
        fileName(finding.path),
        normalizeCode(finding.code)
      ].join("\u0000")
    )
    .digest("hex")
    .slice(0, 32)

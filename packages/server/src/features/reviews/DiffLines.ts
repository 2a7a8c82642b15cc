/**
 * Which lines of a pull request's diff GitHub accepts review comments on: from a file's
 * unified-diff `patch` (as the pulls files endpoint returns it), the RIGHT lines (added or context,
 * numbered in the head) and the LEFT lines (removed or context, numbered in the base) its hunks
 * show, and the hunks themselves for the coverage ledger. A comment on any other line would be
 * refused by GitHub with a 422.
 */

export interface Hunk {
  readonly oldStart: number
  readonly oldLines: number
  readonly newStart: number
  readonly newLines: number
}

export interface DiffLines {
  /** Head line numbers the diff shows, with their text. */
  readonly right: ReadonlyMap<number, string>
  /** Base line numbers the diff shows, with their text. */
  readonly left: ReadonlyMap<number, string>
  readonly hunks: ReadonlyArray<Hunk>
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/

export const diffLines = (patch: string | undefined): DiffLines => {
  const right = new Map<number, string>()
  const left = new Map<number, string>()
  const hunks: Array<Hunk> = []
  if (patch === undefined) return { right, left, hunks }
  let oldLine = 0
  let newLine = 0
  // What the current hunk's header says is still to come; lines past it are not the hunk's.
  let oldLeft = 0
  let newLeft = 0
  for (const line of patch.split("\n")) {
    const header = HUNK_HEADER.exec(line)
    if (header !== null) {
      const hunk = {
        oldStart: Number(header[1]),
        oldLines: header[2] === undefined ? 1 : Number(header[2]),
        newStart: Number(header[3]),
        newLines: header[4] === undefined ? 1 : Number(header[4])
      }
      hunks.push(hunk)
      oldLine = hunk.oldStart
      newLine = hunk.newStart
      oldLeft = hunk.oldLines
      newLeft = hunk.newLines
      continue
    }
    if (line.startsWith("\\")) continue
    const marker = line[0]
    const text = line.slice(1)
    if (marker === "+" && newLeft > 0) {
      right.set(newLine++, text)
      newLeft--
    } else if (marker === "-" && oldLeft > 0) {
      left.set(oldLine++, text)
      oldLeft--
    } else if ((marker === " " || line === "") && oldLeft > 0 && newLeft > 0) {
      // Context; some tools drop the space of an empty context line.
      right.set(newLine++, text)
      left.set(oldLine++, text)
      oldLeft--
      newLeft--
    }
  }
  return { right, left, hunks }
}

/** Whether every line of `start..end` on `side` is one the diff shows. */
export const inDiff = (lines: DiffLines, side: "LEFT" | "RIGHT", start: number, end: number): boolean => {
  const shown = side === "RIGHT" ? lines.right : lines.left
  for (let line = start; line <= end; line++) if (!shown.has(line)) return false
  return true
}

/** The text of the lines of `start..end` on `side` the diff shows (lines it does not show are left out). */
export const diffText = (
  lines: DiffLines,
  side: "LEFT" | "RIGHT",
  start: number,
  end: number
): ReadonlyArray<string> => {
  const shown = side === "RIGHT" ? lines.right : lines.left
  const text: Array<string> = []
  for (let line = start; line <= end && line - start < 200; line++) {
    const found = shown.get(line)
    if (found !== undefined) text.push(found)
  }
  return text
}

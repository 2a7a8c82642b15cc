/**
 * The files an implement run changed, from the runtime's `changes.diff` (git's format: `--binary`,
 * paths prefixed `a/<checkout>/` and `b/<checkout>/`), and their new text given the base's
 * (the approved item's pull request is one commit of exactly what the agent changed).
 * Parsed and applied with `diff` (jsdiff). A binary file, a path outside the checkout, or a patch
 * that does not apply to the base is refused with a message naming the file: the pull request is
 * all of the change or none of it.
 */
import { applyPatch, parsePatch, type StructuredPatch } from "diff"
import { Result } from "effect"

export interface FileChange {
  readonly path: string
  readonly kind: "ADD" | "MODIFY" | "DELETE"
  readonly mode: "100644" | "100755"
  readonly patch: StructuredPatch
}

const DEV_NULL = "/dev/null"

const pathIn = (name: string | undefined, side: "a" | "b", checkout: string) => {
  if (name === undefined || name === DEV_NULL) return undefined
  const prefix = `${side}/${checkout}/`
  return name.startsWith(prefix) ? name.slice(prefix.length) : null
}

/**
 * The `b/` paths of the sections of a git diff that are binary (`GIT binary patch` with
 * `--binary`, `Binary files ... differ` without): jsdiff parses them as patches with no hunks.
 */
const binaryPaths = (diff: string): ReadonlySet<string> => {
  const found = new Set<string>()
  for (const section of diff.split(/^(?=diff --git )/m)) {
    const header = /^diff --git \S+ (\S+)/.exec(section)
    if (header?.[1] !== undefined && /^(?:GIT binary patch|Binary files .* differ)$/m.test(section))
      found.add(header[1])
  }
  return found
}

/** The changed files of `diff` under the checkout `checkout`, or why they cannot be committed. */
export const parseChanges = (diff: string, checkout: string): Result.Result<ReadonlyArray<FileChange>, string> => {
  if (diff.trim() === "") return Result.succeed([])
  const binary = binaryPaths(diff)
  const changes: Array<FileChange> = []
  for (const patch of parsePatch(diff)) {
    const before = pathIn(patch.oldFileName, "a", checkout)
    const after = pathIn(patch.newFileName, "b", checkout)
    if (before === null || after === null) {
      return Result.fail(`${patch.newFileName ?? patch.oldFileName} is outside the repository's checkout`)
    }
    const path = after ?? before
    if (path === undefined) continue
    if (patch.isBinary === true || binary.has(patch.newFileName ?? "") || binary.has(patch.oldFileName ?? ""))
      return Result.fail(`${path} is a binary file; Bosun commits text changes only`)
    const kind =
      before === undefined || patch.isCreate === true
        ? "ADD"
        : after === undefined || patch.isDelete === true
          ? "DELETE"
          : "MODIFY"
    changes.push({ path, kind, mode: patch.newMode === "100755" ? "100755" : "100644", patch })
  }
  return Result.succeed(changes)
}

/** The file's new text (null: deleted), or undefined when the patch does not apply to `base`. */
export const applyChange = (change: FileChange, base: string | undefined): string | null | undefined => {
  if (change.kind === "DELETE") return null
  const applied = applyPatch(change.kind === "ADD" ? "" : (base ?? ""), change.patch)
  return applied === false ? undefined : applied
}

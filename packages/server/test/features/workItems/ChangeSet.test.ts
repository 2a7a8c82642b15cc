/**
 * The implement run's change set (work/ChangeSet.ts) from a diff made exactly as the runtime makes
 * it (`git add --all` then `git diff --cached --binary` with the checkout's path prefixes), applied
 * to the base's files: added, modified, deleted and executable files come out as git has them; a
 * binary file and a patch that does not apply are refused, naming the file.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { applyChange, parseChanges } from "../../../src/features/workItems/ChangeSet.ts"

const git = (dir: string, args: ReadonlyArray<string>) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: dir, encoding: "utf8" })

/** A repository with `files`, then `change` applied in the working tree; answers the runtime's diff. */
const diffOf = (files: Record<string, string>, change: (dir: string) => void) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-changeset-"))
  git(dir, ["init", "-q", "-b", "main"])
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
    fs.writeFileSync(path.join(dir, file), text)
  }
  git(dir, ["add", "--all"])
  git(dir, ["commit", "-q", "-m", "base"])
  const base = git(dir, ["rev-parse", "HEAD"]).trim()
  change(dir)
  git(dir, ["add", "--all"])
  return git(dir, ["diff", "--cached", "--binary", "--no-color", "--src-prefix=a/repo/", "--dst-prefix=b/repo/", base])
}

const BASE = {
  "README.md": "# shop\n\nline two\nline three\n",
  "src/old.ts": "export const old = 1\n",
  "bin/run.sh": "echo run\n"
}

describe("ChangeSet", () => {
  it("turns the runtime's diff into the files' new text: added, modified, deleted, executable", () => {
    const diff = diffOf(BASE, (dir) => {
      fs.writeFileSync(path.join(dir, "README.md"), "# shop\n\nline two, edited\nline three\nline four\n")
      fs.mkdirSync(path.join(dir, "src/api"), { recursive: true })
      fs.writeFileSync(path.join(dir, "src/api/health.ts"), 'export const health = () => "ok"\n')
      fs.rmSync(path.join(dir, "src/old.ts"))
      fs.chmodSync(path.join(dir, "bin/run.sh"), 0o755)
      fs.writeFileSync(path.join(dir, "bin/run.sh"), "echo run fast\n")
    })
    const parsed = parseChanges(diff, "repo")
    assert.isTrue(Result.isSuccess(parsed))
    const changes = Result.getOrThrow(parsed)
    const byPath = new Map(changes.map((change) => [change.path, change]))
    assert.deepStrictEqual([...byPath.keys()].sort(), ["README.md", "bin/run.sh", "src/api/health.ts", "src/old.ts"])
    assert.deepStrictEqual(changes.map((change) => [change.path, change.kind, change.mode]).sort(), [
      ["README.md", "MODIFY", "100644"],
      ["bin/run.sh", "MODIFY", "100755"],
      ["src/api/health.ts", "ADD", "100644"],
      ["src/old.ts", "DELETE", "100644"]
    ])
    const readme = byPath.get("README.md")
    assert.strictEqual(
      readme === undefined ? undefined : applyChange(readme, BASE["README.md"]),
      "# shop\n\nline two, edited\nline three\nline four\n"
    )
    const added = byPath.get("src/api/health.ts")
    assert.strictEqual(
      added === undefined ? undefined : applyChange(added, undefined),
      'export const health = () => "ok"\n'
    )
    const deleted = byPath.get("src/old.ts")
    assert.isNull(deleted === undefined ? undefined : applyChange(deleted, BASE["src/old.ts"]))
    const script = byPath.get("bin/run.sh")
    assert.strictEqual(script === undefined ? undefined : applyChange(script, BASE["bin/run.sh"]), "echo run fast\n")
  })

  it("a change that does not apply to the base file is undefined, not a guess", () => {
    const diff = diffOf(BASE, (dir) => fs.writeFileSync(path.join(dir, "README.md"), "# shop\n\nline 2\nline three\n"))
    const [change] = Result.getOrThrow(parseChanges(diff, "repo"))
    assert.isDefined(change)
    if (change !== undefined) assert.isUndefined(applyChange(change, "# a different file\n"))
  })

  it("refuses a binary file and an empty diff is no change", () => {
    const binary = diffOf(BASE, (dir) =>
      fs.writeFileSync(path.join(dir, "logo.png"), Buffer.from([0, 1, 2, 255, 0, 7]))
    )
    const refused = parseChanges(binary, "repo")
    assert.isTrue(Result.isFailure(refused))
    if (Result.isFailure(refused)) assert.include(refused.failure, "logo.png is a binary file")
    assert.deepStrictEqual(Result.getOrThrow(parseChanges("", "repo")), [])
    const outside = parseChanges(
      diffOf(BASE, (dir) => fs.writeFileSync(path.join(dir, "x.txt"), "x\n")),
      "other"
    )
    assert.isTrue(Result.isFailure(outside))
  })
})

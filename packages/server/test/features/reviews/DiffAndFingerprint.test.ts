/**
 * Two building blocks of publishing a review: the lines of a unified-diff patch GitHub
 * accepts comments on, and finding fingerprints that survive what changes between pushes (line
 * numbers, indentation, rewording of numbers and punctuation) but not what makes a finding
 * another one (category, title words, code, file).
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { diffLines, diffText, inDiff } from "../../../src/features/reviews/DiffLines.ts"
import { findingFingerprint, normalizeTitle } from "../../../src/features/reviews/FindingFingerprint.ts"

const PATCH = [
  "@@ -10,6 +10,8 @@ export const parse = (input: string) => {",
  '   const lines = input.split("\\n")',
  "-  for (const line of lines) {",
  "+  for (const raw of lines) {",
  "+    const line = raw.trim()",
  '+    if (line === "") continue',
  "     handle(line)",
  "   }",
  " ",
  "@@ -40 +42 @@ export const done = true",
  "-export const version = 1",
  "+export const version = 2",
  "\\ No newline at end of file"
].join("\n")

describe("diff lines", () => {
  it("numbers RIGHT lines in the head and LEFT lines in the base, hunk by hunk", () => {
    const lines = diffLines(PATCH)
    assert.deepStrictEqual(
      [...lines.right.keys()].sort((a, b) => a - b),
      [10, 11, 12, 13, 14, 15, 16, 42]
    )
    assert.deepStrictEqual(
      [...lines.left.keys()].sort((a, b) => a - b),
      [10, 11, 12, 13, 14, 40]
    )
    assert.deepStrictEqual(lines.hunks, [
      { oldStart: 10, oldLines: 6, newStart: 10, newLines: 8 },
      { oldStart: 40, oldLines: 1, newStart: 42, newLines: 1 }
    ])
    assert.isTrue(inDiff(lines, "RIGHT", 11, 13))
    assert.isFalse(inDiff(lines, "RIGHT", 16, 17))
    assert.isFalse(inDiff(lines, "RIGHT", 41, 41))
    assert.isTrue(inDiff(lines, "LEFT", 40, 40))
    assert.deepStrictEqual(diffText(lines, "RIGHT", 11, 13), [
      "  for (const raw of lines) {",
      "    const line = raw.trim()",
      '    if (line === "") continue'
    ])
    assert.deepStrictEqual(diffText(lines, "LEFT", 11, 11), ["  for (const line of lines) {"])
  })

  it("a file without a patch (binary, too large) has no commentable line", () => {
    const lines = diffLines(undefined)
    assert.strictEqual(lines.right.size + lines.left.size + lines.hunks.length, 0)
  })

  it("a generated patch shows exactly its added and context lines on the right", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 500 }),
        fc.array(fc.constantFrom("+", "-", " "), { minLength: 1, maxLength: 60 }),
        (start, markers) => {
          const oldCount = markers.filter((m) => m !== "+").length
          const newCount = markers.filter((m) => m !== "-").length
          const patch = [
            `@@ -${start},${oldCount} +${start},${newCount} @@`,
            ...markers.map((m, i) => `${m}line ${i}`)
          ].join("\n")
          const lines = diffLines(patch)
          assert.strictEqual(lines.right.size, newCount)
          assert.strictEqual(lines.left.size, oldCount)
          if (newCount > 0) assert.strictEqual(Math.min(...lines.right.keys()), start)
          if (newCount > 0) assert.strictEqual(Math.max(...lines.right.keys()), start + newCount - 1)
        }
      )
    )
  })
})

describe("finding fingerprints", () => {
  const base = {
    category: "security",
    title: "SQL built from request input (line 12)",
    path: "src/db/users.ts",
    code: ["  const q = `SELECT * FROM users WHERE id = ${id}`", "  return db.query(q)"]
  }

  it("survive indentation, blank lines, title case, numbers and punctuation, and a move to another directory", () => {
    const same = findingFingerprint(base)
    assert.strictEqual(findingFingerprint({ ...base, title: "sql built from request input — line 40" }), same)
    assert.strictEqual(
      findingFingerprint({
        ...base,
        code: ["const q = `SELECT * FROM users WHERE id = ${id}`", "", "    return   db.query(q)"]
      }),
      same
    )
    assert.strictEqual(findingFingerprint({ ...base, path: "packages/api/src/users.ts" }), same)
    assert.match(same, /^[0-9a-f]{32}$/)
  })

  it("differ when the category, the title's words, the code or the file differ", () => {
    const same = findingFingerprint(base)
    assert.notStrictEqual(findingFingerprint({ ...base, category: "correctness" }), same)
    assert.notStrictEqual(findingFingerprint({ ...base, title: "SQL built from a constant" }), same)
    assert.notStrictEqual(findingFingerprint({ ...base, code: ["return db.query(q, [id])"] }), same)
    assert.notStrictEqual(findingFingerprint({ ...base, path: "src/db/orders.ts" }), same)
  })

  it("normalized titles ignore digits and punctuation but keep letters of any script", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), fc.nat(), (title, n) => {
        assert.strictEqual(
          normalizeTitle(`${title} ${n}!`),
          normalizeTitle(`${title.toUpperCase()} ${n + 1}.`.toLowerCase())
        )
      })
    )
    assert.strictEqual(normalizeTitle("Überlauf: Zähler 3×"), "überlauf zähler #")
  })
})

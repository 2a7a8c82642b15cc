/**
 * Bosun's judgement of a deep-scan finding's reproduction (unconfirmed ones are shown as
 * unverified, never silently dropped): VERIFIED only for a HIGH or CRITICAL finding whose
 * reproduction says confirmed, failed (non-zero exit), sits under `bosun-repro/` and is among the
 * run's own changes — for every combination of those, by property — and the fingerprint that a
 * rejection suppresses is stable across lines and titles and differs by symbol, path and CWE.
 */
import type { DeepScanFindingOutput } from "@bosun/domain"
import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import { fingerprintOf, judge } from "../../../src/features/deepScans/FindingVerification.ts"
import { parseChanges } from "../../../src/features/workItems/ChangeSet.ts"

const TEST = 'const assert = require("node:assert")\nassert.fail("injected")'

const diffAdding = (path: string, content: string) => {
  const lines = content.split("\n")
  return [
    `diff --git a/repo/${path} b/repo/${path}`,
    "new file mode 100644",
    "index 0000000..1111111",
    "--- /dev/null",
    `+++ b/repo/${path}`,
    `@@ -0,0 +1,${lines.length} @@`,
    ...lines.map((line) => `+${line}`),
    ""
  ].join("\n")
}

const changesOf = (diff: string) => {
  const parsed = parseChanges(diff, "repo")
  if (Result.isFailure(parsed)) throw new Error(parsed.failure)
  return parsed.success
}

const finding = (overrides: Partial<DeepScanFindingOutput> = {}): DeepScanFindingOutput => ({
  title: "SQL injection in findUser",
  severity: "HIGH",
  category: "sql_injection",
  cwe: "CWE-89",
  path: "src/users.js",
  start_line: 1,
  end_line: 1,
  symbol: "findUser",
  evidence: [{ path: "src/users.js", line: 1, note: "concatenated" }],
  proposed_fix: "Parameterize it.",
  reproduction: {
    confirmed: true,
    test_path: "bosun-repro/sqli.test.js",
    command: "node bosun-repro/sqli.test.js",
    exit_code: 1,
    output: "injected"
  },
  ...overrides
})

describe("FindingVerification", () => {
  it("a confirmed, failing reproduction under bosun-repro/ that the run wrote is VERIFIED, with the test's content", () => {
    const judged = judge(finding(), changesOf(diffAdding("bosun-repro/sqli.test.js", TEST)))
    assert.deepStrictEqual(judged, { status: "VERIFIED", reason: null, testContent: TEST })
  })

  it("each missing condition leaves a HIGH finding UNVERIFIED with its reason", () => {
    const changes = changesOf(diffAdding("bosun-repro/sqli.test.js", TEST))
    const base = finding().reproduction
    if (base === undefined) throw new Error("the fixture has a reproduction")
    const cases: ReadonlyArray<[DeepScanFindingOutput, string]> = [
      [finding({ reproduction: undefined }), "No reproduction was attempted"],
      [finding({ reproduction: { ...base, confirmed: false } }), "The reproduction did not show the flaw"],
      [
        finding({ reproduction: { ...base, exit_code: 0 } }),
        "The reproduction exited 0: only a failing run shows the flaw"
      ],
      [
        finding({ reproduction: { ...base, test_path: "test/sqli.test.js" } }),
        "The reproduction's test is not under bosun-repro/"
      ],
      [
        finding({ reproduction: { ...base, test_path: "bosun-repro/other.test.js" } }),
        "bosun-repro/other.test.js is not among the run's changes: the test was not written in the sandbox"
      ]
    ]
    for (const [input, reason] of cases) {
      const judged = judge(input, changes)
      assert.deepStrictEqual([judged.status, judged.reason], ["UNVERIFIED", reason])
    }
  })

  it("LOW and MEDIUM findings are NOT_REQUIRED, whatever their reproduction", () => {
    for (const severity of ["LOW", "MEDIUM"] as const) {
      assert.strictEqual(judge(finding({ severity, reproduction: undefined }), []).status, "NOT_REQUIRED")
      assert.strictEqual(judge(finding({ severity }), []).status, "NOT_REQUIRED")
    }
  })

  it("VERIFIED exactly when every condition holds (property)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("LOW", "MEDIUM", "HIGH", "CRITICAL" as const),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: -2, max: 3 }),
        fc.boolean(),
        fc.boolean(),
        (severity, present, confirmed, exitCode, underRepro, written) => {
          const testPath = underRepro ? "bosun-repro/t.test.js" : "spec/t.test.js"
          const reproduction = present
            ? { confirmed, test_path: testPath, command: "node t", exit_code: exitCode, output: "" }
            : undefined
          const changes = written ? changesOf(diffAdding(testPath, TEST)) : []
          const judged = judge(finding({ severity, reproduction }), changes)
          const serious = severity === "HIGH" || severity === "CRITICAL"
          const expected = !serious
            ? "NOT_REQUIRED"
            : present && confirmed && exitCode !== 0 && underRepro && written
              ? "VERIFIED"
              : "UNVERIFIED"
          return judged.status === expected && (judged.status === "UNVERIFIED") === (judged.reason !== null)
        }
      )
    )
  })

  it("the fingerprint ignores lines and titles, and differs by repository, CWE, path and symbol (property)", () => {
    const base = { cwe: "CWE-89", category: "sql_injection", path: "src/users.js", symbol: "findUser" }
    const print = fingerprintOf("repo-1", base)
    assert.match(print, /^[0-9a-f]{64}$/)
    assert.strictEqual(fingerprintOf("repo-1", { ...base, symbol: "  FindUser " }), print)
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 20 }), (other) => {
        const differs = (changed: typeof base, repository = "repo-1") => fingerprintOf(repository, changed) !== print
        return (
          (other === "repo-1" || differs(base, other)) &&
          (other === base.cwe || differs({ ...base, cwe: other })) &&
          (other === base.path || differs({ ...base, path: other })) &&
          (other.trim().toLowerCase() === "finduser" || differs({ ...base, symbol: other }))
        )
      })
    )
    // Without a CWE the category stands in.
    assert.notStrictEqual(fingerprintOf("repo-1", { ...base, cwe: null }), print)
  })
})

/**
 * What a review run's agent is told: the pull request and the diff range, only the files the
 * coverage ledger gave it (skipped ones named with their reason), the strictness, guidance, custom
 * instructions and approved conventions, and the output contract — asking for a pull request
 * description only when automatic_pr_description is enabled.
 */
import { DEFAULT_CONFIGURATION } from "@bosun/domain"
import { assert, describe, it } from "@effect/vitest"
import { diffLines } from "../../../src/features/reviews/DiffLines.ts"
import { reviewInstructions, reviewPrompt } from "../../../src/features/reviews/ReviewInstructions.ts"
import type { Coverage } from "../../../src/features/reviews/ReviewPlan.ts"

const coverage: Coverage = {
  reviewed: [{ path: "src/users.ts", lines: diffLines("@@ -0,0 +1,1 @@\n+export {}") }],
  skipped: [
    { path: "package-lock.json", reason: "GENERATED" },
    { path: "assets/logo.png", reason: "BINARY" },
    { path: "vendor/big.js", reason: "EXCLUDED_PATH" }
  ]
}

const subject = {
  repository: "acme/api",
  number: 42,
  title: "Add user lookup",
  baseSha: "a".repeat(40),
  headSha: "b".repeat(40),
  checkoutPath: "repo"
}

describe("review instructions", () => {
  it("names the pull request, the diff range, the checkout and each file to review", () => {
    const prompt = reviewPrompt(subject, coverage)
    assert.include(prompt, 'pull request #42 of acme/api: "Add user lookup"')
    assert.include(prompt, `git diff ${"a".repeat(40)}...${"b".repeat(40)}`)
    assert.include(prompt, "./repo")
    assert.include(prompt, "- src/users.ts")
  })

  it("names the skipped files with their reason and tells the agent not to report on them", () => {
    const prompt = reviewPrompt(subject, coverage)
    assert.include(prompt, "do not report on them")
    assert.include(prompt, "- package-lock.json (generated)")
    assert.include(prompt, "- assets/logo.png (binary)")
    assert.include(prompt, "- vendor/big.js (excluded path)")
    assert.notInclude(reviewPrompt(subject, { ...coverage, skipped: [] }), "out of scope")
  })

  it("carries the strictness, guidance, custom instructions, approved conventions and the output contract", () => {
    const policy = {
      ...DEFAULT_CONFIGURATION.review_policy.review_policy,
      guidance: "",
      strictness: "HIGH" as const
    }
    const text = reviewInstructions({
      policy: { ...policy, guidance: "Focus on the SQL layer." },
      customInstructions: "We use Effect; never throw.",
      conventions: [
        { id: "mem-1", convention: "Queries are parameterized", rationale: "SQL injection" },
        { id: "mem-2", convention: "No default exports", rationale: null }
      ],
      describePullRequest: false
    })
    assert.include(text, "Strictness HIGH")
    assert.include(text, "Focus on the SQL layer.")
    assert.include(text, "We use Effect; never throw.")
    // Each with its id, which the agent cites in memory_ids and suppressed: how a memory's effect is measured.
    assert.include(text, "- [mem-1] Queries are parameterized (why: SQL injection)")
    assert.include(text, "- [mem-2] No default exports\n")
    assert.include(text, "BOSUN_OUTPUT_DIR")
    for (const field of [
      '"summary"',
      '"findings"',
      '"start_line"',
      '"side"',
      '"severity"',
      '"suggestion"',
      '"memory_ids"',
      '"suppressed"'
    ]) {
      assert.include(text, field)
    }
    const plain = reviewInstructions({ policy, customInstructions: "  ", conventions: [], describePullRequest: false })
    assert.include(plain, "Strictness HIGH")
    assert.notInclude(plain, "maintainers")
    assert.notInclude(plain, "Conventions")
    assert.notInclude(plain, "guidance for this repository")
  })

  it("asks for the pull request's description only when automatic_pr_description is enabled", () => {
    const input = {
      policy: DEFAULT_CONFIGURATION.review_policy.review_policy,
      customInstructions: "",
      conventions: []
    }
    const enabled = reviewInstructions({ ...input, describePullRequest: true })
    assert.include(enabled, '"description"')
    assert.include(enabled, "what the change does and why, how to test it, and its\nrisks")
    assert.include(enabled, "Do not restate the diff")
    for (const field of ['"summary"', '"findings"', '"suggestion"']) assert.include(enabled, field)

    const disabled = reviewInstructions({ ...input, describePullRequest: false })
    assert.notInclude(disabled, '"description"')
    assert.notInclude(disabled.toLowerCase(), "description")
    assert.include(disabled, '"summary"')
  })
})

/**
 * The review policy's decisions (docs/interface.md: Resources "review_policy"), over generated
 * events and paths: which pull-request events start a review, drafts, excluded authors (logins
 * without case, `[bot]` accounts), paused repositories, and `excluded_paths` read in order with `!`
 * re-including.
 */
import { DEFAULT_CONFIGURATION, type ReviewPolicy } from "@bosun/domain"
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { decideReview, isExcludedAuthor, pathExclusion } from "../../../src/features/reviews/ReviewPolicy.ts"

const DEFAULTS: ReviewPolicy = DEFAULT_CONFIGURATION.review_policy.review_policy

const policyArb: fc.Arbitrary<ReviewPolicy> = fc
  .record({
    review_drafts: fc.boolean(),
    review_on_open: fc.boolean(),
    review_on_push: fc.boolean(),
    review_on_ready: fc.boolean(),
    review_on_reopen: fc.boolean(),
    excluded_authors: fc.array(fc.constantFrom("dependabot[bot]", "Renovate[bot]", "intern", "[bot]"), { maxLength: 3 })
  })
  .map((varied) => ({ ...DEFAULTS, ...varied }))

const FLAG = {
  opened: "review_on_open",
  reopened: "review_on_reopen",
  synchronize: "review_on_push",
  ready_for_review: "review_on_ready"
} as const

describe("the review policy", () => {
  it("a review starts exactly when the repository is enabled, the action's flag is on, drafts are allowed and the author is not excluded", () => {
    fc.assert(
      fc.property(
        policyArb,
        fc.constantFrom("opened", "reopened", "synchronize", "ready_for_review", "edited", "closed", "labeled"),
        fc.boolean(),
        fc.constantFrom("dev-anna", "DEPENDABOT[bot]", "renovate[bot]", "Intern", null),
        fc.boolean(),
        (policy, action, draft, authorLogin, repositoryEnabled) => {
          const decision = decideReview(policy, { action, draft, authorLogin, repositoryEnabled })
          const flag = (FLAG as Record<string, keyof ReviewPolicy | undefined>)[action]
          const expected =
            repositoryEnabled &&
            flag !== undefined &&
            policy[flag] === true &&
            (!draft || policy.review_drafts) &&
            !isExcludedAuthor(policy.excluded_authors, authorLogin)
          assert.strictEqual(decision.review, expected)
          if (!decision.review) assert.isAbove(decision.reason.length, 0)
        }
      )
    )
  })

  it("says why it does not review", () => {
    const base = { action: "opened", draft: false, authorLogin: "dev-anna", repositoryEnabled: true } as const
    assert.deepStrictEqual(decideReview(DEFAULTS, { ...base, repositoryEnabled: false }), {
      review: false,
      reason: "reviews are paused for this repository"
    })
    assert.deepStrictEqual(decideReview(DEFAULTS, { ...base, draft: true }), {
      review: false,
      reason: "the pull request is a draft and review_drafts is off"
    })
    assert.deepStrictEqual(decideReview(DEFAULTS, { ...base, action: "reopened" }), {
      review: false,
      reason: "review_on_reopen is off"
    })
    assert.deepStrictEqual(decideReview(DEFAULTS, { ...base, action: "edited" }), {
      review: false,
      reason: "pull_request edited does not start a review"
    })
    assert.deepStrictEqual(decideReview({ ...DEFAULTS, excluded_authors: ["DEV-ANNA"] }, base), {
      review: false,
      reason: "the author dev-anna is in excluded_authors"
    })
    assert.deepStrictEqual(decideReview(DEFAULTS, base), { review: true })
  })

  it("excluded authors: logins without case, one bot by name, every bot with [bot]", () => {
    assert.isTrue(isExcludedAuthor(["Dependabot[bot]"], "dependabot[bot]"))
    assert.isFalse(isExcludedAuthor(["dependabot[bot]"], "renovate[bot]"))
    assert.isTrue(isExcludedAuthor(["[bot]"], "renovate[bot]"))
    assert.isFalse(isExcludedAuthor(["[bot]"], "robot"))
    assert.isFalse(isExcludedAuthor(["anna"], null))
  })

  it("excluded paths: globs in order, the last match decides, ! re-includes", () => {
    const excluded = pathExclusion(["**/*.lock", "dist/**", "docs/**", "!docs/api/**", "**/*.gen.ts", ".github/**"])
    assert.isTrue(excluded("package-lock.lock"))
    assert.isTrue(excluded("apps/web/yarn.lock"))
    assert.isTrue(excluded("dist/index.js"))
    assert.isTrue(excluded("docs/guide/intro.md"))
    assert.isFalse(excluded("docs/api/reference.md"))
    assert.isTrue(excluded("src/schema.gen.ts"))
    assert.isTrue(excluded(".github/workflows/ci.yml"))
    assert.isFalse(excluded("src/index.ts"))
    // A later pattern excludes again what a negation re-included.
    assert.isTrue(pathExclusion(["docs/**", "!docs/api/**", "docs/api/internal/**"])("docs/api/internal/x.md"))
  })

  it("with no patterns nothing is excluded; a lone negation excludes nothing; a path's own glob excludes it", () => {
    const segment = fc.stringMatching(/^[a-z0-9_-]{1,8}$/)
    fc.assert(
      fc.property(
        fc.array(segment, { minLength: 1, maxLength: 5 }),
        fc.constantFrom(".ts", ".md", ".lock", ""),
        (parts, ext) => {
          const path = `${parts.join("/")}${ext}`
          assert.isFalse(pathExclusion([])(path))
          assert.isFalse(pathExclusion([`!${path}`])(path))
          assert.isTrue(pathExclusion([path])(path))
          assert.isTrue(pathExclusion(["**"])(path))
          assert.isFalse(pathExclusion(["**", `!${path}`])(path))
        }
      )
    )
  })
})

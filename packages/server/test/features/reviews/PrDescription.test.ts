/**
 * Bosun's section of a pull request's body (automatic_pr_description): the author's text
 * before and after it kept byte for byte, an earlier section replaced in place, a lost end marker
 * tolerated, markers inside the agent's text defused, and applying a description idempotent.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import {
  DESCRIPTION_END,
  DESCRIPTION_HEADING,
  DESCRIPTION_START,
  descriptionSection,
  withDescription
} from "../../../src/features/reviews/PrDescription.ts"

const section = (text: string) => `${DESCRIPTION_START}\n${DESCRIPTION_HEADING}\n\n${text}\n${DESCRIPTION_END}`

const count = (text: string, part: string) => text.split(part).length - 1

describe("pull request description", () => {
  it("an empty or missing body becomes the section alone", () => {
    assert.strictEqual(withDescription(null, "Adds caching."), section("Adds caching."))
    assert.strictEqual(withDescription("", "  Adds caching.\n"), section("Adds caching."))
  })

  it("appends the section after the author's text, separated by a blank line", () => {
    assert.strictEqual(withDescription("Fixes #12", "Adds caching."), `Fixes #12\n\n${section("Adds caching.")}`)
    assert.strictEqual(withDescription("Fixes #12\n", "Adds caching."), `Fixes #12\n\n${section("Adds caching.")}`)
    assert.strictEqual(withDescription("Fixes #12\r\n\r\n", "d"), `Fixes #12\r\n\r\n${section("d")}`)
    assert.strictEqual(
      withDescription("Fixes #12\r\nSee below.", "d"),
      `Fixes #12\r\nSee below.\r\n\r\n${section("d")}`
    )
  })

  it("replaces only an earlier section, keeping the text before and after it byte for byte", () => {
    const before = "Fixes #12\r\n\r\nPlease look at the cache keys.\n\n"
    const after = "\n\n---\nChecklist:\n- [x] tests  \n"
    const body = `${before}${section("An older summary.")}${after}`
    const next = withDescription(body, "A newer summary.")
    assert.strictEqual(next, `${before}${section("A newer summary.")}${after}`)
    assert.notInclude(next, "older")
  })

  it("a start marker whose end marker was deleted owns the rest of the body", () => {
    const body = `Fixes #12\n\n${DESCRIPTION_START}\n${DESCRIPTION_HEADING}\n\nAn older summary, cut short`
    assert.strictEqual(withDescription(body, "A newer summary."), `Fixes #12\n\n${section("A newer summary.")}`)
  })

  it("an end marker before any start marker is the author's text", () => {
    const body = `Stray ${DESCRIPTION_END} here`
    const next = withDescription(body, "d")
    assert.strictEqual(next, `${body}\n\n${section("d")}`)
    assert.strictEqual(withDescription(next, "e"), `${body}\n\n${section("e")}`)
  })

  it("markers inside the description are neutralised: the agent cannot end the section early or open another", () => {
    const hostile = `Intro\n${DESCRIPTION_END}\nInjected after\n${DESCRIPTION_START}\nand again`
    const body = withDescription("Human text", hostile)
    assert.strictEqual(count(body, DESCRIPTION_START), 1)
    assert.strictEqual(count(body, DESCRIPTION_END), 1)
    assert.isTrue(body.endsWith(DESCRIPTION_END))
    assert.include(body, "&lt;!-- bosun:description:end -->")
    assert.strictEqual(withDescription(body, "Plain."), `Human text\n\n${section("Plain.")}`)
    assert.strictEqual(withDescription(body, hostile), body)
  })

  it("applying the same description twice gives the same body", () => {
    for (const body of [null, "", "Fixes #12", `a\n${section("old")}\nb`, `a ${DESCRIPTION_START} cut`]) {
      const once = withDescription(body, "Adds caching.")
      assert.strictEqual(withDescription(once, "Adds caching."), once)
    }
  })

  it("property: a later description replaces an earlier one and the author's text stays a prefix", () => {
    const human = fc.string({ unit: "grapheme", maxLength: 200 }).filter((text) => !text.includes("<!-- bosun:"))
    const markerPiece = fc.constantFrom(DESCRIPTION_START, DESCRIPTION_END, "<!-- bosun:description:", "\n", "\r\n")
    const description = fc
      .array(fc.oneof(fc.string({ maxLength: 40 }), markerPiece), { maxLength: 8 })
      .map((parts) => parts.join(""))
    fc.assert(
      fc.property(human, description, description, (h, d1, d2) => {
        const direct = withDescription(h, d2)
        assert.strictEqual(withDescription(withDescription(h, d1), d2), direct)
        assert.isTrue(direct.startsWith(h))
        assert.isTrue(direct.endsWith(descriptionSection(d2)))
        assert.strictEqual(withDescription(direct, d2), direct)
        assert.strictEqual(count(direct, DESCRIPTION_START), 1)
        assert.strictEqual(count(direct, DESCRIPTION_END), 1)
      }),
      { numRuns: 500 }
    )
  })
})

/**
 * `holdsNul` (the JSON-body NUL refusal of `Validation.ts`) against JSON texts made by
 * `JSON.stringify`: it says yes exactly when some string, key or value, holds U+0000, however the
 * backslashes around it fall.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { holdsNul } from "../../src/http/Validation.ts"

/** Strings rich in the characters that matter: backslashes, `u`, zeros and NUL itself. */
const tricky = fc.string({ unit: fc.constantFrom("\\", "u", "0", "\u0000", "a", '"', "\u00e9") })

describe("holdsNul", () => {
  it("is true exactly when a string of the JSON value holds NUL (property)", () => {
    fc.assert(
      fc.property(fc.dictionary(tricky, fc.oneof(tricky, fc.array(tricky, { maxLength: 3 }))), (value) => {
        const json = JSON.stringify(value)
        const expected = Object.entries(value).some(
          ([key, item]) => key.includes("\u0000") || [item].flat().some((text) => text.includes("\u0000"))
        )
        expect(holdsNul(json)).toBe(expected)
      }),
      { numRuns: 2000 }
    )
  })

  it("reads an escaped backslash before u0000 as text and an odd run of backslashes as NUL", () => {
    expect(holdsNul('"\\\\u0000"')).toBe(false)
    expect(holdsNul('"\\\\\\u0000"')).toBe(true)
    expect(holdsNul('"\\U0000"')).toBe(false) // not a JSON escape: the parser refuses it
    expect(holdsNul('"u0000"')).toBe(false)
  })
})

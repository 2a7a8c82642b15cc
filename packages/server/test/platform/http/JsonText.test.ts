/**
 * `jsonTextProblem` (the check of JSON bodies and webhook payloads before they are parsed) against
 * JSON texts of generated values, written with every character raw or escaped at random: it finds
 * a problem exactly when some string, key or value, holds NUL or a lone surrogate, or the value
 * nests deeper than the limit — however the backslashes fall and whatever brackets strings hold.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import {
  API_BODY_MAX_DEPTH,
  type JsonTextProblem,
  jsonTextProblem,
  WEBHOOK_MAX_DEPTH
} from "../../../src/platform/http/JsonText.ts"

type Json = string | number | boolean | null | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** Strings rich in what matters: backslashes, `u`, zeros, NUL, quotes, brackets and surrogate halves. */
const tricky = fc.string({
  unit: fc.oneof(
    fc.constantFrom("\\", "u", "0", "d", "8", "\u0000", "a", '"', "[", "{", "}", "]", "\n", "\u00e9", "\ud83d\ude00"),
    fc.integer({ min: 0xd800, max: 0xdfff }).map((unit) => String.fromCharCode(unit))
  ),
  maxLength: 6
})

const { value: jsonValue } = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    tricky,
    fc.constantFrom<Json>(1, true, null),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(tricky, tie("value"), { maxKeys: 3 })
  )
}))

/**
 * A JSON text of `value` in which each character of each string is written raw where JSON
 * allows it, or as a `\uXXXX` escape (upper or lower case), as `choose` decides.
 */
const serialize = (value: Json, choose: () => number): string => {
  const string = (text: string) => {
    let out = '"'
    for (let i = 0; i < text.length; i++) {
      const char = text[i] ?? ""
      const code = text.charCodeAt(i)
      const must = code < 0x20 || char === '"' || char === "\\"
      const pick = choose()
      if (!must && pick % 3 !== 0) out += char
      else if (char === "\\" && pick % 2 === 0) out += "\\\\"
      else {
        const hex = code.toString(16).padStart(4, "0")
        out += `\\u${pick % 2 === 0 ? hex : hex.toUpperCase()}`
      }
    }
    return `${out}"`
  }
  if (typeof value === "string") return string(value)
  if (typeof value !== "object" || value === null) return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map((item: Json) => serialize(item, choose)).join(", ")}]`
  return `{${Object.entries(value)
    .map(([key, item]) => `${string(key)}: ${serialize(item, choose)}`)
    .join(",")}}`
}

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** The problems of `value` found by walking it: the reference the scan is held to. */
const problemsOf = (value: Json, limit: number): ReadonlySet<JsonTextProblem> => {
  const found = new Set<JsonTextProblem>()
  const text = (s: string) => {
    if (s.includes("\u0000")) found.add("nul")
    if (LONE.test(s)) found.add("loneSurrogate")
  }
  const walk = (item: Json, depth: number) => {
    if (typeof item === "string") return text(item)
    if (typeof item !== "object" || item === null) return
    if (depth + 1 > limit) found.add("tooDeep")
    if (Array.isArray(item)) {
      for (const element of item as ReadonlyArray<Json>) walk(element, depth + 1)
    } else {
      for (const [key, element] of Object.entries(item)) {
        text(key)
        walk(element, depth + 1)
      }
    }
  }
  walk(value, 0)
  return found
}

const lcg = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0
    return state >>> 8
  }
}

describe("jsonTextProblem", () => {
  it("finds a problem exactly when the value holds NUL, a lone surrogate or nests past the limit (property)", () => {
    fc.assert(
      fc.property(jsonValue, fc.integer(), fc.integer({ min: 0, max: 6 }), (value, seed, limit) => {
        const text = serialize(value, lcg(seed))
        expect(JSON.parse(text)).toEqual(value)
        const expected = problemsOf(value, limit)
        const found = jsonTextProblem(text, limit)
        expect(found !== undefined).toBe(expected.size > 0)
        if (found !== undefined) expect(expected.has(found)).toBe(true)
        // JSON.stringify escapes lone surrogates and NUL: the same verdict on its text.
        const standard = jsonTextProblem(JSON.stringify(value), limit)
        expect(standard !== undefined).toBe(expected.size > 0)
      }),
      { numRuns: 3000 }
    )
  })

  it("reads an escaped backslash before u0000 as text and an odd run of backslashes as NUL", () => {
    expect(jsonTextProblem('"\\\\u0000"', 8)).toBeUndefined()
    expect(jsonTextProblem('"\\\\\\u0000"', 8)).toBe("nul")
    expect(jsonTextProblem('"\\U0000"', 8)).toBeUndefined() // not a JSON escape: the parser refuses it
    expect(jsonTextProblem('"u0000"', 8)).toBeUndefined()
    expect(jsonTextProblem('{"a":"b\u0000"}', 8)).toBe("nul")
  })

  it("accepts surrogate pairs, escaped or raw, and refuses halves alone", () => {
    expect(jsonTextProblem('"\\ud83d\\ude00"', 8)).toBeUndefined()
    expect(jsonTextProblem('"\\uD83D\\uDE00"', 8)).toBeUndefined()
    expect(jsonTextProblem('"\ud83d\ude00"', 8)).toBeUndefined()
    expect(jsonTextProblem('"\\ud83d\ude00"', 8)).toBeUndefined()
    expect(jsonTextProblem('"\\ud800"', 8)).toBe("loneSurrogate")
    expect(jsonTextProblem('"\\udc00"', 8)).toBe("loneSurrogate")
    expect(jsonTextProblem('"\\ud800\\n"', 8)).toBe("loneSurrogate")
    expect(jsonTextProblem('"\\ud800\\ud800"', 8)).toBe("loneSurrogate")
    expect(jsonTextProblem('["\\ud800", "\\udc00"]', 8)).toBe("loneSurrogate") // no pair across strings
    expect(jsonTextProblem('{"\\udfff": 1}', 8)).toBe("loneSurrogate")
  })

  it("counts only the brackets outside strings, and handles nesting far past any stack without recursion", () => {
    expect(jsonTextProblem('{"a": "[[[[{{{{"}', 1)).toBeUndefined()
    expect(jsonTextProblem("[[]]", 2)).toBeUndefined()
    expect(jsonTextProblem("[[[]]]", 2)).toBe("tooDeep")
    expect(jsonTextProblem("[[],[],[]]", 2)).toBeUndefined()
    const deep = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`
    expect(jsonTextProblem(deep(API_BODY_MAX_DEPTH), API_BODY_MAX_DEPTH)).toBeUndefined()
    expect(jsonTextProblem(deep(API_BODY_MAX_DEPTH + 1), API_BODY_MAX_DEPTH)).toBe("tooDeep")
    expect(jsonTextProblem(deep(WEBHOOK_MAX_DEPTH), WEBHOOK_MAX_DEPTH)).toBeUndefined()
    expect(jsonTextProblem(deep(1_000_000), WEBHOOK_MAX_DEPTH)).toBe("tooDeep")
  })
})

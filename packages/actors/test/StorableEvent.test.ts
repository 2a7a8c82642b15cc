/**
 * `storableEventData`, the step that makes agent output storable as `jsonb`, without a database:
 * NUL and lone surrogates in strings and keys at any depth come out escaped while valid pairs stay;
 * what JSON cannot carry comes out as `JSON.stringify` would write it; anything comes out within
 * MAX_EVENT_BYTES, cut strings keeping the original's start and ending with the marker; clean small
 * data comes back as the very same object, and a second application changes nothing.
 */
import { Buffer } from "node:buffer"
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import {
  MAX_EVENT_BYTES,
  MAX_EVENT_DEPTH,
  storableEventData,
  TOO_DEEP_MARKER,
  TRUNCATION_MARKER_PREFIX,
  truncationMarker
} from "../src/events/StorableEvent.ts"

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), "utf8")

const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff
const isLow = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff

/** The reference for one string, written unit by unit (the module uses a regular expression). */
const escapedByHand = (text: string): string => {
  let out = ""
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    const next = text.charCodeAt(i + 1)
    if (isHigh(unit) && isLow(next)) {
      out += text.slice(i, i + 2)
      i++
    } else if (unit === 0 || isHigh(unit) || isLow(unit)) out += `\\u${unit.toString(16).padStart(4, "0")}`
    else out += text[i]
  }
  return out
}

/** Whether some string or key anywhere in `value` holds NUL or a lone surrogate. */
const hasUnstorable = (value: unknown): boolean => {
  if (typeof value === "string") return escapedByHand(value) !== value
  if (typeof value !== "object" || value === null) return false
  return Object.entries(value).some(([key, item]) => hasUnstorable(key) || hasUnstorable(item))
}

/** Single code units, weighted towards NUL, both surrogate halves, backslash and `u`. */
const unit = fc
  .oneof(
    { weight: 4, arbitrary: fc.integer({ min: 0, max: 0xffff }) },
    { weight: 3, arbitrary: fc.constantFrom(0, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0x5c, 0x75, 0x30, 0x22, 0x1f) },
    { weight: 2, arbitrary: fc.integer({ min: 0x20, max: 0x7e }) }
  )
  .map((code) => String.fromCharCode(code))

/** Strings of arbitrary code units: lone surrogates, NUL, reversed pairs, escaped-NUL text. */
const nastyString = fc.oneof(
  fc.string({ unit, maxLength: 16 }),
  fc.string({ unit: "binary", maxLength: 16 }),
  fc.constantFrom("\\u0000", "a\u0000b", "\ud83d\ude00", "\ude00\ud83d", "\ud800\ud800\udc00")
)

/** Anything JavaScript holds, strings and keys included at their nastiest. */
const anything = fc.anything({
  key: nastyString,
  stringUnit: unit,
  maxDepth: 4,
  withBigInt: true,
  withBoxedValues: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withNullPrototype: true,
  withObjectString: true,
  withTypedArray: true,
  withSparseArray: true
})

/** Data large enough to need cutting: a few big strings (some wide, some with pairs) among small values. */
const big = fc.dictionary(
  fc.string({ maxLength: 8 }),
  fc.oneof(
    fc.string({ unit, minLength: 10_000, maxLength: 40_000 }),
    fc.string({ unit: "binary", minLength: 5_000, maxLength: 30_000 }),
    fc.nat({ max: 60_000 }).map((n) => "x".repeat(n)),
    fc.nat({ max: 30_000 }).map((n) => "\ud83d\ude00".repeat(n)),
    fc.integer(),
    fc.array(fc.string({ maxLength: 20 }), { maxLength: 20 })
  ),
  { minKeys: 1, maxKeys: 8 }
)

describe("storableEventData: strings Postgres refuses", () => {
  it("writes a NUL as the six characters \\u0000", () => {
    assert.deepStrictEqual(storableEventData({ line: "a\u0000b\u0000" }), { line: "a\\u0000b\\u0000" })
    assert.strictEqual(storableEventData("\u0000"), "\\u0000")
  })

  it("leaves text that merely spells an escaped NUL as it is, the same object", () => {
    const data = { line: "printf '\\u0000' and \\\\u0000" }
    assert.strictEqual(storableEventData(data), data)
  })

  it("escapes lone high and low surrogates in lowercase hex and keeps valid pairs", () => {
    assert.deepStrictEqual(storableEventData(["x\ud800y", "\udc00", "end\udbff", "\uDFFF"]), [
      "x\\ud800y",
      "\\udc00",
      "end\\udbff",
      "\\udfff"
    ])
    // A pair written the wrong way round is two lone halves; a high before a pair is lone.
    assert.deepStrictEqual(storableEventData("\ude00\ud83d"), "\\ude00\\ud83d")
    assert.deepStrictEqual(storableEventData("\ud800\ud800\udc00"), "\\ud800\ud800\udc00")
    const emoji = { line: "ok \ud83d\ude00 \u{1f680}", keys: { "\u{1f600}": "\u{10ffff}" } }
    assert.strictEqual(storableEventData(emoji), emoji)
  })

  it("cleans keys at any depth, as well as values", () => {
    const data = { outer: [{ "k\u0000": { "\ud83d": "v\udc00", ok: "\ud83d\ude00" } }] }
    assert.deepStrictEqual(storableEventData(data), {
      outer: [{ "k\\u0000": { "\\ud83d": "v\\udc00", ok: "\ud83d\ude00" } }]
    })
  })

  it("escapes exactly the NULs and lone surrogates of any string, whatever its code units", () => {
    fc.assert(
      fc.property(nastyString, fc.string({ unit, maxLength: 200 }), (short, long) => {
        for (const text of [short, long]) {
          const out = storableEventData({ [text]: [text] })
          assert.deepStrictEqual(out, { [escapedByHand(text)]: [escapedByHand(text)] })
        }
      }),
      { numRuns: 500 }
    )
  })

  it("never mutates its input", () => {
    const data = { line: "a\u0000", big: "y".repeat(100_000), list: ["\ud800"] }
    const copy = structuredClone(data)
    storableEventData(data)
    assert.deepStrictEqual(data, copy)
  })
})

describe("storableEventData: values JSON cannot carry", () => {
  it("treats them as JSON.stringify does, bigints as their decimal text", () => {
    // A hole at index 3, which JSON writes as null like the three before it.
    const list: Array<unknown> = [undefined, () => 1, Symbol("s")]
    list[4] = 1
    const data = {
      gone: undefined,
      fn: () => 1,
      sym: Symbol("s"),
      nan: Number.NaN,
      inf: Number.NEGATIVE_INFINITY,
      big: 12345678901234567890n,
      at: new Date(0),
      boxed: [Object("s"), Object(2), Object(false)],
      list,
      map: new Map([["a", 1]])
    }
    assert.deepStrictEqual(storableEventData(data), {
      nan: null,
      inf: null,
      big: "12345678901234567890",
      at: "1970-01-01T00:00:00.000Z",
      boxed: ["s", 2, false],
      list: [null, null, null, null, 1],
      map: {}
    })
    // Alone too, so the fast path cannot wave them through.
    assert.deepStrictEqual(storableEventData([Number.POSITIVE_INFINITY, Number.NaN]), [null, null])
    assert.deepStrictEqual(storableEventData({ gone: undefined }), {})
    assert.strictEqual(storableEventData(undefined), null)
    assert.strictEqual(
      storableEventData(() => 1),
      null
    )
    assert.strictEqual(storableEventData(7n), "7")
  })

  it("writes the same JSON as JSON.stringify for anything without bigints or unclean strings", () => {
    fc.assert(
      fc.property(
        fc.anything({
          maxDepth: 4,
          withBoxedValues: true,
          withDate: true,
          withMap: true,
          withSet: true,
          withNullPrototype: true,
          withObjectString: true,
          withTypedArray: true,
          withSparseArray: true
        }),
        (data) => {
          assert.strictEqual(JSON.stringify(storableEventData(data)), JSON.stringify(data) ?? "null")
        }
      ),
      { numRuns: 500 }
    )
  })

  it("replaces a cycle (on which JSON.stringify throws) with null and keeps shared values", () => {
    const shared = { n: 1 }
    const data: Record<string, unknown> = { a: shared, b: shared }
    data.self = data
    assert.deepStrictEqual(storableEventData(data), { a: { n: 1 }, b: { n: 1 }, self: null })
  })

  it(`keeps ${MAX_EVENT_DEPTH} levels of nesting and replaces deeper values with a marker`, () => {
    const nest = (levels: number): unknown => {
      let value: unknown = "leaf"
      for (let i = 0; i < levels; i++) value = [value]
      return value
    }
    const deepest = nest(MAX_EVENT_DEPTH)
    assert.strictEqual(storableEventData(deepest), deepest)
    assert.deepStrictEqual(storableEventData(nest(MAX_EVENT_DEPTH + 1)), cut(MAX_EVENT_DEPTH))
    // Deep enough that JSON.stringify itself would overflow the stack.
    const out = storableEventData(nest(20_000))
    assert.isTrue(JSON.stringify(out).includes(TOO_DEEP_MARKER))
    assert.isTrue(TOO_DEEP_MARKER.startsWith(TRUNCATION_MARKER_PREFIX))
  })
})

/** MAX_EVENT_DEPTH arrays around the too-deep marker, as a value nested one level deeper comes out. */
const cut = (levels: number): unknown => {
  let value: unknown = TOO_DEEP_MARKER
  for (let i = 0; i < levels; i++) value = [value]
  return value
}

describe("storableEventData: size", () => {
  it("cuts a 1 MB line to at most MAX_EVENT_BYTES, keeping its start and ending with the marker", () => {
    const line = Array.from({ length: 1_000_000 }, (_, i) => String.fromCharCode(0x61 + (i % 26))).join("")
    const out = storableEventData({ type: "output", line })
    assert.isAtMost(jsonBytes(out), MAX_EVENT_BYTES)
    const cutLine = (out as { readonly line: string }).line
    const marker = truncationMarker(jsonBytes({ type: "output", line }))
    assert.isTrue(cutLine.endsWith(marker))
    assert.isTrue(cutLine.startsWith(TRUNCATION_MARKER_PREFIX, cutLine.length - marker.length))
    const kept = cutLine.slice(0, -marker.length)
    assert.isTrue(line.startsWith(kept))
    // As much is kept as fits: the marker and the rest of the event take a few hundred bytes.
    assert.isAbove(kept.length, MAX_EVENT_BYTES - 300)
    assert.strictEqual((out as { readonly type: string }).type, "output")
  })

  it("cuts 90,000 '€' (270 KB of UTF-8) between characters, never inside one", () => {
    const euros = "€".repeat(90_000)
    const out = storableEventData(euros)
    assert.isString(out)
    const text = out as string
    assert.isAtMost(jsonBytes(text), MAX_EVENT_BYTES)
    const marker = truncationMarker(270_002)
    assert.isTrue(text.endsWith(marker))
    const kept = text.slice(0, -marker.length)
    assert.match(kept, /^€+$/)
    assert.isAbove(kept.length, (MAX_EVENT_BYTES - 300) / 3)
  })

  it("never cuts between the halves of a surrogate pair, wherever the cut falls", () => {
    fc.assert(
      fc.property(fc.nat({ max: 8 }), fc.nat({ max: 30_000 }), (skew, pairs) => {
        const text = "a".repeat(skew) + "\ud83d\ude00".repeat(17_000 + pairs)
        const out = storableEventData(text) as string
        assert.isAtMost(jsonBytes(out), MAX_EVENT_BYTES)
        assert.isFalse(hasUnstorable(out))
        assert.isTrue(text.startsWith(out.slice(0, out.indexOf(TRUNCATION_MARKER_PREFIX))))
      }),
      { numRuns: 50 }
    )
  })

  it("keeps the shape of large data: same keys, small values intact, long strings cut from their start", () => {
    fc.assert(
      fc.property(big, (data) => {
        const out = storableEventData(data) as Record<string, unknown>
        const clean = Object.fromEntries(
          Object.entries(data).map(([key, value]) => [key, typeof value === "string" ? escapedByHand(value) : value])
        )
        const bytes = jsonBytes(clean)
        assert.isAtMost(jsonBytes(out), MAX_EVENT_BYTES)
        if (bytes <= MAX_EVENT_BYTES) {
          assert.deepStrictEqual(out, clean)
          return
        }
        assert.deepStrictEqual(Object.keys(out), Object.keys(data))
        const marker = truncationMarker(bytes)
        for (const [key, value] of Object.entries(clean)) {
          const got = out[key]
          if (typeof value !== "string") assert.deepStrictEqual(got, value)
          else if (got !== value) {
            assert.isString(got)
            const text = got as string
            assert.isTrue(text.endsWith(marker))
            assert.isTrue(value.startsWith(text.slice(0, -marker.length)))
          }
        }
      }),
      { numRuns: 60 }
    )
  })

  it("falls back to a preview of the JSON when thousands of short strings leave nothing to cut", () => {
    const data = Array.from({ length: 60_000 }, (_, i) => `e${i % 10}`)
    const bytes = jsonBytes(data)
    const out = storableEventData(data) as { truncated: boolean; bytes: number; preview: string }
    assert.isAtMost(jsonBytes(out), MAX_EVENT_BYTES)
    assert.deepStrictEqual(Object.keys(out), ["truncated", "bytes", "preview"])
    assert.strictEqual(out.truncated, true)
    assert.strictEqual(out.bytes, bytes)
    const marker = truncationMarker(bytes)
    assert.isTrue(out.preview.endsWith(marker))
    const kept = out.preview.slice(0, -marker.length)
    assert.isTrue(JSON.stringify(data).startsWith(kept))
    assert.isAbove(jsonBytes(out.preview), MAX_EVENT_BYTES - 300)
  })

  it("falls back to a preview when a key alone is too large (keys are never cut)", () => {
    const out = storableEventData({ ["k".repeat(300_000)]: 1 }) as { truncated: boolean; preview: string }
    assert.strictEqual(out.truncated, true)
    assert.isTrue(out.preview.startsWith('{"kkkk'))
    assert.isAtMost(jsonBytes(out), MAX_EVENT_BYTES)
  })
})

describe("storableEventData: anything", () => {
  it("comes out clean and within MAX_EVENT_BYTES, and a second application returns it unchanged", () => {
    fc.assert(
      fc.property(fc.oneof({ weight: 4, arbitrary: anything }, { weight: 1, arbitrary: big }), (data) => {
        const once = storableEventData(data)
        const text = JSON.stringify(once)
        assert.isString(text)
        assert.isAtMost(Buffer.byteLength(text, "utf8"), MAX_EVENT_BYTES)
        assert.isFalse(hasUnstorable(JSON.parse(text)))
        // Idempotent, and cheaply so: storable data is handed back as the same object.
        assert.strictEqual(storableEventData(once), once)
      }),
      { numRuns: 400 }
    )
  })

  it("returns clean small JSON as the identical object", () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "grapheme", maxDepth: 5 }), (data) => {
        assert.strictEqual(storableEventData(data), data)
      }),
      { numRuns: 500 }
    )
    const event = { type: "tool.call", data: { name: "bash", args: ["-lc", "ls"], ok: true, n: 1.5, none: null } }
    assert.strictEqual(storableEventData(event), event)
  })
})

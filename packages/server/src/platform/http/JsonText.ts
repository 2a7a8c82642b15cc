/**
 * What a JSON text may hold before Bosun parses it: no NUL character and no lone UTF-16 surrogate
 * in any string (Postgres `text`/`jsonb` cannot store either: the write fails, or a `text` column
 * silently gets U+FFFD), and no nesting deeper than a limit (`JSON.stringify`, which every
 * `jsonb` write goes through, recurses and throws a RangeError a few thousand levels down). One
 * linear scan without recursion; it does not check the syntax, which `JSON.parse` does after it.
 */

/** Nesting limit of API request bodies: far above any real configuration or import. */
export const API_BODY_MAX_DEPTH = 64

/** Nesting limit of webhook payloads (GitHub, Slack, Linear), which nest deeper than our own bodies. */
export const WEBHOOK_MAX_DEPTH = 256

export type JsonTextProblem = "nul" | "loneSurrogate" | "tooDeep"

const hexValue = (code: number): number =>
  code >= 48 && code <= 57
    ? code - 48
    : code >= 97 && code <= 102
      ? code - 87
      : code >= 65 && code <= 70
        ? code - 55
        : -1

const isHigh = (unit: number) => unit >= 0xd800 && unit <= 0xdbff
const isLow = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff

/**
 * The first problem of `text` in reading order, or undefined. Inside strings, escapes and raw
 * characters are read as the code units they stand for, so `"\ud83d\ude00"` and a raw pair are
 * fine while a high surrogate followed by anything but a low one (or a low one on its own) is not.
 */
export const jsonTextProblem = (text: string, maxDepth: number): JsonTextProblem | undefined => {
  let depth = 0
  let inString = false
  let pendingHigh = false
  const length = text.length
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i)
    if (!inString) {
      if (code === 0x22) inString = true
      else if (code === 0x5b || code === 0x7b) {
        if (++depth > maxDepth) return "tooDeep"
      } else if (code === 0x5d || code === 0x7d) depth--
      else if (code === 0) return "nul"
      continue
    }
    // Inside a string: `unit` is the code unit this character or escape stands for; -1 for an
    // escape that is no surrogate or NUL (`\n`, `\"`, a malformed one the parser will refuse).
    let unit = code
    if (code === 0x5c) {
      if (text.charCodeAt(i + 1) === 0x75) {
        const a = hexValue(text.charCodeAt(i + 2))
        const b = hexValue(text.charCodeAt(i + 3))
        const c = hexValue(text.charCodeAt(i + 4))
        const d = hexValue(text.charCodeAt(i + 5))
        if (a < 0 || b < 0 || c < 0 || d < 0) {
          unit = -1
          i += 1
        } else {
          unit = (a << 12) | (b << 8) | (c << 4) | d
          i += 5
        }
      } else {
        unit = -1
        i += 1
      }
    } else if (code === 0x22) {
      if (pendingHigh) return "loneSurrogate"
      inString = false
      continue
    }
    if (unit === 0) return "nul"
    if (pendingHigh) {
      if (!isLow(unit)) return "loneSurrogate"
      pendingHigh = false
    } else if (isHigh(unit)) pendingHigh = true
    else if (isLow(unit)) return "loneSurrogate"
  }
  return pendingHigh ? "loneSurrogate" : undefined
}

/** What is wrong, for an error message; never quotes the text itself. */
export const describeJsonTextProblem = (problem: JsonTextProblem, maxDepth: number): string => {
  switch (problem) {
    case "nul":
      return "a string holds a NUL character (\\u0000), which Bosun cannot store"
    case "loneSurrogate":
      return "a string holds a lone UTF-16 surrogate (such as \\ud800 without its pair), which is not valid Unicode"
    case "tooDeep":
      return `the JSON is nested deeper than ${maxDepth} levels`
  }
}

/**
 * Makes a run event's data, which is agent output and so untrusted, storable in a `jsonb` column:
 * no NUL or lone surrogate in any string (Postgres refuses both, and one refused event fails its
 * whole batch), nothing JSON cannot carry, and at most MAX_EVENT_BYTES of JSON. It only cuts: the
 * full text of a cut event is kept nowhere here, only in the runtime's run log.
 */
import { Buffer } from "node:buffer"

/**
 * The most UTF-8 bytes of JSON one stored event's data may take: a long line of output (90 KB of
 * three-byte characters) passes whole, a megabyte is cut. The live stream's rings hold up to 500
 * events of a run, so this also bounds what one run's fan-out can hold in memory.
 */
export const MAX_EVENT_BYTES = 131_072

/**
 * The most levels of arrays and objects kept: `JSON.stringify`, which every `jsonb` write goes
 * through, recurses and throws a RangeError some four thousand levels down, while `JSON.parse`
 * (how events arrive) reads any depth. Deeper values become a marker.
 */
export const MAX_EVENT_DEPTH = 512

/** How every marker this module writes in place of cut text begins. */
export const TRUNCATION_MARKER_PREFIX = "…[truncated by Bosun"

/** The end of each string cut to make an event of `bytes` bytes of JSON fit. */
export const truncationMarker = (bytes: number): string =>
  `${TRUNCATION_MARKER_PREFIX}: the event had ${bytes} bytes; the full text is in the runtime's run log]`

/** What stands in for a value nested deeper than MAX_EVENT_DEPTH. */
export const TOO_DEEP_MARKER = `${TRUNCATION_MARKER_PREFIX}: nested deeper than ${MAX_EVENT_DEPTH} levels; the full text is in the runtime's run log]`

/**
 * Rounds of shortening strings before giving up on keeping the event's shape. The first round
 * should always suffice (its arithmetic is exact); the others are a safety net, and the bound
 * keeps a pathological event from costing more than a few serializations.
 */
const MAX_PASSES = 3

/**
 * The UTF-8 bytes `JSON.stringify(text)` takes, quotes included, or -1 when `text` holds NUL or a
 * lone surrogate. One loop, because it runs over every string of every event on the fast path.
 */
const cleanJsonBytes = (text: string): number => {
  let bytes = 2
  const length = text.length
  for (let i = 0; i < length; i++) {
    const unit = text.charCodeAt(i)
    if (unit < 0x80) {
      if (unit >= 0x20) bytes += unit === 0x22 || unit === 0x5c ? 2 : 1
      else if (unit === 0) return -1
      // \b \t \n \f \r have two-character escapes; the other control characters take \u00XX.
      else bytes += unit === 8 || unit === 9 || unit === 10 || unit === 12 || unit === 13 ? 2 : 6
    } else if (unit < 0x800) bytes += 2
    else if (unit >= 0xd800 && unit <= 0xdfff) {
      const next = text.charCodeAt(i + 1)
      if (unit >= 0xdc00 || !(next >= 0xdc00 && next <= 0xdfff)) return -1
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the two things it exists to find.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** `text` with each NUL and lone surrogate written out as the six characters of its escape. */
const cleanString = (text: string): string =>
  text.replace(UNSTORABLE, (unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`)

/**
 * Whether `value` can be stored as it is: a JSON value (plain objects, dense arrays, finite
 * numbers) with clean strings, within MAX_EVENT_DEPTH and MAX_EVENT_BYTES. The single walk a clean
 * small event gets; it stops at the first thing that needs changing or once the size is exceeded.
 */
const storableAsIs = (value: unknown): boolean => {
  let bytes = 0
  const visit = (item: unknown, depth: number): boolean => {
    switch (typeof item) {
      case "string": {
        const size = cleanJsonBytes(item)
        if (size < 0) return false
        bytes += size
        break
      }
      case "number":
        if (!Number.isFinite(item)) return false
        bytes += String(item).length
        break
      case "boolean":
        bytes += item ? 4 : 5
        break
      case "object": {
        if (item === null) {
          bytes += 4
          break
        }
        if (depth >= MAX_EVENT_DEPTH) return false
        if (Array.isArray(item)) {
          const elements: ReadonlyArray<unknown> = item
          bytes += 1 + Math.max(elements.length, 1)
          // A hole reads as undefined, which fails the visit: JSON writes it as null.
          for (let i = 0; i < elements.length; i++) if (!visit(elements[i], depth + 1)) return false
          break
        }
        const prototype = Object.getPrototypeOf(item)
        if (prototype !== Object.prototype && prototype !== null) return false
        const record = item as Readonly<Record<string, unknown>>
        if (typeof record.toJSON === "function") return false
        const keys = Object.keys(record)
        bytes += 1 + Math.max(keys.length, 1)
        for (const key of keys) {
          const size = cleanJsonBytes(key)
          if (size < 0) return false
          bytes += size + 1
          if (!visit(record[key], depth + 1)) return false
        }
        break
      }
      // undefined, functions and symbols (which JSON drops or writes as null) and bigints.
      default:
        return false
    }
    return bytes <= MAX_EVENT_BYTES
  }
  return visit(value, 0)
}

/** Sets an own enumerable property, even one named `__proto__` (which `=` would take as the prototype). */
const setOwn = (target: Record<string, unknown>, key: string, value: unknown): void => {
  if (key === "__proto__")
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

/** What `JSON.stringify` drops from an object (and writes as null in an array). */
const OMIT: unique symbol = Symbol("omit")

/**
 * A fresh JSON value of what `JSON.stringify(value)` would write, strings and keys cleaned:
 * `toJSON` is called, boxed primitives unboxed, non-finite numbers become null, bigints (which
 * `JSON.stringify` throws on) their decimal text, and a cycle (it throws on that too) null.
 */
const toJsonValue = (value: unknown, key: string, depth: number, ancestors: Set<object>): unknown => {
  let item = value
  if (typeof item === "object" && item !== null) {
    const toJSON = (item as { readonly toJSON?: unknown }).toJSON
    if (typeof toJSON === "function") item = toJSON.call(item, key)
  }
  if (item instanceof Number) item = Number(item)
  else if (item instanceof String) item = String(item)
  else if (item instanceof Boolean || item instanceof BigInt) item = item.valueOf()
  switch (typeof item) {
    case "string":
      return cleanString(item)
    case "number":
      return Number.isFinite(item) ? item : null
    case "boolean":
      return item
    case "bigint":
      return item.toString()
    case "object": {
      if (item === null) return null
      if (depth >= MAX_EVENT_DEPTH) return TOO_DEEP_MARKER
      if (ancestors.has(item)) return null
      ancestors.add(item)
      let out: Array<unknown> | Record<string, unknown>
      if (Array.isArray(item)) {
        const elements: ReadonlyArray<unknown> = item
        const array = new Array<unknown>(elements.length)
        for (let i = 0; i < elements.length; i++) {
          const element = toJsonValue(elements[i], String(i), depth + 1, ancestors)
          array[i] = element === OMIT ? null : element
        }
        out = array
      } else {
        const record = item as Readonly<Record<string, unknown>>
        const object: Record<string, unknown> = {}
        for (const name of Object.keys(record)) {
          const property = toJsonValue(record[name], name, depth + 1, ancestors)
          if (property !== OMIT) setOwn(object, cleanString(name), property)
        }
        out = object
      }
      ancestors.delete(item)
      return out
    }
    default:
      return OMIT
  }
}

/**
 * The longest prefix of `text` whose JSON takes at most `budget` bytes (quotes not counted),
 * never ending between the halves of a surrogate pair.
 */
const prefixWithin = (text: string, budget: number): string => {
  let bytes = 0
  let i = 0
  const length = text.length
  while (i < length) {
    const unit = text.charCodeAt(i)
    let width: number
    let step = 1
    if (unit < 0x80) {
      width =
        unit >= 0x20
          ? unit === 0x22 || unit === 0x5c
            ? 2
            : 1
          : unit === 8 || unit === 9 || unit === 10 || unit === 12 || unit === 13
            ? 2
            : 6
    } else if (unit < 0x800) width = 2
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < length) {
      // Clean text has no lone surrogate, so a high one here starts a pair.
      width = 4
      step = 2
    } else width = 3
    if (bytes + width > budget) break
    bytes += width
    i += step
  }
  return text.slice(0, i)
}

/** A string value in the tree: where it is, and its text without any marker this module added. */
interface Slot {
  readonly holder: Array<unknown> | Record<string, unknown>
  readonly key: string
  readonly base: string
  readonly bytes: number
}

const slotsOf = (root: Array<unknown>, marker: string): Array<Slot> => {
  const slots: Array<Slot> = []
  const visit = (holder: Array<unknown> | Record<string, unknown>) => {
    const record = holder as Record<string, unknown>
    for (const key of Object.keys(holder)) {
      const item = record[key]
      if (typeof item === "string") {
        const base = item.endsWith(marker) ? item.slice(0, -marker.length) : item
        slots.push({ holder, key, base, bytes: cleanJsonBytes(item) })
      } else if (typeof item === "object" && item !== null) visit(item as Array<unknown> | Record<string, unknown>)
    }
  }
  visit(root)
  return slots.sort((a, b) => b.bytes - a.bytes)
}

/**
 * The largest size (JSON bytes) to which cutting every longer string removes at least `excess`
 * bytes, or -1 when even cutting every string to nothing would not (the strings are
 * `sizes`, largest first).
 */
const waterLevel = (sizes: ReadonlyArray<number>, excess: number): number => {
  let sum = 0
  for (let k = 1; k <= sizes.length; k++) {
    sum += sizes[k - 1] ?? 0
    const level = Math.floor((sum - excess) / k)
    if (level >= (sizes[k] ?? 0)) return level
  }
  return -1
}

const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value), "utf8")

/**
 * `value` (a fresh JSON value of clean strings, which this mutates) cut to MAX_EVENT_BYTES: the
 * longest strings shortened to a common length and marked, or, when that cannot make it fit
 * (thousands of short strings, huge keys), a preview of its JSON text.
 */
const bounded = (value: unknown): unknown => {
  const text = JSON.stringify(value)
  const total = Buffer.byteLength(text, "utf8")
  if (total <= MAX_EVENT_BYTES) return value
  const marker = truncationMarker(total)
  const markerBytes = cleanJsonBytes(marker) - 2
  // A holder for the top level, so a top-level string is cut like any other.
  const root: Array<unknown> = [value]
  let size = total
  for (let pass = 0; pass < MAX_PASSES && size > MAX_EVENT_BYTES; pass++) {
    const slots = slotsOf(root, marker)
    const level = waterLevel(
      slots.map((slot) => slot.bytes),
      size - MAX_EVENT_BYTES
    )
    if (level < markerBytes + 2) break
    for (const slot of slots) {
      if (slot.bytes <= level) break
      setOwn(
        slot.holder as Record<string, unknown>,
        slot.key,
        prefixWithin(slot.base, level - 2 - markerBytes) + marker
      )
    }
    size = jsonBytes(root[0])
  }
  if (size <= MAX_EVENT_BYTES) return root[0]
  const room = MAX_EVENT_BYTES - jsonBytes({ truncated: true, bytes: total, preview: "" }) - markerBytes
  return { truncated: true, bytes: total, preview: prefixWithin(text, room) + marker }
}

/**
 * Run event data as it may be stored: a JSON value Postgres `jsonb` accepts whose JSON is at most
 * MAX_EVENT_BYTES. Each NUL and lone surrogate in a string or key becomes the six characters of its
 * escape (`\u0000`, `\ud800`); what JSON cannot carry is treated as `JSON.stringify` treats it
 * (bigints become their decimal text, a top-level undefined null); too large data has its longest
 * strings cut and ended with `truncationMarker`. Data needing none of this is returned as it is.
 */
export const storableEventData = (data: unknown): unknown => {
  if (storableAsIs(data)) return data
  const value = toJsonValue(data, "", 0, new Set())
  return bounded(value === OMIT ? null : value)
}

/**
 * Reading a repository's `.bosun.yaml` text: parsing it into a `BosunConfigFile` or into the one
 * problem to show its authors, at the line and column it sits on; and turning its
 * `path_instructions` into the prompt section for a review's changed files. Pure: fetching the file
 * and applying the result belong to the review.
 */
import {
  BOSUN_CONFIG_FILE,
  BOSUN_CONFIG_PARSE_OPTIONS,
  BosunConfigFile,
  BosunConfigPathInstruction,
  BosunConfigReviewPolicy,
  MAX_BOSUN_CONFIG_BYTES
} from "@bosun/domain"
import type { PathInstruction } from "@bosun/domain/RepositoryConfiguration"
import { Result, Schema } from "effect"
import picomatch from "picomatch"
import { isAlias, isMap, isScalar, isSeq, LineCounter, type Pair, parseDocument, type YAMLMap } from "yaml"
import { issueLines } from "../../platform/http/SchemaIssues.ts"

export type ParsedBosunConfig = { readonly _tag: "Valid"; readonly config: BosunConfigFile } | InvalidBosunConfig

export interface InvalidBosunConfig {
  readonly _tag: "Invalid"
  /** 1-based, at the node the problem is about. */
  readonly line: number
  readonly column: number
  /** Where in the file, e.g. `review_policy.strictness` or `path_instructions[2].path`; "" for the file. */
  readonly path: string
  /** `<path>: <what is wrong> (line <n>)`. */
  readonly message: string
}

type Segment = string | number

const renderPath = (segments: ReadonlyArray<Segment>): string =>
  segments.reduce<string>((path, s) => (typeof s === "number" ? `${path}[${s}]` : path === "" ? s : `${path}.${s}`), "")

/** Key names come from the file; a long one is cut so the message stays a line. */
const quote = (key: string) => JSON.stringify(key.length > 60 ? `${key.slice(0, 60)}…` : key)

const invalid = (
  position: { readonly line: number; readonly col: number },
  segments: ReadonlyArray<Segment>,
  detail: string
): InvalidBosunConfig => {
  const path = renderPath(segments)
  return {
    _tag: "Invalid",
    line: position.line,
    column: position.col,
    path,
    message: `${path === "" ? "" : `${path}: `}${detail} (line ${position.line})`
  }
}

const START = { line: 1, col: 1 }

const keyName = (key: unknown): string => (isScalar(key) ? String(key.value) : "?")

const startOf = (node: unknown): number | undefined => {
  if (isScalar(node) || isMap(node) || isSeq(node) || isAlias(node)) return node.range?.[0]
  return undefined
}

interface PairAt {
  readonly pair: Pair
  readonly map: YAMLMap
  readonly path: ReadonlyArray<Segment>
}

/** Every key/value pair with its path, in document order; aliases are not followed (no repeats, no cycles). */
function* pairsOf(node: unknown, path: ReadonlyArray<Segment>): Generator<PairAt> {
  if (isMap(node)) {
    for (const pair of node.items) {
      const at = [...path, keyName(pair.key)]
      yield { pair, map: node, path: at }
      yield* pairsOf(pair.value, at)
    }
  } else if (isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) yield* pairsOf(node.items[i], [...path, i])
  }
}

function* nodesOf(node: unknown, path: ReadonlyArray<Segment>): Generator<{ node: unknown; path: Segment[] }> {
  yield { node, path: [...path] }
  if (isMap(node)) for (const pair of node.items) yield* nodesOf(pair.value, [...path, keyName(pair.key)])
  else if (isSeq(node)) for (let i = 0; i < node.items.length; i++) yield* nodesOf(node.items[i], [...path, i])
}

// The keys each mapping of the file takes, by its path with list indexes as "*".
const ALLOWED_KEYS: Record<string, ReadonlyArray<string>> = {
  "": Object.keys(BosunConfigFile.fields),
  review_policy: Object.keys(BosunConfigReviewPolicy.fields),
  "path_instructions.*": Object.keys(BosunConfigPathInstruction.fields)
}

const allowedKeysAt = (parent: ReadonlyArray<Segment>) =>
  ALLOWED_KEYS[parent.map((s) => (typeof s === "number" ? "*" : s)).join(".")]

const editDistance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      )
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

const unknownKey = (key: string, allowed: ReadonlyArray<string>) => {
  const near = allowed.find((k) => editDistance(key.toLowerCase(), k) <= 2)
  return near === undefined
    ? `unknown key ${quote(key)}; the keys here are ${allowed.join(", ")}`
    : `unknown key ${quote(key)} (did you mean "${near}"?)`
}

interface Located {
  readonly offset: number
  readonly segments: ReadonlyArray<Segment>
  /** The YAML node the issue is about, when the file has it (a missing key has none). */
  readonly node: unknown
  readonly unknownKey?: { readonly key: string; readonly allowed: ReadonlyArray<string> }
}

/**
 * The YAML node a schema issue's path names. Schema paths carry list indexes as strings; the
 * document tells which segments are indexes. A missing key points at the mapping that lacks it.
 */
const locate = (doc: ReturnType<typeof parseDocument>, path: ReadonlyArray<string>): Located => {
  let node: unknown = doc.contents
  let offset = startOf(node) ?? 0
  const segments: Array<Segment> = []
  for (let i = 0; i < path.length; i++) {
    const segment = path[i] ?? ""
    if (isAlias(node)) node = node.resolve(doc)
    if (isSeq(node) && /^\d+$/.test(segment)) {
      segments.push(Number(segment))
      node = node.items[Number(segment)]
      offset = startOf(node) ?? offset
      continue
    }
    segments.push(segment)
    const pair = isMap(node) ? node.items.find((p) => keyName(p.key) === segment) : undefined
    if (pair === undefined) {
      node = undefined
      for (const rest of path.slice(i + 1)) segments.push(/^\d+$/.test(rest) ? Number(rest) : rest)
      break
    }
    const allowed = allowedKeysAt(segments.slice(0, -1))
    if (allowed !== undefined && !allowed.includes(segment)) {
      return { offset: startOf(pair.key) ?? offset, segments, node: pair.key, unknownKey: { key: segment, allowed } }
    }
    node = pair.value
    // `key:` with nothing after it (an empty node, or none): the key is the place to point at.
    const range = isScalar(node) ? node.range : undefined
    const empty = range != null && range[0] === range[1]
    offset = (empty ? undefined : startOf(node)) ?? startOf(pair.key) ?? offset
  }
  return { offset, segments, node }
}

/** What a YAML node holds, as a phrase ("a list", "a number"); "nothing" for an empty value. */
const kind = (node: unknown): string => {
  if (isAlias(node)) return "an alias"
  if (isMap(node)) return "a mapping"
  if (isSeq(node)) return "a list"
  if (!isScalar(node) || node.value === null || node.value === undefined) return "nothing"
  if (node.value instanceof Date) return "a date"
  if (typeof node.value === "object") return "binary data"
  return `a ${typeof node.value}`
}

/** Schema's wording said for YAML, e.g. "Expected object" → "expected a mapping of keys, got a list". */
const humanize = (message: string, node: unknown): string => {
  const got = kind(node)
  const gotText = got === "nothing" ? "the key has no value" : `got ${got}`
  const literals = /^Expected ("[^"]*"(?: \| "[^"]*")+)$/.exec(message)
  if (literals) return `expected one of ${literals[1]}`
  const length = /^Expected a value with a length of (at most|at least) (\d+)$/.exec(message)
  if (length?.[1] === "at least" && length[2] === "1") return "must not be empty"
  if (length) {
    const unit = got === "a list" ? "entries" : "characters"
    return `expected ${length[1]} ${length[2]} ${unit}`
  }
  switch (message) {
    case "Expected object":
      return `expected a mapping of keys, ${gotText}`
    case "Expected array":
      return `expected a list, ${gotText}`
    case "Expected string":
      return `expected text, ${gotText}`
    case "Expected boolean":
      return `expected true or false, ${gotText}`
    case "Missing key":
      return "missing; this key is required"
    default:
      return message.charAt(0).toLowerCase() + message.slice(1)
  }
}

const decode = Schema.decodeUnknownResult(BosunConfigFile, BOSUN_CONFIG_PARSE_OPTIONS)

/**
 * Parses `.bosun.yaml`. An empty file (or one of comments only) is a valid, empty configuration.
 * Of several problems the first in the file is reported, so fixing from the top works.
 */
export const parseBosunConfig = (text: string): ParsedBosunConfig => {
  const bytes = Buffer.byteLength(text, "utf8")
  if (bytes > MAX_BOSUN_CONFIG_BYTES) {
    return invalid(
      START,
      [],
      `the file is ${bytes} bytes; Bosun reads at most ${MAX_BOSUN_CONFIG_BYTES} bytes (64 KiB)`
    )
  }
  const lineCounter = new LineCounter()
  // YAML 1.2's core schema unless the file says `%YAML 1.1`: no `<<` merge keys, no timestamps.
  // Duplicate keys are errors.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true })
  const at = (offset: number) => lineCounter.linePos(offset)

  const error = doc.errors[0]
  if (error !== undefined) {
    if (error.code === "DUPLICATE_KEY") {
      for (const { pair, map, path } of pairsOf(doc.contents, [])) {
        if (startOf(pair.key) !== error.pos[0]) continue
        const first = map.items.find((p) => keyName(p.key) === keyName(pair.key))
        const firstLine = at(startOf(first?.key) ?? 0).line
        return invalid(at(error.pos[0]), path, `duplicate key; it is first set on line ${firstLine}`)
      }
    }
    if (error.code === "MULTIPLE_DOCS") {
      return invalid(at(error.pos[0]), [], "the file holds more than one YAML document (a --- line); Bosun reads one")
    }
    return invalid(at(error.pos[0]), [], `YAML syntax error: ${error.message}`)
  }

  // toJS would stringify a key that is a list, a mapping or binary data (and warn on the process);
  // no key of ours is one.
  for (const { pair, path } of pairsOf(doc.contents, [])) {
    if (!isScalar(pair.key) || (typeof pair.key.value === "object" && pair.key.value !== null)) {
      return invalid(at(startOf(pair.key) ?? 0), path.slice(0, -1), "keys must be plain names, not lists or mappings")
    }
  }

  let data: unknown
  try {
    data = doc.toJS({ maxAliasCount: 100 })
  } catch (cause) {
    // Only aliases make toJS throw: one naming no earlier anchor, or so many that they look like a bomb.
    for (const { node, path } of nodesOf(doc.contents, [])) {
      if (isAlias(node) && node.resolve(doc) === undefined) {
        return invalid(at(startOf(node) ?? 0), path, `alias *${node.source} names no anchor set before it`)
      }
    }
    return invalid(START, [], `the file could not be read: ${cause instanceof Error ? cause.message : String(cause)}`)
  }

  if (data === null || data === undefined) return { _tag: "Valid", config: {} }
  if (!isMap(doc.contents)) {
    return invalid(
      at(startOf(doc.contents) ?? 0),
      [],
      `the file must be a mapping of keys (${ALLOWED_KEYS[""]?.join(", ")}), not ${kind(doc.contents)}`
    )
  }

  const decoded = decode(data)
  if (Result.isSuccess(decoded)) return { _tag: "Valid", config: decoded.success }

  let first: InvalidBosunConfig | undefined
  for (const line of issueLines(decoded.failure.issue)) {
    const located = locate(doc, line.path)
    const detail = located.unknownKey
      ? unknownKey(located.unknownKey.key, located.unknownKey.allowed)
      : humanize(line.message, located.node)
    const candidate = invalid(at(located.offset), located.segments, detail)
    if (
      first === undefined ||
      candidate.line < first.line ||
      (candidate.line === first.line && candidate.column < first.column)
    ) {
      first = candidate
    }
  }
  return first ?? invalid(START, [], "the file does not match the configuration schema")
}

/** One sentence for a review summary saying why the file was not used. */
export const describeInvalidConfig = (result: InvalidBosunConfig): string => {
  const suffix = ` (line ${result.line})`
  const message = result.message.endsWith(suffix) ? result.message.slice(0, -suffix.length) : result.message
  return `\`${BOSUN_CONFIG_FILE}\` line ${result.line}: ${message} — the file was ignored for this review.`
}

export interface PathInstructionMatch {
  readonly path: string
  readonly instructions: string
  /** The files the glob matched, in the order they were given. */
  readonly files: ReadonlyArray<string>
}

/**
 * A path instruction's matcher. Like CodeRabbit's path_instructions, a glob without a `/` matches
 * file names at any depth (`*.ts` matches `src/a.ts`, `Dockerfile` matches `ops/Dockerfile`); one
 * with a `/` matches whole paths from the repository root (`src/*.ts` does not match
 * `lib/src/a.ts`). Dotfiles match; paths are always `/`-separated, as GitHub gives them.
 */
export const pathInstructionMatcher = (glob: string): ((file: string) => boolean) => {
  try {
    return picomatch(glob, { dot: true, windows: false, basename: !glob.includes("/") })
  } catch {
    // The schema only lets well-formed globs in; one picomatch still refuses matches nothing.
    return () => false
  }
}

/** For each entry, the files it applies to; entries matching none of the files are left out. */
export const pathInstructionsFor = (
  files: ReadonlyArray<string>,
  entries: ReadonlyArray<PathInstruction>
): ReadonlyArray<PathInstructionMatch> =>
  entries.flatMap((entry) => {
    const matches = pathInstructionMatcher(entry.path)
    const matched = files.filter((file) => matches(file))
    return matched.length === 0 ? [] : [{ path: entry.path, instructions: entry.instructions, files: matched }]
  })

/** Files listed per instruction in the prompt; the rest are counted, not named. */
export const MAX_LISTED_FILES = 50

/** Markdown inline code that survives backticks inside the text (a file name may hold some). */
const code = (text: string) => {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length))
  const fence = "`".repeat(longest + 1)
  const pad = text.startsWith("`") || text.endsWith("`") ? " " : ""
  return `${fence}${pad}${text}${pad}${fence}`
}

const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? "" : "s"}`

/** The prompt section for the matched path instructions; "" when none matched. */
export const renderPathInstructions = (matches: ReadonlyArray<PathInstructionMatch>): string => {
  if (matches.length === 0) return ""
  const sections = matches.map((match, i) => {
    const listed = match.files.slice(0, MAX_LISTED_FILES).map((file) => `- ${code(file)}`)
    const more = match.files.length - listed.length
    if (more > 0) listed.push(`- … and ${plural(more, "more file")}`)
    const quoted = match.instructions
      .trim()
      .split(/\r?\n/)
      .map((line) => (line === "" ? ">" : `> ${line}`))
    return [
      `### ${i + 1}. ${code(match.path)}`,
      "",
      ...quoted,
      "",
      `Applies to ${plural(match.files.length, "changed file")}:`,
      ...listed
    ].join("\n")
  })
  return [
    "## Path instructions",
    "",
    `From the repository's ${code(BOSUN_CONFIG_FILE)}. Follow each instruction for the files listed under it, and only for those.`,
    "",
    sections.join("\n\n"),
    ""
  ].join("\n")
}

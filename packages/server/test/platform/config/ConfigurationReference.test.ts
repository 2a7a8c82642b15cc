/**
 * `docs/configuration-reference.md` against the code: the file is what `npm run docs:config` writes
 * from `Settings.ts`, and `Settings.ts` names exactly the variables the configuration modules read,
 * with the defaults they fall back to, so neither a new setting nor a changed default goes unsaid.
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import {
  renderConfigurationReference,
  SETTING_GROUPS,
  type SettingsGroup
} from "@bosun/server/platform/config/Settings"
import { assert, describe, it } from "@effect/vitest"

const read = (fromRepositoryRoot: string) =>
  readFileSync(fileURLToPath(new URL(`../../../../../${fromRepositoryRoot}`, import.meta.url)), "utf8")

/** The modules that read each process's settings; `SettingsGroup.process` says which a group belongs to. */
const SOURCES: Record<SettingsGroup["process"], ReadonlyArray<string>> = {
  server: ["packages/server/src/platform/config/AppConfig.ts", "packages/server/src/platform/config/SandboxConfig.ts"],
  runtime: ["packages/runtime/src/RuntimeConfig.ts"]
}

/**
 * A variable name is an upper-case string literal with an underscore (`"BOSUN_PORT"`,
 * `"DATABASE_URL"`), wherever it stands: in `Config.String(…)`, through a helper, or in a
 * constant. Error messages quote names inside longer strings, which this does not match.
 */
const NAME = /"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"/g

const documented = (kind: SettingsGroup["process"]) =>
  new Map(
    SETTING_GROUPS.filter((group: SettingsGroup) => group.process === kind).flatMap((group: SettingsGroup) =>
      group.settings.map((s) => [s.name, s] as const)
    )
  )

const namesIn = (source: string) => new Set(Array.from(source.matchAll(NAME), (match) => match[1] ?? ""))

/** The expression starting at `from`, up to the `,` or `)` that closes it. */
const expressionAt = (source: string, from: number): string => {
  let depth = 0
  for (let i = from; i < source.length; i++) {
    const c = source[i]
    if (c === '"') i = source.indexOf('"', i + 1)
    else if (c === "(" || c === "[" || c === "{") depth++
    else if (c === ")" || c === "]" || c === "}") {
      if (depth === 0) return source.slice(from, i).trim()
      depth--
    } else if (c === "," && depth === 0) return source.slice(from, i).trim()
  }
  return source.slice(from).trim()
}

/**
 * The default the code gives a variable: the second argument of the `duration` and
 * `credentialedApiUrl` helpers, else the `Config.withDefault(…)` of the expression that reads it
 * (up to the next property, blank line or variable name).
 */
const codeDefaults = (source: string): Array<{ readonly name: string; readonly expression: string }> => {
  const matches = Array.from(source.matchAll(NAME))
  return matches.flatMap((match, i) => {
    const name = match[1] ?? ""
    const start = match.index
    const end = start + match[0].length
    if (/\b(duration|credentialedApiUrl)\(\s*$/.test(source.slice(Math.max(0, start - 30), start))) {
      const rest = source.slice(end)
      const comma = /^\s*,\s*/.exec(rest)
      return comma === null ? [] : [{ name, expression: expressionAt(source, end + comma[0].length) }]
    }
    const next = matches[i + 1]?.index ?? source.length
    const segment = source.slice(end, next).split(/\n\s*[A-Za-z]+:\s|\n\s*\n|\n\}/)[0] ?? ""
    const withDefault = /Config\.withDefault(?:<[^>]*>)?\(/.exec(segment)
    return withDefault === null
      ? []
      : [{ name, expression: expressionAt(segment, withDefault.index + withDefault[0].length) }]
  })
}

const DURATION_UNITS: Record<string, string> = {
  millis: "millis",
  seconds: "second",
  minutes: "minute",
  hours: "hour",
  days: "day"
}

/**
 * A literal default as the reference writes it (`Duration.seconds(55)` is `55 seconds`); undefined
 * for one computed from a name (a path of this checkout, a joined list), which only a person can
 * describe.
 */
const shown = (expression: string): string | undefined => {
  const duration = /^Duration\.(\w+)\((\d+)\)$/.exec(expression)
  if (duration !== null) {
    const [, unit = "", amount = ""] = duration
    const word = DURATION_UNITS[unit]
    if (word === undefined) throw new Error(`unknown Duration unit in ${expression}`)
    return `${amount} ${amount === "1" || word === "millis" ? word : `${word}s`}`
  }
  if (/^[0-9_]+$/.test(expression)) return expression.replaceAll("_", "")
  const text = /^"([^"]*)"(?: as const)?$/.exec(expression) ?? /^new URL\("([^"]*)"\)$/.exec(expression)
  if (text !== null) return text[1]
  if (expression === "true" || expression === "false" || expression === "{}") return expression
  if (/^[A-Za-z_][\w.]*(\(.*\))?$/.test(expression) && !expression.startsWith("Duration.")) return undefined
  throw new Error(`a default this test cannot read: ${expression}; teach shown() its form`)
}

describe("the configuration reference", () => {
  it("docs/configuration-reference.md is what npm run docs:config writes", () => {
    assert.strictEqual(
      read("docs/configuration-reference.md"),
      renderConfigurationReference(),
      "docs/configuration-reference.md is stale: run npm run docs:config"
    )
  })

  for (const kind of ["server", "runtime"] as const) {
    it(`documents exactly the ${kind} settings its modules read`, () => {
      const docs = documented(kind)
      const inCode = new Set(SOURCES[kind].flatMap((file) => [...namesIn(read(file))]))
      const undocumented = [...inCode].filter((name) => !docs.has(name))
      const stale = [...docs.keys()].filter((name) => !inCode.has(name))
      assert.deepStrictEqual(
        undocumented,
        [],
        `read by ${SOURCES[kind].join(", ")} but not in Settings.ts (add them, then run npm run docs:config)`
      )
      assert.deepStrictEqual(stale, [], `in Settings.ts but no longer read by ${SOURCES[kind].join(", ")}`)
    })

    it(`gives each ${kind} setting the default its module falls back to`, () => {
      const docs = documented(kind)
      const found = SOURCES[kind].flatMap((file) => codeDefaults(read(file)))
      const checked = found.flatMap(({ name, expression }) => {
        const value = shown(expression)
        return value === undefined ? [] : [{ name, value }]
      })
      for (const { name, value } of checked) {
        const doc = docs.get(name)
        assert.isTrue(
          doc?.default.startsWith(`\`${value}\``),
          `${name} defaults to ${value} in the code but Settings.ts says ${JSON.stringify(doc?.default)}`
        )
      }
      // The scan is only worth something while it finds the defaults: most settings have one.
      assert.isAbove(checked.length, docs.size / 3, `only ${checked.length} defaults found: the scan no longer matches`)
    })
  }

  it("lists every setting once per process, and each in the written file", () => {
    const file = read("docs/configuration-reference.md")
    for (const kind of ["server", "runtime"] as const) {
      const names = SETTING_GROUPS.filter((group: SettingsGroup) => group.process === kind).flatMap(
        (group: SettingsGroup) => group.settings.map((s) => s.name)
      )
      assert.deepStrictEqual(
        names.filter((name, i) => names.indexOf(name) !== i),
        [],
        `listed twice among the ${kind} settings`
      )
      for (const name of names) assert.include(file, `| \`${name}\``, `${name} is missing from the written file`)
    }
  })
})

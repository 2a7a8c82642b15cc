/**
 * `.bosun.yaml`: parsing (every way a file can be wrong, pinned to its line and column; any valid
 * configuration written as YAML reads back equal), path instructions matched to changed files and
 * rendered for the prompt, and the JSON Schema editors validate the file with.
 */
import {
  BOSUN_CONFIG_SCHEMA_PATH,
  type BosunConfigFile,
  bosunConfigJsonSchema,
  MAX_BOSUN_CONFIG_BYTES
} from "@bosun/domain"
import { MAX_INSTRUCTION_LENGTH, type PathInstruction } from "@bosun/domain/RepositoryConfiguration"
import { assert, describe, it } from "@effect/vitest"
import { Ajv } from "ajv"
import fc from "fast-check"
import picomatch from "picomatch"
import { stringify } from "yaml"
import {
  describeInvalidConfig,
  type InvalidBosunConfig,
  type ParsedBosunConfig,
  type PathInstructionMatch,
  parseBosunConfig,
  pathInstructionsFor,
  renderPathInstructions
} from "../../../src/features/agentConnections/BosunConfigFile.ts"

const lines = (...text: ReadonlyArray<string>) => `${text.join("\n")}\n`

const valid = (result: ParsedBosunConfig): BosunConfigFile => {
  if (result._tag !== "Valid") assert.fail(`expected a valid file, got: ${result.message}`)
  return result.config
}

const invalid = (result: ParsedBosunConfig): InvalidBosunConfig => {
  if (result._tag !== "Invalid") assert.fail(`expected an invalid file, got ${JSON.stringify(result.config)}`)
  return result
}

const assertInvalid = (
  text: string,
  expected: { line: number; column: number; path: string; message: string }
): InvalidBosunConfig => {
  const result = invalid(parseBosunConfig(text))
  assert.strictEqual(result._tag, "Invalid")
  assert.strictEqual(result.line, expected.line)
  assert.strictEqual(result.column, expected.column)
  assert.strictEqual(result.path, expected.path)
  assert.strictEqual(result.message, expected.message)
  return result
}

describe("parseBosunConfig", () => {
  it("reads every key of a full file", () => {
    const config = valid(
      parseBosunConfig(
        lines(
          "# Bosun settings for this repository",
          "review_policy:",
          "  comment_limit: 5",
          "  excluded_authors: ['dependabot[bot]', intern]",
          "  excluded_paths:",
          "    - dist/**",
          "    - '!dist/keep.ts'",
          "  max_changed_files: 40",
          "  review_drafts: true",
          "  review_on_open: true",
          "  review_on_push: false",
          "  review_on_ready: true",
          "  review_on_reopen: false",
          "  strictness: HIGH",
          "  guidance: Focus on correctness.",
          "custom_instructions: |",
          "  Prefer Effect over promises.",
          "  No any.",
          "path_instructions:",
          "  - path: '**/*.sql'",
          "    instructions: Check every query filters by organization_id.",
          "  - path: '*.ts'",
          "    instructions: >-",
          "      Flag try/catch",
          "      inside Effect.gen."
        )
      )
    )
    const policy = config.review_policy
    assert.isDefined(policy)
    assert.strictEqual(policy?.comment_limit, 5)
    assert.deepStrictEqual(policy?.excluded_authors, ["dependabot[bot]", "intern"])
    assert.deepStrictEqual(policy?.excluded_paths, ["dist/**", "!dist/keep.ts"])
    assert.strictEqual(policy?.max_changed_files, 40)
    assert.strictEqual(policy?.review_drafts, true)
    assert.strictEqual(policy?.review_on_open, true)
    assert.strictEqual(policy?.review_on_push, false)
    assert.strictEqual(policy?.review_on_ready, true)
    assert.strictEqual(policy?.review_on_reopen, false)
    assert.strictEqual(policy?.strictness, "HIGH")
    assert.strictEqual(policy?.guidance, "Focus on correctness.")
    assert.strictEqual(config.custom_instructions, "Prefer Effect over promises.\nNo any.\n")
    assert.deepStrictEqual(config.path_instructions, [
      { path: "**/*.sql", instructions: "Check every query filters by organization_id." },
      { path: "*.ts", instructions: "Flag try/catch inside Effect.gen." }
    ])
  })

  it("keeps only the keys the file sets", () => {
    const config = valid(parseBosunConfig(lines("review_policy:", "  strictness: LOW")))
    assert.deepStrictEqual(Object.keys(config), ["review_policy"])
    assert.deepStrictEqual(config.review_policy, { strictness: "LOW" })
  })

  it("takes an empty file, or one of comments only, as an empty configuration", () => {
    assert.deepStrictEqual(parseBosunConfig(""), { _tag: "Valid", config: {} })
    assert.deepStrictEqual(parseBosunConfig(lines("# nothing yet", "")), { _tag: "Valid", config: {} })
    assert.deepStrictEqual(parseBosunConfig("   \n\n"), { _tag: "Valid", config: {} })
  })

  it("points a YAML syntax error at its line", () => {
    assertInvalid(lines("custom_instructions: hi", "review_policy:", "  strictness: 'HIGH"), {
      line: 4,
      column: 1,
      path: "",
      message: "YAML syntax error: Missing closing 'quote (line 4)"
    })
    assertInvalid(lines("review_policy:", "  comment_limit: 3", " strictness: HIGH"), {
      line: 3,
      column: 1,
      path: "",
      message: "YAML syntax error: All mapping items must start at the same column (line 3)"
    })
  })

  it("refuses a file holding several YAML documents", () => {
    assertInvalid(lines("custom_instructions: a", "---", "custom_instructions: b"), {
      line: 2,
      column: 1,
      path: "",
      message: "the file holds more than one YAML document (a --- line); Bosun reads one (line 2)"
    })
  })

  it("refuses a document that is not a mapping", () => {
    assertInvalid(lines("# a list", "- review_policy", "- custom_instructions"), {
      line: 2,
      column: 1,
      path: "",
      message:
        "the file must be a mapping of keys (review_policy, custom_instructions, path_instructions), not a list (line 2)"
    })
    assertInvalid(lines("just some text"), {
      line: 1,
      column: 1,
      path: "",
      message:
        "the file must be a mapping of keys (review_policy, custom_instructions, path_instructions), not a string (line 1)"
    })
  })

  it("refuses a file over 64 KiB before parsing it", () => {
    const text = `custom_instructions: ${"é".repeat(MAX_BOSUN_CONFIG_BYTES / 2)}\n`
    assertInvalid(text, {
      line: 1,
      column: 1,
      path: "",
      message: `the file is ${21 + MAX_BOSUN_CONFIG_BYTES + 1} bytes; Bosun reads at most 65536 bytes (64 KiB) (line 1)`
    })
    // The limit is on bytes, not characters: the same text of one-byte characters is read.
    valid(parseBosunConfig(`custom_instructions: ${"e".repeat(MAX_BOSUN_CONFIG_BYTES / 4)}\n`))
  })

  it("names an unknown top-level key and its line, listing the keys or suggesting the near one", () => {
    assertInvalid(lines("custom_instructions: hi", "", "reviews:", "  strictness: HIGH"), {
      line: 3,
      column: 1,
      path: "reviews",
      message:
        'reviews: unknown key "reviews"; the keys here are review_policy, custom_instructions, path_instructions (line 3)'
    })
    assertInvalid(lines("review-policy:", "  strictness: HIGH"), {
      line: 1,
      column: 1,
      path: "review-policy",
      message: 'review-policy: unknown key "review-policy" (did you mean "review_policy"?) (line 1)'
    })
  })

  it("names an unknown key inside review_policy and inside a path instruction", () => {
    assertInvalid(lines("review_policy:", "  comment_limit: 3", "  Strictnes: HIGH"), {
      line: 3,
      column: 3,
      path: "review_policy.Strictnes",
      message: 'review_policy.Strictnes: unknown key "Strictnes" (did you mean "strictness"?) (line 3)'
    })
    assertInvalid(
      lines(
        "path_instructions:",
        "  - path: src/**",
        "    instructions: one",
        "  - path: lib/**",
        "    instructions: two",
        "    severity: high"
      ),
      {
        line: 6,
        column: 5,
        path: "path_instructions[1].severity",
        message: 'path_instructions[1].severity: unknown key "severity"; the keys here are path, instructions (line 6)'
      }
    )
  })

  it("points a wrong type at the value", () => {
    assertInvalid(lines("review_policy:", "  comment_limit: 5", "  strictness: EXTREME"), {
      line: 3,
      column: 15,
      path: "review_policy.strictness",
      message: 'review_policy.strictness: expected one of "LOW" | "MEDIUM" | "HIGH" (line 3)'
    })
    assertInvalid(lines("review_policy:", "  review_drafts: yes"), {
      line: 2,
      column: 18,
      path: "review_policy.review_drafts",
      message: "review_policy.review_drafts: expected true or false, got a string (line 2)"
    })
    assertInvalid(lines("review_policy:", "  comment_limit: 2.5"), {
      line: 2,
      column: 18,
      path: "review_policy.comment_limit",
      message: "review_policy.comment_limit: expected an integer (line 2)"
    })
    assertInvalid(lines("review_policy:", "  max_changed_files: 0"), {
      line: 2,
      column: 22,
      path: "review_policy.max_changed_files",
      message: "review_policy.max_changed_files: expected a value greater than or equal to 1 (line 2)"
    })
    assertInvalid(lines("review_policy:", "  excluded_authors: dependabot"), {
      line: 2,
      column: 21,
      path: "review_policy.excluded_authors",
      message: "review_policy.excluded_authors: expected a list, got a string (line 2)"
    })
    assertInvalid(lines("path_instructions:", "  path: src/**"), {
      line: 2,
      column: 3,
      path: "path_instructions",
      message: "path_instructions: expected a list, got a mapping (line 2)"
    })
    assertInvalid(lines("review_policy:", "  guidance: 42"), {
      line: 2,
      column: 13,
      path: "review_policy.guidance",
      message: "review_policy.guidance: expected text, got a number (line 2)"
    })
    assertInvalid(lines("custom_instructions:", "  - one", "  - two"), {
      line: 2,
      column: 3,
      path: "custom_instructions",
      message: "custom_instructions: expected text, got a list (line 2)"
    })
  })

  it("says when a key that needs a mapping has no value", () => {
    assertInvalid(lines("review_policy:", "#  strictness: HIGH"), {
      line: 1,
      column: 1,
      path: "review_policy",
      message: "review_policy: expected a mapping of keys, the key has no value (line 1)"
    })
  })

  it("refuses an instruction over 20,000 characters wherever it is", () => {
    const long = "a".repeat(MAX_INSTRUCTION_LENGTH + 1)
    assertInvalid(lines("custom_instructions: ok", `review_policy:`, `  guidance: ${long}`), {
      line: 3,
      column: 13,
      path: "review_policy.guidance",
      message: "review_policy.guidance: expected at most 20000 characters (line 3)"
    })
    assertInvalid(lines("path_instructions:", "  - path: '*.ts'", "    instructions: |", `      ${long}`), {
      line: 3,
      column: 19,
      path: "path_instructions[0].instructions",
      message: "path_instructions[0].instructions: expected at most 20000 characters (line 3)"
    })
    // Exactly the limit is fine.
    const config = valid(parseBosunConfig(`custom_instructions: ${"a".repeat(MAX_INSTRUCTION_LENGTH)}\n`))
    assert.strictEqual(config.custom_instructions?.length, MAX_INSTRUCTION_LENGTH)
  })

  it("refuses a glob whose brackets do not pair up, an empty instruction and a missing one", () => {
    assertInvalid(
      lines(
        "path_instructions:",
        "  - path: src/**",
        "    instructions: ok",
        "  - path: 'src/[ab'",
        "    instructions: x"
      ),
      {
        line: 4,
        column: 11,
        path: "path_instructions[1].path",
        message:
          "path_instructions[1].path: must be a glob of 1..512 characters whose [ ], { } and ( ) pair up (line 4)"
      }
    )
    assertInvalid(lines("review_policy:", "  excluded_paths: [dist/**, 'src/{a,b']"), {
      line: 2,
      column: 29,
      path: "review_policy.excluded_paths[1]",
      message:
        "review_policy.excluded_paths[1]: must be a glob of 1..512 characters whose [ ], { } and ( ) pair up (line 2)"
    })
    assertInvalid(lines("path_instructions:", "  - path: src/**", "    instructions: ''"), {
      line: 3,
      column: 19,
      path: "path_instructions[0].instructions",
      message: "path_instructions[0].instructions: must not be empty (line 3)"
    })
    assertInvalid(lines("path_instructions:", "  - path: src/**", "  - path: lib/**"), {
      line: 2,
      column: 5,
      path: "path_instructions[0].instructions",
      message: "path_instructions[0].instructions: missing; this key is required (line 2)"
    })
  })

  it("refuses more than 100 path instructions", () => {
    const entries = Array.from({ length: 101 }, (_, i) => `  - { path: 'dir${i}/**', instructions: x }`)
    assertInvalid(lines("path_instructions:", ...entries), {
      line: 2,
      column: 3,
      path: "path_instructions",
      message: "path_instructions: expected at most 100 entries (line 2)"
    })
  })

  it("names a duplicate key at its second occurrence and says where it was first set", () => {
    assertInvalid(lines("review_policy:", "  strictness: LOW", "  comment_limit: 3", "  strictness: HIGH"), {
      line: 4,
      column: 3,
      path: "review_policy.strictness",
      message: "review_policy.strictness: duplicate key; it is first set on line 2 (line 4)"
    })
    assertInvalid(lines("custom_instructions: a", "review_policy: {}", "custom_instructions: b"), {
      line: 3,
      column: 1,
      path: "custom_instructions",
      message: "custom_instructions: duplicate key; it is first set on line 1 (line 3)"
    })
  })

  it("reports the first problem in the file when there are several", () => {
    assertInvalid(
      lines(
        "path_instructions:",
        "  - path: '[x'",
        "    instructions: x",
        "review_policy:",
        "  strictness: SOME",
        "typo: 1"
      ),
      {
        line: 2,
        column: 11,
        path: "path_instructions[0].path",
        message:
          "path_instructions[0].path: must be a glob of 1..512 characters whose [ ], { } and ( ) pair up (line 2)"
      }
    )
  })

  it("follows anchors and refuses an alias to no anchor", () => {
    const config = valid(
      parseBosunConfig(
        lines(
          "custom_instructions: &shared Keep functions small.",
          "path_instructions:",
          "  - path: src/**",
          "    instructions: *shared"
        )
      )
    )
    assert.deepStrictEqual(config.path_instructions, [{ path: "src/**", instructions: "Keep functions small." }])
    assertInvalid(lines("review_policy:", "  guidance: *nowhere"), {
      line: 2,
      column: 13,
      path: "review_policy.guidance",
      message: "review_policy.guidance: alias *nowhere names no anchor set before it (line 2)"
    })
  })

  it("refuses a list or mapping used as a key", () => {
    assertInvalid(lines("review_policy:", "  ? [a, b]", "  : 1"), {
      line: 2,
      column: 5,
      path: "review_policy",
      message: "review_policy: keys must be plain names, not lists or mappings (line 2)"
    })
  })

  it("takes `<<` as an unknown key (merge keys are YAML 1.1) and a date as text", () => {
    assertInvalid(lines("review_policy:", "  <<: {strictness: HIGH}"), {
      line: 2,
      column: 3,
      path: "review_policy.<<",
      message:
        'review_policy.<<: unknown key "<<"; the keys here are comment_limit, excluded_authors, excluded_paths, max_changed_files, review_drafts, review_on_open, review_on_push, review_on_ready, review_on_reopen, strictness, guidance (line 2)'
    })
    assert.deepStrictEqual(valid(parseBosunConfig("custom_instructions: 2024-01-31\n")), {
      custom_instructions: "2024-01-31"
    })
  })

  it("never throws, and always points at a line and column inside the text", () => {
    const yamlish = fc.string({
      unit: fc.constantFrom(
        "review_policy",
        "strictness",
        "path_instructions",
        "custom_instructions",
        "- ",
        ": ",
        "\n",
        "  ",
        "&a ",
        "*a",
        "[",
        "]",
        "{",
        "}",
        "'",
        '"',
        "#",
        "---",
        "HIGH",
        "1",
        "x",
        "\t",
        "? "
      ),
      maxLength: 30
    })
    fc.assert(
      fc.property(fc.oneof(yamlish, fc.string()), (text) => {
        const result = parseBosunConfig(text)
        if (result._tag === "Valid") return
        const lineCount = text.split("\n").length
        assert.isAtLeast(result.line, 1)
        assert.isAtMost(result.line, lineCount)
        assert.isAtLeast(result.column, 1)
        assert.isTrue(result.message.endsWith(`(line ${result.line})`))
      }),
      { numRuns: 500 }
    )
  })

  it("reads any valid configuration back from its YAML, equal", () => {
    const text = (min: number, max: number) => fc.string({ unit: "grapheme", minLength: min, maxLength: max })
    const glob = fc
      .array(fc.constantFrom("src", "**", "*.ts", "{a,b}", "[abc]*", ".github", "docs", "*"), {
        minLength: 1,
        maxLength: 4
      })
      .map((segments) => segments.join("/"))
    const configArb: fc.Arbitrary<BosunConfigFile> = fc.record(
      {
        review_policy: fc.record(
          {
            comment_limit: fc.nat(),
            excluded_authors: fc.array(text(1, 39), { maxLength: 3 }),
            excluded_paths: fc.array(glob, { maxLength: 3 }),
            max_changed_files: fc.integer({ min: 1, max: 100_000 }),
            review_drafts: fc.boolean(),
            review_on_open: fc.boolean(),
            review_on_push: fc.boolean(),
            review_on_ready: fc.boolean(),
            review_on_reopen: fc.boolean(),
            strictness: fc.constantFrom("LOW", "MEDIUM", "HIGH"),
            guidance: text(0, 200)
          },
          { requiredKeys: [] }
        ),
        custom_instructions: text(0, 200),
        path_instructions: fc.array(fc.record({ path: glob, instructions: text(1, 200) }), { maxLength: 4 })
      },
      { requiredKeys: [] }
    )
    fc.assert(
      fc.property(configArb, (config) => {
        assert.deepStrictEqual(valid(parseBosunConfig(stringify(config))), config)
      }),
      { numRuns: 300 }
    )
  })
})

describe("describeInvalidConfig", () => {
  it("is one sentence with the file, the line, the problem, and that the file was ignored", () => {
    const result = invalid(parseBosunConfig(lines("review_policy:", "  comment_limit: 5", "  strictness: EXTREME")))
    assert.strictEqual(
      describeInvalidConfig(result),
      '`.bosun.yaml` line 3: review_policy.strictness: expected one of "LOW" | "MEDIUM" | "HIGH" — the file was ignored for this review.'
    )
  })

  it("describes a problem with the whole file", () => {
    const result = invalid(parseBosunConfig(lines("- a")))
    assert.strictEqual(
      describeInvalidConfig(result),
      "`.bosun.yaml` line 1: the file must be a mapping of keys (review_policy, custom_instructions, path_instructions), not a list — the file was ignored for this review."
    )
  })
})

describe("pathInstructionsFor", () => {
  const files = ["README.md", "src/a.ts", "src/deep/b.ts", "src/b.tsx", ".github/workflows/ci.yml", "ops/Dockerfile"]

  it("matches a glob without a / at any depth and one with a / from the root, dotfiles included", () => {
    const matches = pathInstructionsFor(files, [
      { path: "*.ts", instructions: "types" },
      { path: "src/*.ts", instructions: "top of src" },
      { path: "docs/**", instructions: "docs" },
      { path: ".github/**", instructions: "ci" },
      { path: "Dockerfile", instructions: "images" },
      { path: "**/*.{md,yml}", instructions: "text" }
    ])
    assert.deepStrictEqual(matches, [
      { path: "*.ts", instructions: "types", files: ["src/a.ts", "src/deep/b.ts"] },
      { path: "src/*.ts", instructions: "top of src", files: ["src/a.ts"] },
      { path: ".github/**", instructions: "ci", files: [".github/workflows/ci.yml"] },
      { path: "Dockerfile", instructions: "images", files: ["ops/Dockerfile"] },
      { path: "**/*.{md,yml}", instructions: "text", files: ["README.md", ".github/workflows/ci.yml"] }
    ])
  })

  it("returns nothing for no files or no entries", () => {
    assert.deepStrictEqual(pathInstructionsFor([], [{ path: "**", instructions: "x" }]), [])
    assert.deepStrictEqual(pathInstructionsFor(files, []), [])
  })

  const segment = fc.constantFrom("src", "lib", ".github", "a.ts", "b.md", "Dockerfile", "x.test.ts", "deep")
  const fileArb = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => parts.join("/"))
  const entryArb: fc.Arbitrary<PathInstruction> = fc.record({
    path: fc.constantFrom(
      "*.ts",
      "**/*.md",
      "src/**",
      "src/*.ts",
      ".github/**",
      "Dockerfile",
      "*",
      "{a,b}.ts",
      "**",
      "lib/**/x.*.ts",
      "*.test.ts"
    ),
    instructions: fc.constantFrom("one", "two")
  })

  /** The rule as the module documents it, composed independently of its matcher. */
  const applies = (glob: string, file: string) => {
    const whole = picomatch(glob, { dot: true })
    return glob.includes("/") ? whole(file) : whole(file) || whole(file.slice(file.lastIndexOf("/") + 1))
  }

  it("returns, for each entry in order, exactly the files its glob applies to, in their order", () => {
    fc.assert(
      fc.property(fc.array(fileArb, { maxLength: 12 }), fc.array(entryArb, { maxLength: 6 }), (changed, entries) => {
        const matches = pathInstructionsFor(changed, entries)
        const expected = entries.flatMap((entry) => {
          const matched = changed.filter((file) => applies(entry.path, file))
          return matched.length === 0 ? [] : [{ ...entry, files: matched }]
        })
        assert.deepStrictEqual(matches, expected)
        for (const match of matches) {
          assert.isAbove(match.files.length, 0)
          for (const file of match.files) assert.isTrue(applies(match.path, file), `${match.path} ∌ ${file}`)
        }
      }),
      { numRuns: 500 }
    )
  })
})

describe("renderPathInstructions", () => {
  it("is empty when nothing matched", () => {
    assert.strictEqual(renderPathInstructions([]), "")
  })

  it("lists each instruction, quoted, with the files it applies to", () => {
    const rendered = renderPathInstructions([
      { path: "*.ts", instructions: "No any.\n\nPrefer Effect.fn.\n", files: ["src/a.ts", "src/`odd`.ts"] },
      { path: ".github/**", instructions: "Pin actions by SHA.", files: [".github/workflows/ci.yml"] }
    ])
    assert.strictEqual(
      rendered,
      lines(
        "## Path instructions",
        "",
        "From the repository's `.bosun.yaml`. Follow each instruction for the files listed under it, and only for those.",
        "",
        "### 1. `*.ts`",
        "",
        "> No any.",
        ">",
        "> Prefer Effect.fn.",
        "",
        "Applies to 2 changed files:",
        "- `src/a.ts`",
        "- ``src/`odd`.ts``",
        "",
        "### 2. `.github/**`",
        "",
        "> Pin actions by SHA.",
        "",
        "Applies to 1 changed file:",
        "- `.github/workflows/ci.yml`"
      )
    )
  })

  it("lists at most 50 files of an instruction and counts the rest", () => {
    const files = Array.from({ length: 73 }, (_, i) => `src/f${i}.ts`)
    const match: PathInstructionMatch = { path: "src/**", instructions: "x", files }
    const rendered = renderPathInstructions([match])
    const listed = rendered.split("\n").filter((line) => line.startsWith("- `"))
    assert.strictEqual(listed.length, 50)
    assert.strictEqual(listed[49], "- `src/f49.ts`")
    assert.include(rendered, "Applies to 73 changed files:\n")
    assert.isTrue(rendered.endsWith("- `src/f49.ts`\n- … and 23 more files\n"))
    // Deterministic: the same input renders the same text.
    assert.strictEqual(renderPathInstructions([match]), rendered)
  })
})

describe("bosunConfigJsonSchema", () => {
  const ajv = new Ajv({ allErrors: true })
  const validate = ajv.compile(bosunConfigJsonSchema)

  it("is a plain JSON draft-07 document with its $id, title and description", () => {
    assert.deepStrictEqual(JSON.parse(JSON.stringify(bosunConfigJsonSchema)), bosunConfigJsonSchema)
    assert.strictEqual(bosunConfigJsonSchema.$schema, "http://json-schema.org/draft-07/schema#")
    assert.strictEqual(bosunConfigJsonSchema.$id, BOSUN_CONFIG_SCHEMA_PATH)
    assert.strictEqual(bosunConfigJsonSchema.$id, "/api/v1/schemas/bosun-config.json")
    assert.strictEqual(bosunConfigJsonSchema.title, "Bosun repository configuration (.bosun.yaml)")
    assert.isString(bosunConfigJsonSchema.description)
    assert.isTrue(ajv.validateSchema(bosunConfigJsonSchema) as boolean)
  })

  /** The value at a dotted path of the document (the document is an open record). */
  const at = (path: string): unknown =>
    path
      .split(".")
      .reduce<unknown>(
        (value, key) => (typeof value === "object" && value !== null ? Reflect.get(value, key) : undefined),
        bosunConfigJsonSchema
      )
  const keysAt = (path: string) => Object.keys(at(path) ?? {})

  it("describes every key, the strictness values, the instruction limit and closed mappings", () => {
    assert.strictEqual(at("type"), "object")
    assert.strictEqual(at("additionalProperties"), false)
    assert.deepStrictEqual(keysAt("properties"), ["review_policy", "custom_instructions", "path_instructions"])
    assert.isUndefined(at("required"))

    assert.strictEqual(at("properties.review_policy.type"), "object")
    assert.strictEqual(at("properties.review_policy.additionalProperties"), false)
    assert.isUndefined(at("properties.review_policy.required"))
    assert.deepStrictEqual(keysAt("properties.review_policy.properties"), [
      "comment_limit",
      "excluded_authors",
      "excluded_paths",
      "max_changed_files",
      "review_drafts",
      "review_on_open",
      "review_on_push",
      "review_on_ready",
      "review_on_reopen",
      "strictness",
      "guidance"
    ])
    assert.deepStrictEqual(at("properties.review_policy.properties.strictness.enum"), ["LOW", "MEDIUM", "HIGH"])
    assert.strictEqual(at("properties.review_policy.properties.comment_limit.type"), "integer")
    assert.strictEqual(at("properties.review_policy.properties.comment_limit.minimum"), 0)
    assert.strictEqual(at("properties.review_policy.properties.review_drafts.type"), "boolean")
    assert.strictEqual(at("properties.review_policy.properties.guidance.maxLength"), 20000)

    assert.strictEqual(at("properties.custom_instructions.type"), "string")
    assert.strictEqual(at("properties.custom_instructions.maxLength"), 20000)

    assert.strictEqual(at("properties.path_instructions.type"), "array")
    assert.strictEqual(at("properties.path_instructions.maxItems"), 100)
    assert.strictEqual(at("properties.path_instructions.items.additionalProperties"), false)
    assert.deepStrictEqual(at("properties.path_instructions.items.required"), ["path", "instructions"])
    assert.strictEqual(at("properties.path_instructions.items.properties.instructions.maxLength"), 20000)
    assert.strictEqual(at("properties.path_instructions.items.properties.instructions.minLength"), 1)
    assert.strictEqual(at("properties.path_instructions.items.properties.path.minLength"), 1)
    assert.strictEqual(at("properties.path_instructions.items.properties.path.maxLength"), 512)
    assert.isString(at("properties.path_instructions.items.properties.path.description"))
  })

  it("accepts what the parser accepts and rejects unknown keys, bad enums and long instructions", () => {
    const sample = valid(
      parseBosunConfig(
        lines(
          "review_policy:",
          "  strictness: MEDIUM",
          "  excluded_paths: [dist/**]",
          "custom_instructions: Be brief.",
          "path_instructions:",
          "  - path: src/**",
          "    instructions: Check errors."
        )
      )
    )
    assert.isTrue(validate(sample), JSON.stringify(validate.errors))
    assert.isTrue(validate({}))

    assert.isFalse(validate({ ...sample, reviews: {} }))
    assert.deepStrictEqual(
      validate.errors?.map((e) => [e.instancePath, e.keyword, e.params]),
      [["", "additionalProperties", { additionalProperty: "reviews" }]]
    )
    assert.isFalse(validate({ review_policy: { strictnes: "HIGH" } }))
    assert.deepStrictEqual(
      validate.errors?.map((e) => [e.instancePath, e.keyword, e.params]),
      [["/review_policy", "additionalProperties", { additionalProperty: "strictnes" }]]
    )
    assert.isFalse(validate({ path_instructions: [{ path: "a", instructions: "b", extra: 1 }] }))
    assert.isFalse(validate({ review_policy: { strictness: "EXTREME" } }))
    assert.isFalse(validate({ custom_instructions: "a".repeat(20001) }))
    assert.isFalse(validate({ path_instructions: [{ path: "src/**" }] }))
  })
})

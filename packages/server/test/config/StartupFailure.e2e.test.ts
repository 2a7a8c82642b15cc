/**
 * A malformed setting stops start-up with one line naming the variable and what is wrong, exit
 * code 1, no stack trace, and without echoing the value (it may be a secret).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnServer } from "../support/Process.ts"

const startWith = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const server = yield* spawnServer(env)
    const code = yield* server.exited
    return { code, stderr: server.stderr(), stdout: server.stdout() }
  })

/** A setting and, when it is a JSON object (the previous keys), each value inside it: each may be a secret. */
const withEmbeddedValues = (value: string): ReadonlyArray<string> => {
  try {
    const parsed: unknown = JSON.parse(value)
    if (typeof parsed === "object" && parsed !== null) {
      return [value, ...Object.values(parsed).filter((v): v is string => typeof v === "string")]
    }
  } catch {
    // Not JSON: the value alone.
  }
  return [value]
}

describe("start-up refusals", () => {
  const cases: ReadonlyArray<readonly [string, Record<string, string>, string]> = [
    [
      "a master key that is not base64 of 32 bytes",
      { BOSUN_MASTER_KEY: "c2hvcnQta2V5LXNlY3JldA==" },
      "BOSUN_MASTER_KEY"
    ],
    ["a non-integer key version", { BOSUN_MASTER_KEY_VERSION: "v2" }, "BOSUN_MASTER_KEY_VERSION"],
    ["malformed previous keys JSON", { BOSUN_PREVIOUS_MASTER_KEYS: "{not json" }, "BOSUN_PREVIOUS_MASTER_KEYS"],
    [
      "a previous key under a version that is not an integer",
      { BOSUN_PREVIOUS_MASTER_KEYS: JSON.stringify({ v2: Buffer.alloc(32, 7).toString("base64") }) },
      "BOSUN_PREVIOUS_MASTER_KEYS"
    ],
    [
      "a previous key that is not 32 bytes",
      { BOSUN_PREVIOUS_MASTER_KEYS: JSON.stringify({ "1": "c2hvcnQ=" }) },
      "BOSUN_PREVIOUS_MASTER_KEYS"
    ],
    ["a port out of range", { BOSUN_PORT: "70000" }, "BOSUN_PORT"],
    ["a pool size of zero", { BOSUN_DATABASE_POOL_SIZE: "0" }, "BOSUN_DATABASE_POOL_SIZE"],
    ["a base URL that is not a URL", { BOSUN_BASE_URL: "not a url" }, "BOSUN_BASE_URL"],
    ["a gate wait that is not a duration", { BOSUN_MIGRATION_GATE_WAIT: "soon" }, "BOSUN_MIGRATION_GATE_WAIT"],
    [
      "a previous key whose version is not below the active one",
      {
        BOSUN_MASTER_KEY_VERSION: "2",
        BOSUN_PREVIOUS_MASTER_KEYS: JSON.stringify({ "2": Buffer.alloc(32, 11).toString("base64") })
      },
      "BOSUN_PREVIOUS_MASTER_KEYS: version 2 is not below"
    ],
    [
      "a previous key whose version is above the active one",
      {
        BOSUN_MASTER_KEY_VERSION: "1",
        BOSUN_PREVIOUS_MASTER_KEYS: JSON.stringify({ "3": Buffer.alloc(32, 13).toString("base64") })
      },
      "BOSUN_PREVIOUS_MASTER_KEYS: version 3 is not below"
    ],
    [
      "a runtime URL without its token",
      { BOSUN_RUNTIME_URL: "http://127.0.0.1:8787" },
      "BOSUN_RUNTIME_TOKEN: required when BOSUN_RUNTIME_URL is set"
    ],
    [
      "a runtime token without its URL",
      { BOSUN_RUNTIME_TOKEN: "runtime-token-0123456789" },
      "BOSUN_RUNTIME_URL: required when BOSUN_RUNTIME_TOKEN is set"
    ],
    ["an embedded runtime port out of range", { BOSUN_EMBEDDED_RUNTIME_PORT: "65536" }, "BOSUN_EMBEDDED_RUNTIME_PORT"],
    [
      "DATABASE_URL without a master key",
      { DATABASE_URL: "postgres://bosun@127.0.0.1:1/bosun" },
      "BOSUN_MASTER_KEY: required when DATABASE_URL is set"
    ]
  ]
  for (const [what, env, expected] of cases) {
    it.live(`refuses ${what} with one line naming it`, () =>
      Effect.gen(function* () {
        const { code, stderr, stdout } = yield* startWith({ BOSUN_DATA_DIR: "/nonexistent/never-created", ...env })
        assert.strictEqual(code, 1)
        const lines = stderr.trimEnd().split("\n")
        assert.lengthOf(lines, 1, stderr)
        assert.match(lines[0] ?? "", /^bosun: /)
        assert.include(lines[0], expected)
        assert.notInclude(stderr, "    at ")
        for (const value of Object.values(env).flatMap(withEmbeddedValues)) {
          if (value.length >= 2 && !expected.includes(value)) assert.notInclude(stderr, value)
        }
        assert.strictEqual(stdout, "")
      })
    )
  }
})

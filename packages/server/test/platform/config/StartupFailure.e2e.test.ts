/**
 * A malformed setting stops start-up with one line naming the variable and what is wrong, exit
 * code 1, no stack trace, and without echoing the value (it may be a secret).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawnServer } from "../../support/Process.ts"

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
      "a PLATFORM_CONTAINER namespace without the runtime image",
      { BOSUN_PLATFORM_CONTAINER_NAMESPACE: "bosun-sandboxes" },
      "BOSUN_PLATFORM_CONTAINER_IMAGE: required when BOSUN_PLATFORM_CONTAINER_NAMESPACE is set"
    ],
    [
      "a PLATFORM_CONTAINER without the egress proxy's derivation key",
      {
        BOSUN_PLATFORM_CONTAINER_NAMESPACE: "bosun-sandboxes",
        BOSUN_PLATFORM_CONTAINER_IMAGE: "bosun-runtime:1",
        BOSUN_PLATFORM_CONTAINER_SERVICE_ACCOUNT: "bosun-sandbox",
        BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET: "bosun-runtime-token",
        BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN: "pod-runtime-token-secret-value",
        BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP: "bosun-egress-ca",
        BOSUN_EGRESS_PROXY_CA_CERTIFICATE: "-----BEGIN CERTIFICATE-----",
        BOSUN_EGRESS_PROXY_CA_KEY: "-----BEGIN PRIVATE KEY----- secret-key-material"
      },
      "BOSUN_EGRESS_PROXY_SECRET_KEY: required when BOSUN_PLATFORM_CONTAINER_NAMESPACE is set"
    ],
    [
      "instance classes that are not the two classes' resources",
      {
        BOSUN_PLATFORM_CONTAINER_NAMESPACE: "bosun-sandboxes",
        BOSUN_PLATFORM_CONTAINER_INSTANCE_CLASSES: JSON.stringify({ "standard-2": { cpu: "2" } })
      },
      "BOSUN_PLATFORM_CONTAINER_INSTANCE_CLASSES"
    ],
    [
      "egress tiers that are not lists of hosts",
      { BOSUN_PLATFORM_CONTAINER_NAMESPACE: "bosun-sandboxes", BOSUN_EGRESS_TIERS: JSON.stringify({ STRICT: "*" }) },
      "BOSUN_EGRESS_TIERS"
    ],
    [
      "a Kubernetes API URL without its token",
      { BOSUN_KUBERNETES_API_URL: "https://127.0.0.1:6443" },
      "BOSUN_KUBERNETES_TOKEN: required when BOSUN_KUBERNETES_API_URL is set"
    ],
    [
      "a hosted sandbox API over plain http to another host",
      { BOSUN_HOSTED_SANDBOX_API_URL: "http://sandboxes.example.com/api" },
      "BOSUN_HOSTED_SANDBOX_API_URL: must be an https:// URL"
    ],
    [
      "a hosted sandbox API without its key",
      { BOSUN_HOSTED_SANDBOX_API_URL: "https://sandboxes.example.com/api" },
      "BOSUN_HOSTED_SANDBOX_API_KEY: required when BOSUN_HOSTED_SANDBOX_API_URL is set"
    ],
    [
      "a hosted sandbox with neither a snapshot nor an image",
      {
        BOSUN_HOSTED_SANDBOX_API_URL: "https://sandboxes.example.com/api",
        BOSUN_HOSTED_SANDBOX_API_KEY: "dtn_secret-api-key-value",
        BOSUN_HOSTED_SANDBOX_RUNTIME_TOKEN: "hosted-runtime-token-value"
      },
      "BOSUN_HOSTED_SANDBOX_SNAPSHOT: required when BOSUN_HOSTED_SANDBOX_API_URL is set"
    ],
    [
      "a hosted sandbox with both a snapshot and an image",
      {
        BOSUN_HOSTED_SANDBOX_API_URL: "https://sandboxes.example.com/api",
        BOSUN_HOSTED_SANDBOX_API_KEY: "dtn_secret-api-key-value",
        BOSUN_HOSTED_SANDBOX_RUNTIME_TOKEN: "hosted-runtime-token-value",
        BOSUN_HOSTED_SANDBOX_SNAPSHOT: "bosun-runtime-1",
        BOSUN_HOSTED_SANDBOX_IMAGE: "ghcr.io/bosun/runtime:1"
      },
      "BOSUN_HOSTED_SANDBOX_IMAGE: set it or BOSUN_HOSTED_SANDBOX_SNAPSHOT, not both"
    ],
    [
      "an OTLP protocol Bosun does not export with, when traces are exported",
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
      "OTEL_EXPORTER_OTLP_PROTOCOL: must be http/protobuf or http/json when traces are exported (Bosun exports OTLP over HTTP, not grpc)"
    ],
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

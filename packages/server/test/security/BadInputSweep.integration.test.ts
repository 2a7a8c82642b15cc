/**
 * Every operation of the served OpenAPI document that takes a JSON body, sent every kind of bad
 * body: malformed JSON, wrong types, lone surrogates, NUL characters (escaped and raw, with and
 * without `Content-Type`), 10,000 levels of nesting and a body over the limit. Each must answer a
 * 4xx envelope from the operation's own route (never a 5xx, never an unmatched route) and leave
 * every table's row count as it was. The operations come from `/api/v1/openapi.json` at run time,
 * so one added later is covered without touching this test.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { signIn } from "../support/Identity.ts"
import { type JsonSchema, MISSED_ROUTE, type OpenApiDocument, resolveRefs } from "../support/OpenApiDocument.ts"
import { rowCounts } from "../support/RowCounts.ts"
import { layerTestServer, request, TEST_BOOTSTRAP_TOKEN } from "../support/TestServer.ts"

const ORG = "sweep"
/** Both body limits, small so that one over-limit body exceeds either (webhook routes have their own). */
const MAX_BODY_BYTES = 262_144
const WEBHOOK_MAX_BODY_BYTES = 524_288

interface Operation {
  readonly method: string
  readonly path: string
  readonly schema: JsonSchema
  /** Whether the operation takes a session or the bootstrap token (the webhooks verify signatures instead). */
  readonly authenticated: boolean
}

const METHODS = new Set(["post", "put", "patch", "delete"])

/** The operations taking `application/json`, their schemas with `$ref`s resolved. */
const operationsOf = (document: OpenApiDocument): ReadonlyArray<Operation> =>
  Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).flatMap(([method, operation]) => {
      const schema = operation.requestBody?.content?.["application/json"]?.schema
      return METHODS.has(method) && schema !== undefined
        ? [
            {
              method: method.toUpperCase(),
              path,
              schema: resolveRefs(document, schema),
              authenticated: (operation.security ?? []).length > 0
            }
          ]
        : []
    })
  )

const typeOf = (schema: JsonSchema): string | undefined => {
  if (typeof schema.type === "string") return schema.type
  if (Array.isArray(schema.type)) return schema.type[0]
  if (schema.properties !== undefined) return "object"
  const first = schema.anyOf?.[0] ?? schema.oneOf?.[0] ?? schema.allOf?.[0]
  return first === undefined ? undefined : typeOf(first)
}

/**
 * A value of the schema's shape: free-text strings are `text` (enums keep a listed value), and
 * wherever the schema admits anything (an object's extra keys, an untyped value) there is `open`.
 */
const sample = (schema: JsonSchema, text: string, open: unknown, depth = 0): unknown => {
  if (schema.enum !== undefined && schema.enum.length > 0) return schema.enum[0]
  if (depth > 8) return null
  const variant = schema.anyOf?.[0] ?? schema.oneOf?.[0]
  if (typeOf(schema) === undefined && variant !== undefined) return sample(variant, text, open, depth + 1)
  switch (typeOf(schema)) {
    case "object":
      return {
        ...Object.fromEntries(
          Object.entries(schema.properties ?? {}).map(([key, inner]) => [key, sample(inner, text, open, depth + 1)])
        ),
        ...(schema.additionalProperties === false ? {} : { sweep: open })
      }
    case "array":
      return [sample(schema.items ?? {}, text, open, depth + 1)]
    case "integer":
    case "number":
      return 1
    case "boolean":
      return true
    case "null":
      return null
    case "string":
      return text
    default:
      return open
  }
}

/** A value of another JSON type than the schema's. */
const wrongTypeOf = (schema: JsonSchema): unknown => {
  switch (typeOf(schema)) {
    case "string":
      return 12_345
    case "integer":
    case "number":
    case "boolean":
    case "null":
      return "not-the-type"
    case "array":
      return { not: "an array" }
    default:
      return ["not", "an", "object"]
  }
}

const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`

interface Variant {
  readonly name: string
  readonly body: string
  /** `undefined`: sent without a `Content-Type` header. */
  readonly contentType: string | undefined
}

/** Stands for 10,000 levels of nesting in a sample until the sample is written out. */
const DEEP = "\u0001deep"

const variantsOf = (schema: JsonSchema): ReadonlyArray<Variant> => {
  const json = (name: string, body: string): Variant => ({ name, body, contentType: "application/json" })
  // At the top level the extra key is always there (excess keys are ignored, not refused): an
  // operation whose body has no free-text field still carries the bad text.
  const filled = (text: string, open: unknown) => {
    const value = sample(schema, text, open)
    return typeof value === "object" && value !== null && !Array.isArray(value) ? { ...value, sweep: open } : value
  }
  const withText = (text: string) => JSON.stringify(filled(text, text))
  const nul = withText("a\u0000b")
  // The sample's only backslashes are the NUL escapes: replacing them gives raw NUL bytes.
  const rawNul = nul.replaceAll("\\u0000", "\u0000")
  const fields = Object.keys(schema.properties ?? {})
  return [
    json("malformed JSON", '{"sweep": '),
    json("a trailing comma", `${withText("sweep").slice(0, -1)},}`),
    json("the wrong top-level type", JSON.stringify(wrongTypeOf(schema))),
    json("null", "null"),
    json(
      "every field of the wrong type",
      JSON.stringify(
        Object.fromEntries(fields.map((key) => [key, wrongTypeOf(schema.properties?.[key] ?? {})]).concat([["x", 1]]))
      )
    ),
    json("a lone high surrogate", withText("a\ud800b")),
    json("a lone low surrogate", withText("a\udc00b")),
    json("a NUL escape", nul),
    json("a raw NUL byte", rawNul),
    { name: "valid JSON without Content-Type", body: withText("sweep"), contentType: undefined },
    { name: "a NUL escape without Content-Type", body: nul, contentType: undefined },
    { name: "a raw NUL byte without Content-Type", body: rawNul, contentType: undefined },
    json("10,000 levels of nesting", nested(10_000)),
    // The deep value where the schema admits anything, so that decoding lets it through.
    json(
      "10,000 levels of nesting inside",
      JSON.stringify(filled("sweep", DEEP)).replaceAll(JSON.stringify(DEEP), nested(10_000))
    ),
    json(
      "a body over the limit",
      JSON.stringify({ sweep: "x".repeat(Math.max(MAX_BODY_BYTES, WEBHOOK_MAX_BODY_BYTES) + 1) })
    )
  ]
}

const settings = { maxBodyBytes: MAX_BODY_BYTES, webhookMaxBodyBytes: WEBHOOK_MAX_BODY_BYTES }

layer(layerTestServer({ settings }), { excludeTestServices: true, timeout: "180 seconds" })("Bad input sweep", (it) => {
  it.effect(
    "every JSON operation answers every bad body with a 4xx envelope from its own route and writes nothing",
    () =>
      Effect.gen(function* () {
        const admin = yield* signIn("sweep-admin", [[ORG, "ADMIN"]])
        const repository = yield* (yield* RepositoriesRepo).upsert(ORG, {
          githubRepositoryId: null,
          owner: "acme",
          name: "sweep",
          defaultBranch: "main"
        })
        // Real ids where the route takes them; any other id is well formed (a body is judged
        // before the handler looks anything up).
        const params: Readonly<Record<string, string>> = { organization_id: ORG, repository_id: repository.id }
        const fill = (path: string) => path.replace(/\{(\w+)\}/g, (_, name: string) => params[name] ?? "sweep-1")

        const document = yield* request("/api/v1/openapi.json")
        assert.strictEqual(document.status, 200)
        const operations = operationsOf(document.json as OpenApiDocument)
        // A walk that found nothing would pass vacuously.
        assert.isAtLeast(operations.length, 15, "JSON operations in the OpenAPI document")

        const started = performance.now()
        let sent = 0
        const failures: Array<string> = []
        for (const operation of operations) {
          for (const variant of variantsOf(operation.schema)) {
            const what = `${operation.method} ${operation.path} with ${variant.name}`
            const headers: Record<string, string> = {
              // Whichever the operation's security asks for: the other is ignored.
              cookie: admin.cookie,
              authorization: `Bearer ${TEST_BOOTSTRAP_TOKEN}`
            }
            if (variant.contentType !== undefined) headers["content-type"] = variant.contentType
            const before = yield* rowCounts
            // Bytes, not a string: fetch would add `Content-Type: text/plain` to a string body.
            const response = yield* request(fill(operation.path), {
              method: operation.method,
              headers,
              body: new TextEncoder().encode(variant.body)
            })
            sent++
            const after = yield* rowCounts
            const envelope = response.json as { error?: { code?: unknown; message?: unknown } } | undefined
            const code = envelope?.error?.code
            const problems = [
              response.status < 400 || response.status >= 500 ? `status ${response.status}` : undefined,
              Object.keys(envelope ?? {}).join() !== "error" ||
              typeof code !== "string" ||
              typeof envelope?.error?.message !== "string"
                ? "no error envelope"
                : undefined,
              typeof code === "string" && MISSED_ROUTE.has(code) ? `missed the route (${code})` : undefined,
              // The sweep signs in for every such operation: a 401/403 means the body was never judged.
              operation.authenticated && (response.status === 401 || response.status === 403)
                ? "refused the sweep's credentials"
                : undefined,
              Object.keys(before)
                .filter((table) => before[table] !== after[table])
                .map((table) => `wrote ${table}`)
                .join(", ") || undefined
            ].filter((problem) => problem !== undefined)
            if (problems.length > 0) failures.push(`${what}: ${problems.join("; ")} — ${response.text.slice(0, 160)}`)
          }
        }
        // Every failure at once: one run shows all the operations a change broke.
        assert.deepStrictEqual(failures, [], `${failures.length} bad answers:\n${failures.join("\n")}`)
        yield* Effect.logInfo("bad_input_sweep").pipe(
          Effect.annotateLogs({
            operations: operations.length,
            requests: sent,
            ms: Math.round(performance.now() - started)
          })
        )
      })
  )
})

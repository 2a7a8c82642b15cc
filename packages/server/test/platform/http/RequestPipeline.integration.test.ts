/**
 * The request pipeline over real HTTP and a real database: request ids, the `http_request` log
 * line, the error envelope for 404/400/500, redaction (docs/interface.md: Errors 1-3, Events 6,
 * Authentication 8).
 */
import { Conflict, PathId, RequestIdPattern, RequestValidation } from "@bosun/domain"
import { LogCapture } from "@bosun/testing"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { RequestValidationLayer } from "../../../src/platform/http/Validation.ts"
import { layerTestServer, logsNamed, request } from "../../support/TestServer.ts"

/** A test-only API exercising every kind of input, served by the production stack. */
class ProbeGroup extends HttpApiGroup.make("probe")
  .add(
    HttpApiEndpoint.get("item", "/items/:item_id", {
      params: { item_id: PathId },
      query: {
        page_size: Schema.optional(
          Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100 }))
        )
      },
      success: Schema.Struct({ data: Schema.Struct({ id: Schema.String }) })
    }),
    HttpApiEndpoint.post("create", "/items", {
      payload: Schema.Struct({ name: Schema.String, enabled: Schema.Boolean }),
      success: Schema.Struct({ data: Schema.Struct({ name: Schema.String }) })
    }),
    HttpApiEndpoint.post("conflict", "/conflict", {
      success: Schema.Struct({}),
      error: Conflict
    })
  )
  .prefix("/api/v1/probe") {}

class ProbeApi extends HttpApi.make("probe").add(ProbeGroup).middleware(RequestValidation) {}

/** How many times the probe's create handler ran: a refusal "before any handler" leaves it alone. */
let probeCreates = 0

const ProbeRoutes = HttpApiBuilder.layer(ProbeApi).pipe(
  Layer.provide(
    HttpApiBuilder.group(ProbeApi, "probe", (handlers) =>
      Effect.succeed(
        handlers
          .handle("item", ({ params }) => Effect.succeed({ data: { id: params.item_id } }))
          .handle("create", ({ payload }) =>
            Effect.sync(() => {
              probeCreates++
              return { data: { name: payload.name } }
            })
          )
          .handle("conflict", () =>
            Effect.fail(Conflict.fromCode("already_decided", "The suggestion was already decided"))
          )
      )
    )
  ),
  Layer.provide(RequestValidationLayer)
)

const DyingRoute = HttpRouter.add(
  "GET",
  "/api/v1/probe/die/:what",
  Effect.die(new Error("kaboom: internal detail that must not reach the client"))
)

const DyingWithObject = HttpRouter.add(
  "GET",
  "/api/v1/probe/die-object",
  Effect.die({ authorization: "Bearer object-defect-secret-91" })
)

const Server = layerTestServer({ extra: Layer.mergeAll(ProbeRoutes, DyingRoute, DyingWithObject) })

const clearLogs = Effect.flatMap(LogCapture, (capture) => capture.clear)

const SECRET_BEARER = "bearer-secret-4f1c2a9e"
const SECRET_COOKIE = "cookie-secret-77b0d3aa"
const SECRET_BODY = "body-secret-a1b2c3d4e5"

layer(Server, { excludeTestServices: true })("request pipeline", (it) => {
  describe("X-Request-ID", () => {
    it.effect("reuses an inbound X-Request-ID that matches the pattern", () =>
      Effect.gen(function* () {
        const id = "req-1.A_b"
        const response = yield* request("/healthz", { headers: { "X-Request-ID": id } })
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers.get("x-request-id"), id)
      })
    )

    it.effect("reuses a 128-character id and replaces a 129-character one", () =>
      Effect.gen(function* () {
        const ok = "a".repeat(128)
        const tooLong = "b".repeat(129)
        assert.strictEqual(
          (yield* request("/healthz", { headers: { "X-Request-ID": ok } })).headers.get("x-request-id"),
          ok
        )
        const replaced = (yield* request("/healthz", { headers: { "X-Request-ID": tooLong } })).headers.get(
          "x-request-id"
        )
        assert.isString(replaced)
        assert.notStrictEqual(replaced, tooLong)
        assert.match(replaced ?? "", RequestIdPattern)
      })
    )

    it.effect("replaces an id with characters outside the pattern ('bad id!')", () =>
      Effect.gen(function* () {
        const response = yield* request("/healthz", { headers: { "X-Request-ID": "bad id!" } })
        const id = response.headers.get("x-request-id")
        assert.notStrictEqual(id, "bad id!")
        assert.match(id ?? "", RequestIdPattern)
      })
    )

    it.effect("generates a distinct id per request when none is sent", () =>
      Effect.gen(function* () {
        const a = (yield* request("/healthz")).headers.get("x-request-id")
        const b = (yield* request("/healthz")).headers.get("x-request-id")
        assert.match(a ?? "", RequestIdPattern)
        assert.match(b ?? "", RequestIdPattern)
        assert.notStrictEqual(a, b)
      })
    )

    it.effect("is on 404, 400, 409 and 500 responses too", () =>
      Effect.gen(function* () {
        for (const [path, init, status] of [
          ["/api/v1/does-not-exist", {}, 404],
          ["/api/v1/probe/items/x?page_size=0", {}, 400],
          ["/api/v1/probe/conflict", { method: "POST" }, 409],
          ["/api/v1/probe/die/now", {}, 500]
        ] as const) {
          const response = yield* request(path, { ...init, headers: { "X-Request-ID": `id-${status}` } })
          assert.strictEqual(response.status, status, path)
          assert.strictEqual(response.headers.get("x-request-id"), `id-${status}`, path)
        }
      })
    )
  })

  describe("error envelope", () => {
    it.effect("answers an unknown /api/v1 route with 404 and the envelope", () =>
      Effect.gen(function* () {
        const response = yield* request("/api/v1/does-not-exist")
        assert.strictEqual(response.status, 404)
        assert.strictEqual(response.headers.get("content-type"), "application/json")
        assert.deepStrictEqual(response.json, {
          error: { code: "route_not_found", message: "No route matches this method and path" }
        })
      })
    )

    it.effect("answers a typed error with its status and the envelope, without http_request_failed", () =>
      Effect.gen(function* () {
        yield* clearLogs
        const response = yield* request("/api/v1/probe/conflict", { method: "POST" })
        assert.strictEqual(response.status, 409)
        assert.deepStrictEqual(response.json, {
          error: { code: "already_decided", message: "The suggestion was already decided" }
        })
        assert.lengthOf(yield* logsNamed("http_request_failed"), 0)
        assert.lengthOf(yield* logsNamed("http_request"), 1)
      })
    )

    it.effect("answers a defect with 500, a generic message, and logs http_request_failed with the stack", () =>
      Effect.gen(function* () {
        yield* clearLogs
        const response = yield* request("/api/v1/probe/die/now", { headers: { "X-Request-ID": "dying-1" } })
        assert.strictEqual(response.status, 500)
        assert.deepStrictEqual(response.json, { error: { code: "internal_error", message: "Internal server error" } })
        assert.notInclude(response.text, "kaboom")
        const [failed, ...more] = yield* logsNamed("http_request_failed")
        assert.lengthOf(more, 0)
        assert.strictEqual(failed?.level, "error")
        assert.strictEqual(failed?.method, "GET")
        assert.strictEqual(failed?.route, "/api/v1/probe/die/:what")
        assert.strictEqual(failed?.request_id, "dying-1")
        assert.include(String(failed?.stack), "kaboom")
        const [line] = yield* logsNamed("http_request")
        assert.strictEqual(line?.status, 500)
      })
    )
  })

  describe("non-Error defects", () => {
    it.effect("logs only the kind of a non-Error defect, never its content", () =>
      Effect.gen(function* () {
        yield* clearLogs
        const response = yield* request("/api/v1/probe/die-object")
        assert.strictEqual(response.status, 500)
        const [failed] = yield* logsNamed("http_request_failed")
        assert.strictEqual(failed?.stack, "non-Error defect: Object")
        const capture = yield* LogCapture
        for (const line of capture.lines) assert.notInclude(line, "object-defect-secret-91")
      })
    )
  })

  describe("validation", () => {
    it.effect("rejects a 129-character path id with 400 naming the parameter", () =>
      Effect.gen(function* () {
        const response = yield* request(`/api/v1/probe/items/${"x".repeat(129)}`)
        assert.strictEqual(response.status, 400)
        const body = response.json as { error: { code: string; message: string } }
        assert.strictEqual(body.error.code, "invalid_path_parameter")
        assert.include(body.error.message, 'path parameter "item_id"')
        assert.notInclude(body.error.message, "x".repeat(129))
      })
    )

    it.effect("accepts a 128-character path id", () =>
      Effect.gen(function* () {
        const id = "y".repeat(128)
        const response = yield* request(`/api/v1/probe/items/${id}`)
        assert.strictEqual(response.status, 200)
        assert.deepStrictEqual(response.json, { data: { id } })
      })
    )

    it.effect("rejects a bad query value with 400 naming the query parameter", () =>
      Effect.gen(function* () {
        const response = yield* request("/api/v1/probe/items/a?page_size=1000")
        assert.strictEqual(response.status, 400)
        const body = response.json as { error: { code: string; message: string } }
        assert.strictEqual(body.error.code, "invalid_query_parameter")
        assert.include(body.error.message, 'query parameter "page_size"')
      })
    )

    it.effect("rejects a body with a wrong field type with 400 naming the field, without echoing it", () =>
      Effect.gen(function* () {
        const response = yield* request("/api/v1/probe/items", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: "n", enabled: SECRET_BODY })
        })
        assert.strictEqual(response.status, 400)
        const body = response.json as { error: { code: string; message: string } }
        assert.strictEqual(body.error.code, "invalid_body")
        assert.include(body.error.message, 'body field "enabled"')
        assert.notInclude(response.text, SECRET_BODY)
      })
    )

    it.effect("rejects a body missing a field with 400 naming the field", () =>
      Effect.gen(function* () {
        const response = yield* request("/api/v1/probe/items", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ enabled: true })
        })
        assert.strictEqual(response.status, 400)
        const body = response.json as { error: { code: string; message: string } }
        assert.strictEqual(body.error.code, "invalid_body")
        assert.include(body.error.message, 'body field "name"')
      })
    )

    it.effect("rejects malformed JSON with 400 and the envelope", () =>
      Effect.gen(function* () {
        const response = yield* request("/api/v1/probe/items", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{not json"
        })
        assert.strictEqual(response.status, 400)
        const body = response.json as { error: { code: string; message: string } }
        assert.strictEqual(body.error.code, "invalid_body")
        assert.isString(body.error.message)
      })
    )

    it.effect("refuses a NUL character in the path or the query with 400, before any handler runs", () =>
      Effect.gen(function* () {
        const inPath = yield* request("/api/v1/probe/items/a%00b")
        assert.strictEqual(inPath.status, 400)
        assert.deepStrictEqual(inPath.json, {
          error: { code: "invalid_path_parameter", message: "Invalid path: NUL characters are not accepted" }
        })
        assert.match(inPath.headers.get("x-request-id") ?? "", RequestIdPattern)
        const inQuery = yield* request("/api/v1/probe/items/abc?page_size=1%00")
        assert.strictEqual(inQuery.status, 400)
        assert.strictEqual((inQuery.json as { error: { code: string } }).error.code, "invalid_query_parameter")
      })
    )

    it.effect(
      "refuses a JSON body whose strings hold NUL with 400 before the handler, and takes an escaped backslash before u0000 as text",
      () =>
        Effect.gen(function* () {
          const before = probeCreates
          for (const body of [
            '{"name":"a\\u0000b","enabled":true}',
            '{"name":"x","enabled":true,"extra":{"k":"\\\\\\u0000"}}'
          ]) {
            const refused = yield* request("/api/v1/probe/items", {
              method: "POST",
              headers: { "content-type": "application/json" },
              body
            })
            assert.strictEqual(refused.status, 400, body)
            assert.deepStrictEqual(refused.json, {
              error: {
                code: "invalid_body",
                message: "Invalid body: a string holds a NUL character (\\u0000), which Bosun cannot store"
              }
            })
          }
          assert.strictEqual(probeCreates, before)
          const text = yield* request("/api/v1/probe/items", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: '{"name":"\\\\u0000","enabled":true}'
          })
          assert.strictEqual(text.status, 200)
          assert.deepStrictEqual(text.json, { data: { name: "\\u0000" } })
          assert.strictEqual(probeCreates, before + 1)
        })
    )

    it.effect(
      "refuses a body over BOSUN_MAX_BODY_BYTES with 413, by its Content-Length or while reading a chunked one",
      () =>
        Effect.gen(function* () {
          const before = probeCreates
          const oversized = JSON.stringify({ name: "x".repeat(1_048_576), enabled: true })
          const declared = yield* request("/api/v1/probe/items", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: oversized
          })
          assert.strictEqual(declared.status, 413)
          assert.deepStrictEqual(declared.json, {
            error: { code: "payload_too_large", message: "The request body is larger than 1048576 bytes" }
          })
          assert.match(declared.headers.get("x-request-id") ?? "", RequestIdPattern)
          const bytes = new TextEncoder().encode(oversized)
          const chunked = yield* request("/api/v1/probe/items", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: new ReadableStream({
              start(controller) {
                for (let offset = 0; offset < bytes.length; offset += 65_536) {
                  controller.enqueue(bytes.subarray(offset, offset + 65_536))
                }
                controller.close()
              }
            }),
            duplex: "half"
          } as RequestInit)
          assert.strictEqual(chunked.status, 413)
          assert.strictEqual((chunked.json as { error: { code: string } }).error.code, "payload_too_large")
          assert.strictEqual(probeCreates, before)
          // At the limit is fine.
          const atLimit = JSON.stringify({ name: "y".repeat(1_048_576 - 26), enabled: true })
          assert.strictEqual(new TextEncoder().encode(atLimit).length, 1_048_576)
          const accepted = yield* request("/api/v1/probe/items", {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: atLimit
          })
          assert.strictEqual(accepted.status, 200)
        })
    )

    it.effect("answers a body that is not JSON with 415 and the envelope, not the library's plain text", () =>
      Effect.gen(function* () {
        const response = yield* request("/api/v1/probe/items", {
          method: "POST",
          headers: { "content-type": "text/plain" },
          body: "name=plain-body-secret-5e&enabled=true"
        })
        assert.strictEqual(response.status, 415)
        assert.include(response.headers.get("content-type") ?? "", "application/json")
        assert.deepStrictEqual(response.json, {
          error: {
            code: "unsupported_media_type",
            message: "The request body must be JSON (Content-Type: application/json)"
          }
        })
        assert.match(response.headers.get("x-request-id") ?? "", RequestIdPattern)
      })
    )
  })

  describe("http_request log line", () => {
    it.effect("writes exactly one line per request with the route template and every field", () =>
      Effect.gen(function* () {
        yield* clearLogs
        const response = yield* request("/api/v1/probe/items/abc?page_size=5", {
          headers: { "X-Request-ID": "log-1", "CF-Ray": "8c1f2e3d4a5b6c7d-AMS" }
        })
        assert.strictEqual(response.status, 200)
        const lines = yield* logsNamed("http_request")
        assert.lengthOf(lines, 1)
        const line = lines[0] as Record<string, unknown>
        assert.strictEqual(line.msg, "http_request")
        assert.strictEqual(line.level, "info")
        assert.isString(line.time)
        assert.strictEqual(line.request_id, "log-1")
        assert.strictEqual(line.method, "GET")
        assert.strictEqual(line.route, "/api/v1/probe/items/:item_id")
        assert.strictEqual(line.status, 200)
        assert.isNumber(line.duration_ms)
        assert.isAtLeast(line.duration_ms as number, 0)
        assert.strictEqual(line.cf_ray, "8c1f2e3d4a5b6c7d-AMS")
        assert.strictEqual(line.colo, "AMS")
        assert.notProperty(line, "org_id")
        assert.notProperty(line, "user_id")
      })
    )

    it.effect("logs cf_ray and colo as null without edge headers and route null for an unmatched path", () =>
      Effect.gen(function* () {
        yield* clearLogs
        // A POST: every GET that is not the API's may be a dashboard page (`DashboardHttp.ts`).
        yield* request("/nowhere", { method: "POST" })
        const [line] = yield* logsNamed("http_request")
        assert.strictEqual(line?.route, null)
        assert.strictEqual(line?.status, 404)
        assert.strictEqual(line?.cf_ray, null)
        assert.strictEqual(line?.colo, null)
      })
    )

    it.effect("never logs Authorization or Cookie values, nor request or response bodies", () =>
      Effect.gen(function* () {
        yield* clearLogs
        const headers = {
          authorization: `Bearer ${SECRET_BEARER}`,
          cookie: `bosun_session=${SECRET_COOKIE}`,
          "content-type": "application/json"
        }
        const ok = yield* request("/api/v1/probe/items", {
          method: "POST",
          headers,
          body: JSON.stringify({ name: SECRET_BODY, enabled: true })
        })
        assert.strictEqual(ok.status, 200)
        assert.include(ok.text, SECRET_BODY)
        const bad = yield* request("/api/v1/probe/items", {
          method: "POST",
          headers,
          body: JSON.stringify({ name: 1, enabled: SECRET_BODY })
        })
        assert.strictEqual(bad.status, 400)
        const dying = yield* request(`/api/v1/probe/die/${"z"}`, { headers })
        assert.strictEqual(dying.status, 500)
        const capture = yield* LogCapture
        assert.isAtLeast(capture.lines.length, 3)
        for (const line of capture.lines) {
          for (const secret of [SECRET_BEARER, SECRET_COOKIE, SECRET_BODY, "Bearer", "bosun_session"]) {
            assert.notInclude(line, secret)
          }
        }
      })
    )
  })
})

/**
 * The OpenAPI document at `/api/v1/openapi.json` (served, generated from the `HttpApi`)
 * against the endpoint tables of docs/interface.md: every endpoint listed there for this server is
 * in it, with its method and path, under the `/api/v1` base path (the health endpoints at the
 * root). The agent runtime's endpoints are the runtime's, on its own port, and not listed here.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { layerTestServer, request } from "../support/TestServer.ts"

/** The endpoint tables of docs/interface.md, as written there (organization, bootstrap-token, webhook). */
const SPEC_ENDPOINTS = [
  ["PATCH", "/organizations/{organization_id}/memories/{memory_id}"],
  ["POST", "/organizations/{organization_id}/work-items/{work_item_id}/actions"],
  ["PUT", "/organizations/{organization_id}/opencode-connection/api-keys/{provider_id}"],
  ["PUT", "/organizations/{organization_id}/opencode-connection/import"],
  ["GET", "/organizations/{organization_id}/opencode-connection"],
  ["PUT", "/organizations/{organization_id}/repositories/{repository_id}/configuration"],
  ["GET", "/organizations/{organization_id}/repositories/{repository_id}/configuration"],
  ["PATCH", "/organizations/{organization_id}/repositories/{repository_id}"],
  [
    "POST",
    "/organizations/{organization_id}/repositories/{repository_id}/context-suggestions/{suggestion_id}/decision"
  ],
  ["GET", "/organizations/{organization_id}/deep-scans"],
  ["POST", "/organizations/{organization_id}/deep-scans"],
  ["GET", "/organizations/{organization_id}/workflow-runs/{run_id}"],
  ["GET", "/organizations/{organization_id}/workflow-runs/{run_id}/events/stream"],
  ["GET", "/organizations/{organization_id}/pull-requests"],
  ["PUT", "/organizations/{organization_id}/slack/channels/{channel_id}/passive-listening"],
  ["POST", "/organizations/{organization_id}/composio/connections"],
  ["PUT", "/organizations/{organization_id}/github-app"],
  ["POST", "/instance/secret-rotations"],
  ["GET", "/instance/secret-rotations/{id}"],
  ["POST", "/linear/webhooks"]
] as const

const HEALTH_ENDPOINTS = [
  ["GET", "/healthz"],
  ["GET", "/readyz"]
] as const

interface OpenApiDocument {
  readonly openapi: string
  readonly paths: Record<string, Record<string, { readonly operationId?: string }>>
}

layer(layerTestServer(), { excludeTestServices: true })("OpenAPI document", (it) => {
  it.effect("holds every spec endpoint with the spec's method and path", () =>
    Effect.gen(function* () {
      const response = yield* request("/api/v1/openapi.json")
      assert.strictEqual(response.status, 200)
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/)
      const document = response.json as OpenApiDocument
      assert.match(document.openapi, /^3\./)
      const operations = new Set(
        Object.entries(document.paths).flatMap(([path, methods]) =>
          Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)
        )
      )
      const missing: Array<string> = []
      for (const [method, path] of SPEC_ENDPOINTS) {
        if (!operations.has(`${method} /api/v1${path}`)) missing.push(`${method} ${path}`)
      }
      for (const [method, path] of HEALTH_ENDPOINTS) {
        if (!operations.has(`${method} ${path}`)) missing.push(`${method} ${path}`)
      }
      assert.deepStrictEqual(missing, [])
    })
  )

  it.effect("describes the Linear webhook's headers, payload, 202 answer and refusals", () =>
    Effect.gen(function* () {
      const document = (yield* request("/api/v1/openapi.json")).json as {
        readonly paths: Record<
          string,
          Record<string, { readonly description?: string; readonly responses: Record<string, unknown> }>
        >
      }
      const operation = document.paths["/api/v1/linear/webhooks"]?.post
      assert.isDefined(operation)
      assert.deepStrictEqual(Object.keys(operation?.responses ?? {}).sort(), ["202", "400", "401"])
      for (const header of ["Linear-Delivery", "Linear-Event", "Linear-Timestamp", "Linear-Signature"]) {
        assert.include(operation?.description ?? "", header)
      }
    })
  )

  it.effect("documents every operation it serves under /api/v1 or the health paths, each with an operation id", () =>
    Effect.gen(function* () {
      const document = (yield* request("/api/v1/openapi.json")).json as OpenApiDocument
      for (const [path, methods] of Object.entries(document.paths)) {
        assert.isTrue(path.startsWith("/api/v1/") || path === "/healthz" || path === "/readyz", path)
        for (const [method, operation] of Object.entries(methods)) {
          assert.isString(operation.operationId, `${method} ${path}`)
        }
      }
    })
  )
})

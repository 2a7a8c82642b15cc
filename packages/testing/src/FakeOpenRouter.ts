/**
 * A local stand-in for OpenRouter's "current API key" endpoint (test code only), on 127.0.0.1:
 * `GET /api/v1/key` with `Authorization: Bearer <key>` answers `{"data": {...}}` in OpenRouter's
 * documented shape (label, usage, limit, limit_remaining, is_free_tier, rate_limit) for a key a
 * test registered, 401 `{"error": {"code": 401, "message": "..."}}` for any other. Tests count the
 * calls, make the next ones fail with a status, or hold answers until they release them.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect } from "effect"

export interface FakeOpenRouterHandle {
  /** `http://127.0.0.1:<port>/api/v1`, what BOSUN_OPENROUTER_API_URL would be. */
  readonly apiUrl: URL
  /** Registers a key and the usage it reports, in credits. */
  readonly addKey: (
    key: string,
    figures: { readonly label: string; readonly usage: number; readonly limit: number | null }
  ) => void
  /** Calls of `GET /api/v1/key` so far, with the bearer token each carried. */
  readonly calls: ReadonlyArray<{ readonly token: string | null }>
  /** The next `count` calls answer `status` with an error body. */
  readonly failNext: (status: number, count?: number) => void
}

export const fakeOpenRouter = Effect.acquireRelease(
  Effect.callback<{ readonly handle: FakeOpenRouterHandle; readonly close: () => void }>((resume) => {
    const keys = new Map<string, { readonly label: string; readonly usage: number; readonly limit: number | null }>()
    const calls: Array<{ readonly token: string | null }> = []
    let failures: { status: number; count: number } = { status: 0, count: 0 }
    const server = createServer((request, response) => {
      const json = (status: number, body: unknown) => {
        response.writeHead(status, { "content-type": "application/json" })
        response.end(JSON.stringify(body))
      }
      if (request.method !== "GET" || request.url !== "/api/v1/key") {
        return json(404, { error: { code: 404, message: "Not Found" } })
      }
      const auth = request.headers.authorization ?? ""
      const token = auth.startsWith("Bearer ") ? auth.slice("Bearer ".length) : null
      calls.push({ token })
      if (failures.count > 0) {
        failures = { ...failures, count: failures.count - 1 }
        return json(failures.status, { error: { code: failures.status, message: "Upstream trouble" } })
      }
      const found = token === null ? undefined : keys.get(token)
      if (found === undefined) return json(401, { error: { code: 401, message: "No auth credentials found" } })
      json(200, {
        data: {
          label: found.label,
          usage: found.usage,
          limit: found.limit,
          limit_remaining: found.limit === null ? null : found.limit - found.usage,
          is_free_tier: false,
          rate_limit: { requests: 1000, interval: "10s" }
        }
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(
        Effect.succeed({
          handle: {
            apiUrl: new URL(`http://127.0.0.1:${port}/api/v1`),
            addKey: (key, figures) => keys.set(key, figures),
            calls,
            failNext: (status, count = 1) => {
              failures = { status, count }
            }
          },
          close: () => server.close()
        })
      )
    })
  }),
  ({ close }) => Effect.sync(close)
).pipe(Effect.map(({ handle }) => handle))

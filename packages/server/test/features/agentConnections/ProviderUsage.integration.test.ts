/**
 * `GET .../opencode-connection/usage/{provider_id}` over real HTTP against a local OpenRouter
 * stand-in (its `GET /api/v1/key` wire format): the figures OpenRouter reports for the
 * organization's own key, read through the organization's UsageCache entity (one provider call per
 * TTL, however many ask); 404 without a key or for a provider that reports no usage, 502 when the
 * provider refuses the key or fails (and a failure is not cached); 401, 404 across organizations,
 * 400 for a bad provider id. The key is never in a response or a log line.
 */
import { type FakeOpenRouterHandle, fakeOpenRouter, LogCapture } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { errorCode, signIn } from "../../support/Identity.ts"
import { layerTestServer, request } from "../../support/TestServer.ts"

class OpenRouter extends Context.Service<OpenRouter, FakeOpenRouterHandle>()("test/OpenRouter") {}

const layerWithOpenRouter = Layer.unwrap(
  Effect.map(fakeOpenRouter, (fake) =>
    Layer.merge(layerTestServer({ settings: { openRouterApiUrl: fake.apiUrl } }), Layer.succeed(OpenRouter, fake))
  )
)

const KEY = "sk-or-v1-plaintext-0f3c9a"
const usagePath = (org: string, provider: string) =>
  `/api/v1/organizations/${org}/opencode-connection/usage/${provider}`

const setKey = (cookie: string, org: string, provider: string, key: string) =>
  Effect.map(
    request(`/api/v1/organizations/${org}/opencode-connection/api-keys/${provider}`, {
      method: "PUT",
      headers: { cookie, "content-type": "application/json" },
      body: JSON.stringify({ api_key: key })
    }),
    (response) => assert.strictEqual(response.status, 200, response.text)
  )

layer(layerWithOpenRouter, { excludeTestServices: true })("provider usage", (it) => {
  it.effect("answers OpenRouter's figures for the organization's key, one provider call for a burst of readers", () =>
    Effect.gen(function* () {
      const openRouter = yield* OpenRouter
      const admin = yield* signIn("usage-admin", [["usage-org", "ADMIN"]])
      const member = yield* signIn("usage-member", [["usage-org", "MEMBER"]])
      yield* setKey(admin.cookie, "usage-org", "openrouter", KEY)
      openRouter.addKey(KEY, { label: "sk-or-v1-0f3...c9a", usage: 12.5, limit: 100 })
      const before = openRouter.calls.length
      const answers = yield* Effect.all(
        Array.from({ length: 20 }, () =>
          request(usagePath("usage-org", "openrouter"), { headers: { cookie: member.cookie } })
        ),
        { concurrency: "unbounded" }
      )
      for (const answer of answers) {
        assert.strictEqual(answer.status, 200, answer.text)
        assert.notInclude(answer.text, KEY)
      }
      type Answer = { data: { provider: string; fetched_at: string; figures: Record<string, unknown> } }
      const first = (answers.map((answer) => answer.json as Answer)[0] ?? assert.fail("no answer")).data
      assert.strictEqual(first.provider, "openrouter")
      assert.isFalse(Number.isNaN(Date.parse(first.fetched_at)))
      assert.deepStrictEqual(first.figures, {
        label: "sk-or-v1-0f3...c9a",
        usage: 12.5,
        limit: 100,
        limit_remaining: 87.5,
        is_free_tier: false,
        rate_limit: { requests: 1000, interval: "10s" }
      })
      for (const answer of answers) assert.deepStrictEqual((answer.json as { data: unknown }).data, first)
      assert.deepStrictEqual(openRouter.calls.slice(before), [{ token: KEY }])
      const logs = yield* LogCapture
      assert.notInclude(logs.lines.join("\n"), KEY)
    })
  )

  it.effect("a refused key or a failing provider is a 502 that is not cached", () =>
    Effect.gen(function* () {
      const openRouter = yield* OpenRouter
      const admin = yield* signIn("usage-admin-2", [["usage-fail", "ADMIN"]])
      yield* setKey(admin.cookie, "usage-fail", "openrouter", "sk-or-v1-unknown-to-openrouter")
      const refused = yield* request(usagePath("usage-fail", "openrouter"), { headers: { cookie: admin.cookie } })
      assert.strictEqual(refused.status, 502)
      assert.strictEqual(errorCode(refused.json), "provider_unavailable")
      assert.include(refused.text, "refused the organization's key (401)")
      assert.notInclude(refused.text, "sk-or-v1-unknown-to-openrouter")
      // The next lookup asks again, and OpenRouter now answers.
      openRouter.addKey("sk-or-v1-unknown-to-openrouter", { label: "late", usage: 0, limit: null })
      openRouter.failNext(503)
      const failing = yield* request(usagePath("usage-fail", "openrouter"), { headers: { cookie: admin.cookie } })
      assert.strictEqual(failing.status, 502)
      assert.include(failing.text, "OpenRouter answered 503")
      const ok = yield* request(usagePath("usage-fail", "openrouter"), { headers: { cookie: admin.cookie } })
      assert.strictEqual(ok.status, 200, ok.text)
      assert.strictEqual((ok.json as { data: { figures: { limit: unknown } } }).data.figures.limit, null)
    })
  )

  it.effect("no key for the provider, or a provider without usage, is a 404 saying which", () =>
    Effect.gen(function* () {
      const member = yield* signIn("usage-member-3", [["usage-none", "MEMBER"]])
      const missing = yield* request(usagePath("usage-none", "openrouter"), { headers: { cookie: member.cookie } })
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(errorCode(missing.json), "provider_credential_missing")
      const unsupported = yield* request(usagePath("usage-none", "anthropic"), { headers: { cookie: member.cookie } })
      assert.strictEqual(unsupported.status, 404)
      assert.strictEqual(errorCode(unsupported.json), "usage_not_reported")
    })
  )

  it.effect("401 without a session, 404 for another organization, 400 for a bad provider id", () =>
    Effect.gen(function* () {
      const outsider = yield* signIn("usage-outsider", [["usage-elsewhere", "ADMIN"]])
      const anonymous = yield* request(usagePath("usage-org", "openrouter"))
      assert.strictEqual(anonymous.status, 401)
      const foreign = yield* request(usagePath("usage-org", "openrouter"), { headers: { cookie: outsider.cookie } })
      assert.strictEqual(foreign.status, 404)
      assert.strictEqual(errorCode(foreign.json), "not_found")
      const bad = yield* request(usagePath("usage-elsewhere", "Open%20Router"), {
        headers: { cookie: outsider.cookie }
      })
      assert.strictEqual(bad.status, 400)
      assert.strictEqual(errorCode(bad.json), "invalid_path_parameter")
    })
  )
})

/**
 * Slack connection input that a header cannot carry, over real HTTP: the bot token is refused
 * where it arrives, as a 400 naming the field, and nothing is stored.
 */
import { FakeSlack } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { signIn } from "../support/Identity.ts"
import { layerTestServer, request } from "../support/TestServer.ts"

const Stack = Layer.unwrap(
  Effect.map(FakeSlack, (fake) => layerTestServer({ settings: { slackApiUrl: new URL(fake.apiUrl) } }))
).pipe(Layer.provideMerge(FakeSlack.layer))

layer(Stack, { excludeTestServices: true })("Slack connection input", (it) => {
  it.effect("a bot token with characters a header cannot carry is a 400 naming bot_token, nothing written", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const admin = yield* signIn("admin-slack-header", [["slack-header", "ADMIN"]])
      for (const token of ["xoxb-line\nbreak", "xoxb-t\u00f8ken", "xoxb-with space", "xoxb-\u0007bell"]) {
        const response = yield* request("/api/v1/organizations/slack-header/slack-connection", {
          method: "PUT",
          headers: { cookie: admin.cookie, "content-type": "application/json" },
          body: JSON.stringify({ bot_token: token, signing_secret: "slack-signing-secret" })
        })
        assert.strictEqual(response.status, 400, response.text)
        const body = response.json as { error: { code: string; message: string } }
        assert.strictEqual(body.error.code, "invalid_body")
        assert.include(body.error.message, "bot_token")
        assert.notInclude(response.text, token)
      }
      const rows = yield* sql`SELECT 1 FROM slack_connections WHERE organization_id = 'slack-header'`
      assert.lengthOf(rows, 0)
    })
  )
})

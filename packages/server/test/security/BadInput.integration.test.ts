/**
 * Bad input over real HTTP, each answered with a 4xx envelope naming the problem and nothing
 * written (every table's row count unchanged): lone UTF-16 surrogates and NUL characters in
 * strings bound for `jsonb` (repository configuration, a GitHub App's `client_id` that goes into
 * the audit record, signed GitHub, Slack and Linear payloads), JSON nested thousands of levels
 * deep, and JSON bodies sent without a `Content-Type` (415). A webhook's payload is judged only
 * after its signature: a badly signed one is still a 401.
 */
import { createHmac, generateKeyPairSync } from "node:crypto"
import { signedSlackHeaders, slackSignature } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { LinearConnectionsRepo } from "../../src/outbound/linear/LinearConnectionsRepo.ts"
import { SlackConnectionsRepo } from "../../src/outbound/slack/SlackConnectionsRepo.ts"
import { ACCOUNT_ID, configured, deliver } from "../support/GithubDeliveries.ts"
import { signIn } from "../support/Identity.ts"
import { writesNothing } from "../support/RowCounts.ts"
import { layerTestServer, request, TEST_BOOTSTRAP_TOKEN, type TestResponse } from "../support/TestServer.ts"

const ORG = "bad-input"
const SLACK_TEAM = "T0BADINPUT"
const SLACK_SECRET = "slack-bad-input-signing-secret"
const LINEAR_WORKSPACE = "lin-bad-input"
const LINEAR_SECRET = "lin_wh_bad_input_secret"

/** JSON arrays nested `levels` deep: valid JSON that a recursive walk cannot follow. */
const nested = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`

/** A JSON string literal holding a lone high surrogate, as `JSON.stringify("\ud800")` writes it. */
const LONE_HIGH = JSON.stringify("bad \ud800 text")
const LONE_LOW = JSON.stringify("bad \udc00 text")
const NUL = JSON.stringify("bad \u0000 text")

/** The envelope of a refusal, field by field; answers its message. */
const refused = (response: TestResponse, status: number, code: string, names: RegExp) => {
  assert.strictEqual(response.status, status, response.text)
  const body = response.json as { error: { code: unknown; message: unknown } }
  assert.deepStrictEqual(Object.keys(body), ["error"])
  assert.strictEqual(body.error.code, code)
  assert.isString(body.error.message)
  assert.match(String(body.error.message), names)
}

const setup = Effect.gen(function* () {
  const admin = yield* signIn("bad-input-admin", [[ORG, "ADMIN"]])
  const repository = yield* (yield* RepositoriesRepo).upsert(ORG, {
    githubRepositoryId: null,
    owner: "acme",
    name: "bad-input",
    defaultBranch: "main"
  })
  yield* configured(ORG, ACCOUNT_ID)
  yield* Effect.orDie(
    (yield* SlackConnectionsRepo).upsert(ORG, {
      teamId: SLACK_TEAM,
      teamName: "Bad input",
      botUserId: "U0BOSUN",
      botToken: Redacted.make("xoxb-bad-input"),
      signingSecret: Redacted.make(SLACK_SECRET)
    })
  )
  yield* Effect.orDie(
    (yield* LinearConnectionsRepo).upsert(ORG, {
      linearOrganizationId: LINEAR_WORKSPACE,
      webhookSecret: Redacted.make(LINEAR_SECRET),
      accessToken: Option.none(),
      appUserId: "user-bosun",
      appUserName: "bosun",
      oauth: Option.none()
    })
  )
  return { cookie: admin.cookie, repositoryId: repository.id }
})

/** The configuration PUT's body with `sandboxConfig` (raw JSON text) as its `sandbox_config`. */
const configurationBody = (sandboxConfig: string) =>
  `{"agent_provider":"OPENCODE","automatic_pr_description":"ENABLED","issue_pull_request_mode":"READY",` +
  `"review_policy":{"comment_limit":0,"excluded_authors":[],"excluded_paths":[],"max_changed_files":1,` +
  `"review_drafts":true,"review_on_open":true,"review_on_push":false,"review_on_ready":true,` +
  `"review_on_reopen":true,"strictness":"HIGH"},"sandbox_config":${sandboxConfig},"sandbox_provider":"HOSTED_SANDBOX"}`

const privateKey = generateKeyPairSync("rsa", { modulusLength: 2048 })
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString()

const githubAppBody = (clientId: string) =>
  `{"client_id":${clientId},"client_secret":"secret","github_app_id":77,"github_app_slug":"bosun-bad-input",` +
  `"private_key":${JSON.stringify(privateKey)},"webhook_secret":"whsec"}`

const githubPayload = (value: string) =>
  `{"action":"opened","installation":{"id":1,"account":{"id":${ACCOUNT_ID},"login":"acme"}},"value":${value}}`
const slackPayload = (value: string) =>
  `{"type":"event_callback","team_id":"${SLACK_TEAM}","event_id":"Ev0BAD${Math.random().toString(36).slice(2, 10)}",` +
  `"event":{"type":"message","channel":"C0GENERAL","ts":"1.2","text":${value}}}`
const linearPayload = (value: string) =>
  `{"action":"create","type":"Issue","organizationId":"${LINEAR_WORKSPACE}","webhookTimestamp":${Date.now()},` +
  `"data":{"id":"issue-1","title":${value}}}`

const sendSlack = (body: string, secret = SLACK_SECRET) =>
  request("/api/v1/slack/events", { method: "POST", headers: signedSlackHeaders(secret, body), body })

/** A signed click on a plan's Approve button, its interaction JSON text holding `value`. */
let triggerSeq = 0
const sendSlackClick = (value: string) => {
  const payload =
    `{"type":"block_actions","team":{"id":"${SLACK_TEAM}"},"trigger_id":"1.2.bad-${triggerSeq++}",` +
    `"channel":{"id":"C0GENERAL"},"message":{"ts":"1.2","text":${value}},` +
    `"actions":[{"action_id":"work_item.approve","value":"item"}]}`
  const body = new URLSearchParams({ payload }).toString()
  const at = Math.floor(Date.now() / 1000)
  return request("/api/v1/slack/interactions", {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-slack-request-timestamp": String(at),
      "x-slack-signature": slackSignature(SLACK_SECRET, at, body)
    },
    body
  })
}

let linearSeq = 0
const sendLinear = (body: string, secret = LINEAR_SECRET) =>
  request("/api/v1/linear/webhooks", {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "linear-delivery": `bad-input-${linearSeq++}`,
      "linear-event": "Issue",
      "linear-timestamp": String(Date.now()),
      "linear-signature": createHmac("sha256", secret).update(body).digest("hex")
    },
    body
  })

let githubSeq = 0
const sendGithub = (body: string, secret?: string) =>
  deliver({ id: `bad-input-${githubSeq++}`, event: "pull_request", body, ...(secret === undefined ? {} : { secret }) })

/** The three kinds of bad JSON text, each with what its refusal's message must name. */
const badValues = [
  { what: "a lone high surrogate", value: LONE_HIGH, names: /lone .*surrogate/i },
  { what: "a lone low surrogate", value: LONE_LOW, names: /lone .*surrogate/i },
  { what: "a NUL character", value: NUL, names: /NUL/ },
  { what: "10,000 levels of nesting", value: nested(10_000), names: /nested deeper than \d+ levels/i }
] as const

layer(layerTestServer(), { excludeTestServices: true, timeout: "60 seconds" })("Bad input", (it) => {
  it.effect("repository configuration holding bad JSON text is a 400 naming the problem, nothing written", () =>
    Effect.gen(function* () {
      const { cookie, repositoryId } = yield* setup
      const path = `/api/v1/organizations/${ORG}/repositories/${repositoryId}/configuration`
      for (const { what, value, names } of badValues) {
        const response = yield* writesNothing(
          request(path, {
            method: "PUT",
            headers: { cookie, "content-type": "application/json" },
            body: configurationBody(`{"image":${value}}`)
          }),
          `sandbox_config with ${what}`
        )
        refused(response, 400, "invalid_body", names)
      }
    })
  )

  it.effect("a GitHub App whose client_id holds a lone surrogate is a 400, no App and no audit record written", () =>
    Effect.gen(function* () {
      const response = yield* writesNothing(
        request(`/api/v1/organizations/${ORG}-app/github-app`, {
          method: "PUT",
          headers: { authorization: `Bearer ${TEST_BOOTSTRAP_TOKEN}`, "content-type": "application/json" },
          body: githubAppBody(LONE_HIGH)
        }),
        "client_id with a lone surrogate"
      )
      refused(response, 400, "invalid_body", /lone .*surrogate/i)
    })
  )

  it.effect("an agent-connection import nested 10,000 levels deep is a 400, nothing written", () =>
    Effect.gen(function* () {
      const { cookie } = yield* setup
      const response = yield* writesNothing(
        request(`/api/v1/organizations/${ORG}/opencode-connection/import`, {
          method: "PUT",
          headers: { cookie, "content-type": "application/json" },
          body: `{"auth":{"openai":{"type":"api","key":"sk-x","extra":${nested(10_000)}}}}`
        }),
        "a deeply nested import"
      )
      refused(response, 400, "invalid_body", /nested deeper than 64 levels/i)
    })
  )

  it.effect("a JSON body without Content-Type is a 415, with or without a NUL in it, nothing written", () =>
    Effect.gen(function* () {
      const { cookie, repositoryId } = yield* setup
      const path = `/api/v1/organizations/${ORG}/repositories/${repositoryId}/configuration`
      for (const [what, body] of [
        ["valid JSON", configurationBody(`{"image":"node:24"}`)],
        ["a NUL escape", configurationBody(`{"image":${NUL}}`)],
        ["a raw NUL byte", configurationBody(`{"image":"a\u0000b"}`)]
      ] as const) {
        // A Uint8Array body makes fetch send no Content-Type at all (a string would be text/plain).
        const response = yield* writesNothing(
          request(path, { method: "PUT", headers: { cookie }, body: new TextEncoder().encode(body) }),
          `no Content-Type, ${what}`
        )
        refused(response, 415, "unsupported_media_type", /Content-Type: application\/json/)
      }
    })
  )

  it.effect("a raw NUL byte in a JSON body is a 400, nothing written", () =>
    Effect.gen(function* () {
      const { cookie, repositoryId } = yield* setup
      const response = yield* writesNothing(
        request(`/api/v1/organizations/${ORG}/repositories/${repositoryId}/configuration`, {
          method: "PUT",
          headers: { cookie, "content-type": "application/json" },
          body: configurationBody(`{"image":"a\u0000b"}`)
        }),
        "a raw NUL byte"
      )
      refused(response, 400, "invalid_body", /NUL/)
    })
  )

  it.effect("a signed GitHub delivery holding bad JSON text is a 400 naming the problem, nothing recorded", () =>
    Effect.gen(function* () {
      yield* setup
      for (const { what, value, names } of badValues) {
        const response = yield* writesNothing(sendGithub(githubPayload(value)), `GitHub payload with ${what}`)
        refused(response, 400, "invalid_body", names)
      }
      const deep = yield* writesNothing(sendGithub(githubPayload(nested(300))), "GitHub payload 300 deep")
      refused(deep, 400, "invalid_body", /nested deeper than 256 levels/)
    })
  )

  it.effect("a signed Slack event holding bad JSON text is a 400 naming the problem, nothing recorded", () =>
    Effect.gen(function* () {
      yield* setup
      for (const { what, value, names } of badValues) {
        const response = yield* writesNothing(sendSlack(slackPayload(value)), `Slack payload with ${what}`)
        refused(response, 400, "invalid_body", names)
      }
    })
  )

  it.effect("a signed Slack button click holding bad JSON text is a 400 naming the problem, nothing recorded", () =>
    Effect.gen(function* () {
      yield* setup
      for (const { what, value, names } of badValues) {
        const response = yield* writesNothing(sendSlackClick(value), `Slack interaction with ${what}`)
        refused(response, 400, "invalid_body", names)
      }
    })
  )

  it.effect("a signed Linear delivery holding bad JSON text is a 400 naming the problem, nothing recorded", () =>
    Effect.gen(function* () {
      yield* setup
      for (const { what, value, names } of badValues) {
        const response = yield* writesNothing(sendLinear(linearPayload(value)), `Linear payload with ${what}`)
        refused(response, 400, "invalid_body", names)
      }
    })
  )

  it.effect("a badly signed webhook holding bad JSON text is still a 401", () =>
    Effect.gen(function* () {
      yield* setup
      for (const { what, value } of badValues) {
        const github = yield* writesNothing(sendGithub(githubPayload(value), "not-the-secret"), `GitHub, ${what}`)
        refused(github, 401, "unauthorized", /signature/)
        const slack = yield* writesNothing(sendSlack(slackPayload(value), "not-the-secret"), `Slack, ${what}`)
        refused(slack, 401, "unauthorized", /signature/)
        const linear = yield* writesNothing(sendLinear(linearPayload(value), "not-the-secret"), `Linear, ${what}`)
        refused(linear, 401, "unauthorized", /signature/)
      }
    })
  )

  it.effect("webhook payloads nested within the limit are accepted", () =>
    Effect.gen(function* () {
      yield* setup
      const github = yield* sendGithub(githubPayload(nested(200)))
      assert.strictEqual(github.status, 202, github.text)
      const linear = yield* sendLinear(linearPayload(nested(200)))
      assert.strictEqual(linear.status, 202, linear.text)
    })
  )
})

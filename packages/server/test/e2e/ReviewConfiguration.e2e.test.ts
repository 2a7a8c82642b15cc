/**
 * Review configuration end to end: models and instructions set over the configuration API, the
 * default model Bosun picks from the discovered catalog, and the repository's `.bosun.yaml` read
 * from its default branch — seen where they land, in what a real review run sends the model
 * (through the real runtime and OpenCode against the scripted model) and in the review posted on
 * the fake GitHub.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type AgentConnection, defaultModel, type RepositoryConfiguration } from "@bosun/domain"
import {
  chatMessages,
  eventually,
  FakeGithub,
  type FakeModelRequest,
  FakeModelServer,
  type GitRepository,
  messageText,
  systemPrompt
} from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { renderPathInstructions } from "../../src/features/agentConnections/BosunConfigFile.ts"
import { jsonRequest, layerAgentServer, layerGitRepository, outputTurns, runEnded } from "../support/AgentStack.ts"
import { signIn } from "../support/Identity.ts"
import { deliveries, installApp, type Tenant } from "../support/InstalledApp.ts"
import { pullRequestEvent, pushToPull } from "../support/PullRequests.ts"
import { logsNamed, request } from "../support/TestServer.ts"

const tenant = (n: number, name: string): Tenant => ({
  org: `config-e2e-${name}`,
  account: { id: 73_400 + n, login: `acme-${name}` },
  installationId: 83_400 + n,
  githubRepositoryId: 94_400 + n,
  fullName: `acme-${name}/api`
})
const LEVELS = tenant(1, "levels")
const DEFAULT = tenant(2, "default")
const INVALID = tenant(3, "invalid")

/** What the model writes as the review of each head: filled in as the tests push. */
const summaries = new Map<string, string>()

const summaryFor = (request: FakeModelRequest) => {
  const text = JSON.stringify(request.body)
  for (const [head, summary] of summaries) if (text.includes(head)) return summary
  return "The prompt named no head this test knows."
}

class LevelsRepository extends Context.Service<LevelsRepository, GitRepository>()("test/ConfigLevelsRepository") {}
class DefaultRepository extends Context.Service<DefaultRepository, GitRepository>()("test/ConfigDefaultRepository") {}
class InvalidRepository extends Context.Service<InvalidRepository, GitRepository>()("test/ConfigInvalidRepository") {}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-review-configuration-"))

const Server = layerAgentServer({
  name: "bosun-review-configuration",
  title: "Configuration",
  turns: outputTurns(3, "review.json", (request) => ({ summary: summaryFor(request), findings: [] })),
  repositories: Layer.mergeAll(
    layerGitRepository(LevelsRepository, root, LEVELS.fullName),
    layerGitRepository(DefaultRepository, root, DEFAULT.fullName),
    layerGitRepository(InvalidRepository, root, INVALID.fullName)
  )
})

const connectionOf = (org: string, cookie: string) =>
  Effect.map(request(`/api/v1/organizations/${org}/opencode-connection`, jsonRequest(cookie, "GET")), (response) => {
    assert.strictEqual(response.status, 200, response.text)
    return (response.json as { data: AgentConnection }).data
  })

/** Waits for the organization's latest catalog discovery to end; asserts it SUCCEEDED. */
const discovered = (org: string, cookie: string) =>
  Effect.gen(function* () {
    const connection = yield* eventually(
      connectionOf(org, cookie),
      (found) => found.catalog.status === "SUCCEEDED" || found.catalog.status === "FAILED",
      Duration.seconds(90)
    )
    assert.strictEqual(connection.catalog.status, "SUCCEEDED", connection.catalog.error ?? "")
    return connection
  })

/**
 * The tenant's organization with the App installed on its repository and an admin who imported
 * OpenCode credentials for the fake model, whose provider lists `models`; the catalog discovered.
 */
const setUp = (t: Tenant, models: Readonly<Record<string, unknown>>) =>
  Effect.gen(function* () {
    const model = yield* FakeModelServer
    const { sendNew } = deliveries(t.org)
    const repositoryId = yield* installApp(t, { slug: "bosun", clientId: `Iv1.${t.org}` }, sendNew)
    const admin = yield* signIn(`${t.org}-admin`, [[t.org, "ADMIN"]])
    const imported = yield* request(
      `/api/v1/organizations/${t.org}/opencode-connection/import`,
      jsonRequest(admin.cookie, "PUT", {
        auth: {
          fake: {
            type: "api",
            key: `sk-${t.org}-0123456789abcdef`,
            npm: "@ai-sdk/openai-compatible",
            name: "Fake Provider",
            base_url: model.url,
            models
          }
        }
      })
    )
    assert.strictEqual(imported.status, 200, imported.text)
    const connection = yield* discovered(t.org, admin.cookie)
    return { repositoryId, cookie: admin.cookie, sendNew, connection }
  })

const configure = (cookie: string, url: string, body: unknown) =>
  Effect.gen(function* () {
    const response = yield* request(url, jsonRequest(cookie, "PUT", body))
    assert.strictEqual(response.status, 204, response.text)
  })

const configurationOf = (cookie: string, org: string, repositoryId: string) =>
  Effect.map(
    request(`/api/v1/organizations/${org}/repositories/${repositoryId}/configuration`, jsonRequest(cookie, "GET")),
    (response) => {
      assert.strictEqual(response.status, 200, response.text)
      return (response.json as { data: RepositoryConfiguration }).data
    }
  )

/**
 * Opens pull request 1 changing `files` over `base`, delivers its webhook and waits for the review
 * to be posted; answers the run's id, the posted review and the model requests of the run.
 */
const reviewPull = <E, R>(
  t: Tenant,
  repository: GitRepository,
  base: string,
  files: Readonly<Record<string, string>>,
  sendNew: (event: string, body: string) => Effect.Effect<string, E, R>
) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    const model = yield* FakeModelServer
    const sql = yield* SqlClient.SqlClient
    const head = yield* pushToPull(repository, t.fullName, { number: 1, base, files })
    summaries.set(head, `Reviewed ${head.slice(0, 7)} of ${t.fullName}.`)
    yield* sendNew("pull_request", pullRequestEvent(t, { action: "opened", number: 1, head, base }))
    const runId = yield* runEnded(t.org, "review", 1)
    const [review] = yield* eventually(
      Effect.sync(() => fake.reviews(t.fullName, 1)),
      (posted) => posted.length > 0,
      Duration.seconds(60)
    )
    const [run] = yield* sql<{ model: string | null }>`SELECT model FROM workflow_runs WHERE id = ${runId}`
    const ofRun = model.requests.filter((entry) => JSON.stringify(entry.body).includes(head))
    return {
      head,
      runId,
      review,
      runModel: run?.model ?? null,
      requests: ofRun,
      agentRequests: ofRun.filter((entry) => entry.kind === "agent")
    }
  })

const modelOf = (entry: FakeModelRequest) => (entry.body as { readonly model?: unknown }).model

const userText = (entry: FakeModelRequest) =>
  chatMessages(entry)
    .filter((message) => message.role === "user")
    .map(messageText)
    .join("\n")

layer(Server, { excludeTestServices: true, timeout: Duration.minutes(5) })("review configuration end to end", (it) => {
  it.effect(
    "reviews with the repository's model, the organization's instructions and the file's path instruction for the matching file only",
    () =>
      Effect.gen(function* () {
        const repository = yield* LevelsRepository
        const { repositoryId, cookie, sendNew } = yield* setUp(LEVELS, {
          "fake-coder": { name: "Fake Coder" },
          "fake-reviewer": { name: "Fake Reviewer" }
        })
        const organizationSentence = "Always point out any use of the legacy billing client by name."
        const pathInstruction = "Check that every handler validates its input with the shared schema module."
        yield* configure(cookie, `/api/v1/organizations/${LEVELS.org}/configuration`, {
          model: "fake/fake-coder",
          custom_instructions: organizationSentence
        })
        yield* configure(cookie, `/api/v1/organizations/${LEVELS.org}/repositories/${repositoryId}/configuration`, {
          model: "fake/fake-reviewer"
        })
        // The organization's model change re-queues its discovery: let it end before the review.
        yield* discovered(LEVELS.org, cookie)

        const base = yield* Effect.promise(() =>
          repository.commit(
            "main",
            {
              ".bosun.yaml": [
                "path_instructions:",
                '  - path: "src/**/*.ts"',
                `    instructions: "${pathInstruction}"`,
                ""
              ].join("\n"),
              "src/handler.ts": "export const handle = (input: unknown) => input\n",
              "docs/guide.md": "# Guide\n"
            },
            "init"
          )
        )
        const reviewed = yield* reviewPull(
          LEVELS,
          repository,
          base,
          {
            "src/handler.ts": "export const handle = (input: unknown) => String(input)\n",
            "docs/guide.md": "# Guide\n\nHow to call the handler.\n"
          },
          sendNew
        )

        assert.include(reviewed.review?.body ?? "", summaries.get(reviewed.head) ?? "?")
        // The file is read from the default branch through the contents API, never from the head.
        const fake = yield* FakeGithub
        assert.deepStrictEqual(
          fake.requests
            .filter((entry) => entry.path === `/api/v3/repos/${LEVELS.fullName}/contents/.bosun.yaml`)
            .map((entry) => [entry.method, entry.query]),
          [["GET", "ref=main"]]
        )
        assert.strictEqual(reviewed.runModel, "fake/fake-reviewer")
        assert.isAtLeast(reviewed.agentRequests.length, 2, "the agent's tool step and its closing step")
        assert.deepStrictEqual(
          reviewed.agentRequests.map(modelOf),
          reviewed.agentRequests.map(() => "fake-reviewer"),
          "every agent step asks the repository's model, not the organization's"
        )
        for (const entry of reviewed.agentRequests) {
          assert.include(
            systemPrompt(entry),
            organizationSentence,
            "the organization's instructions are in the system prompt"
          )
        }
        const [first] = reviewed.agentRequests
        assert.isDefined(first)
        const prompt = first === undefined ? "" : userText(first)
        assert.include(
          prompt,
          renderPathInstructions([{ path: "src/**/*.ts", instructions: pathInstruction, files: ["src/handler.ts"] }]),
          "the path instruction is in the prompt with the file it matches"
        )
        const at = prompt.indexOf("## Path instructions")
        const section = prompt.slice(at)
        assert.include(prompt.slice(0, at), "docs/guide.md", "both files are under review")
        assert.include(section, "- `src/handler.ts`")
        assert.notInclude(section, "docs/guide.md", "the file the glob does not match is not listed under it")

        const configuration = yield* configurationOf(cookie, LEVELS.org, repositoryId)
        assert.strictEqual(configuration.model, "fake/fake-reviewer")
        assert.strictEqual(configuration.sources.agent, "REPOSITORY")
        assert.strictEqual(configuration.custom_instructions, organizationSentence)
        assert.deepStrictEqual(configuration.path_instructions, [
          { path: "src/**/*.ts", instructions: pathInstruction }
        ])
        assert.strictEqual(configuration.sources.instructions, "FILE")
        assert.strictEqual(configuration.config_file?.path, ".bosun.yaml")
        assert.strictEqual(configuration.config_file?.ref, "main")
        assert.strictEqual(configuration.config_file?.found, true)
        assert.strictEqual(configuration.config_file?.error, null)
      }),
    { timeout: 240_000 }
  )

  it.effect(
    "with no model set anywhere, reviews with the default picked from the catalog",
    () =>
      Effect.gen(function* () {
        const model = yield* FakeModelServer
        const repository = yield* DefaultRepository
        // Listed first and first in the alphabet, the small model is not the pick: the larger context wins.
        const { repositoryId, cookie, sendNew, connection } = yield* setUp(DEFAULT, {
          "fake-alpha": { name: "Fake Alpha", limit: { context: 16_000, output: 2_000 } },
          "fake-zeta": { name: "Fake Zeta", limit: { context: 200_000, output: 8_000 } }
        })
        const pick = defaultModel(connection.catalog.catalog)
        assert.strictEqual(pick?.id, "fake/fake-zeta")

        const base = yield* Effect.promise(() =>
          repository.commit("main", { "src/index.ts": "export const one = 1\n" }, "init")
        )
        const reviewed = yield* reviewPull(
          DEFAULT,
          repository,
          base,
          { "src/index.ts": "export const one = 1\nexport const two = 2\n" },
          sendNew
        )

        const configuration = yield* configurationOf(cookie, DEFAULT.org, repositoryId)
        assert.strictEqual(configuration.model, "", "no model is configured")
        assert.strictEqual(configuration.sources.agent, "DEFAULT")
        assert.strictEqual(reviewed.runModel, pick?.id ?? "?")
        assert.isAtLeast(reviewed.agentRequests.length, 2)
        assert.deepStrictEqual(
          reviewed.agentRequests.map(modelOf),
          reviewed.agentRequests.map(() => "fake-zeta")
        )
        assert.deepStrictEqual(
          model.requests.filter((entry) => modelOf(entry) === "default" || modelOf(entry) === "fake/default"),
          [],
          "no request asks for a model named default"
        )
      }),
    { timeout: 240_000 }
  )

  it.effect(
    "an invalid .bosun.yaml is ignored and the posted review's summary names its error",
    () =>
      Effect.gen(function* () {
        const repository = yield* InvalidRepository
        const { repositoryId, cookie, sendNew } = yield* setUp(INVALID, { "fake-coder": { name: "Fake Coder" } })
        const ignoredInstruction = "Answer every finding in the voice of a pirate."
        const base = yield* Effect.promise(() =>
          repository.commit(
            "main",
            {
              ".bosun.yaml": [
                "review_policy:",
                "  strictness: EXTREME",
                `custom_instructions: "${ignoredInstruction}"`,
                ""
              ].join("\n"),
              "src/index.ts": "export const one = 1\n"
            },
            "init"
          )
        )
        const reviewed = yield* reviewPull(
          INVALID,
          repository,
          base,
          { "src/index.ts": "export const one = 1\nexport const two = 2\n" },
          sendNew
        )

        const error =
          '`.bosun.yaml` line 2: review_policy.strictness: expected one of "LOW" | "MEDIUM" | "HIGH" — the file was ignored for this review.'
        const body = reviewed.review?.body ?? ""
        assert.include(body, summaries.get(reviewed.head) ?? "?")
        assert.include(body, "`.bosun.yaml` line 2")
        assert.include(body, `> [!WARNING]\n> ${error}`)
        // Nothing of the file applies: not its instructions either.
        for (const entry of reviewed.agentRequests) assert.notInclude(systemPrompt(entry), ignoredInstruction)

        const configuration = yield* configurationOf(cookie, INVALID.org, repositoryId)
        assert.strictEqual(configuration.config_file?.path, ".bosun.yaml")
        assert.strictEqual(configuration.config_file?.ref, "main")
        assert.strictEqual(configuration.config_file?.found, true)
        assert.strictEqual(configuration.config_file?.error, error)
        assert.strictEqual(configuration.review_policy.strictness, "LOW")
        assert.strictEqual(configuration.sources.review_policy, "DEFAULT")
        assert.strictEqual(configuration.custom_instructions, "")
        assert.deepStrictEqual(configuration.path_instructions, [])
        const warnings = (yield* logsNamed("config_file_ignored")).filter(
          (record) => record.repository_id === repositoryId
        )
        assert.deepStrictEqual(
          warnings.map((record) => [record.level, record.reason]),
          [["warn", error]]
        )
      }),
    { timeout: 240_000 }
  )
})

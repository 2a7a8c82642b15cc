/**
 * A context suggestion end to end (a repository importing a package from a sibling repository → one
 * suggestion → approve → the next run checks both out). Two repositories of one installation on the
 * fake GitHub: `web`, whose pull request adds an import of the package `shared` publishes. A real
 * Bosun reviews it through the real runtime and OpenCode with a scripted model and, in the same
 * publish step, proposes `shared` as context; approved through the API, the next review's run has
 * `shared` checked out read-only beside `web`, and the agent is told so. Nothing is proposed twice.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { ContextSuggestion, RepositoryConfiguration } from "@bosun/domain"
import {
  FakeGithub,
  type FakeModelRequest,
  FakeModelServer,
  type FakeModelTurn,
  type GitRepository,
  toolResults
} from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { connectFakeAgent, jsonRequest, layerAgentServer, layerGitRepository, runEnded } from "../support/AgentStack.ts"
import { APP_ID, processed } from "../support/GithubDeliveries.ts"
import { signIn } from "../support/Identity.ts"
import { deliveries, installApp, type Tenant } from "../support/InstalledApp.ts"
import { pullRequestEvent, pushToPull } from "../support/PullRequests.ts"
import { request } from "../support/TestServer.ts"

const tenant: Tenant = {
  org: "context-e2e",
  account: { id: 73_201, login: "acme-ctx" },
  installationId: 83_201,
  githubRepositoryId: 94_201,
  fullName: "acme-ctx/web"
}
const ORG = tenant.org
const WEB = tenant.fullName
const SHARED = "acme-ctx/shared"
const SHARED_ID = 94_202
const GREETING = 'exports.greet = (name) => "Hello, " + name\n'

/**
 * The review's bash: list the workspace, read the sibling and show its file's mode (tests run as
 * root, whom a read-only mode does not stop, so the mode is what is checked); then the review.
 */
const turns = (runs: number): ReadonlyArray<FakeModelTurn> =>
  Array.from(
    { length: runs },
    (): ReadonlyArray<FakeModelTurn> => [
      {
        type: "tools",
        calls: [
          {
            name: "bash",
            arguments: (_: FakeModelRequest) => ({
              command: [
                "ls -1",
                "if [ -d context-shared ]; then cat context-shared/index.js; stat -c '%A %n' context-shared/index.js; fi",
                `cat > "$BOSUN_OUTPUT_DIR/review.json" <<'JSON'\n${JSON.stringify({ summary: "Uses greet from shared.", findings: [] })}\nJSON`
              ].join("\n"),
              description: "Look around and write the review"
            })
          }
        ],
        usage: { input: 900, output: 60 }
      },
      { type: "text", text: "Reviewed.", usage: { input: 1_000, output: 4 } }
    ]
  ).flat()

class WebRepository extends Context.Service<WebRepository, GitRepository>()("test/ContextWebRepository") {}
class SharedRepository extends Context.Service<SharedRepository, GitRepository>()("test/ContextSharedRepository") {}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-context-e2e-"))

const Server = layerAgentServer({
  name: "bosun-context-e2e",
  title: "Context",
  turns: turns(2),
  repositories: Layer.merge(
    layerGitRepository(WebRepository, root, WEB),
    layerGitRepository(SharedRepository, root, SHARED)
  )
})

const json = jsonRequest
const reviewEnded = (count: number) => runEnded(ORG, "review", count)

layer(Server, { excludeTestServices: true, timeout: Duration.minutes(5) })("context suggestions", (it) => {
  it.effect(
    "a pull request importing a sibling's package gets one suggestion; approved, the next review checks both repositories out, the sibling read-only",
    () =>
      Effect.gen(function* () {
        const fake = yield* FakeGithub
        const model = yield* FakeModelServer
        const web = yield* WebRepository
        const shared = yield* SharedRepository
        const { send, sendNew } = deliveries("context-e2e")
        yield* Effect.promise(() =>
          shared.commit(
            "main",
            { "package.json": JSON.stringify({ name: "@acme-ctx/shared", main: "index.js" }), "index.js": GREETING },
            "init"
          )
        )
        const base = yield* Effect.promise(() =>
          web.commit("main", { "package.json": JSON.stringify({ name: "@acme-ctx/web" }) }, "init")
        )
        const webId = yield* installApp(tenant, { slug: "bosun", clientId: "Iv1.context-e2e" }, sendNew)
        // The App is installed on both repositories: `shared` arrives as GitHub announces it.
        fake.addInstallation({
          id: tenant.installationId,
          appId: APP_ID,
          account: { ...tenant.account, type: "Organization" },
          repositories: [WEB, SHARED]
        })
        const added = yield* sendNew(
          "installation_repositories",
          JSON.stringify({
            action: "added",
            installation: { id: tenant.installationId, account: { ...tenant.account, type: "Organization" } },
            repositories_added: [{ id: SHARED_ID, name: "shared", full_name: SHARED, private: true }],
            repositories_removed: []
          })
        )
        assert.isNull(yield* processed(added))
        const sql = yield* SqlClient.SqlClient
        const [sharedRow] = yield* sql<{ id: string }>`
          SELECT id FROM repositories WHERE organization_id = ${ORG} AND github_repository_id = ${SHARED_ID}`
        const sharedId = sharedRow?.id ?? ""
        const admin = yield* signIn("context-admin", [[ORG, "ADMIN"]])
        yield* connectFakeAgent(ORG, admin.cookie)

        // The pull request imports shared's package.
        const head1 = yield* pushToPull(web, WEB, {
          number: 1,
          base,
          files: { "src/hello.js": 'const { greet } = require("@acme-ctx/shared")\nconsole.log(greet("web"))\n' }
        })
        yield* sendNew("pull_request", pullRequestEvent(tenant, { action: "opened", number: 1, head: head1, base }))
        yield* reviewEnded(1)

        const listPath = `/api/v1/organizations/${ORG}/repositories/${webId}/context-suggestions`
        const listed = yield* request(listPath, json(admin.cookie, "GET"))
        assert.strictEqual(listed.status, 200, listed.text)
        const suggestions = (listed.json as { data: ReadonlyArray<ContextSuggestion> }).data
        assert.strictEqual(suggestions.length, 1)
        const [suggestion] = suggestions
        assert.deepStrictEqual(
          { ...suggestion, id: "id", proposed_at: "t" },
          {
            access_valid: true,
            decided_at: null,
            decided_by: null,
            id: "id",
            organization_id: ORG,
            primary_repository_id: webId,
            proposed_at: "t",
            reason: 'src/hello.js imports "@acme-ctx/shared", which acme-ctx/shared publishes',
            secondary_name: "shared",
            secondary_owner: "acme-ctx",
            secondary_repository_id: sharedId,
            source: "import",
            state: "PROPOSED"
          }
        )
        // The first review had no secondary checkout.
        const firstResults = model.agentRequests().flatMap(toolResults)
        assert.isFalse(firstResults.some((result) => result.content.includes("exports.greet")))

        const decided = yield* request(
          `${listPath}/${suggestion?.id}/decision`,
          json(admin.cookie, "POST", { decision: "approve" })
        )
        assert.strictEqual(decided.status, 200, decided.text)
        assert.strictEqual((decided.json as { data: ContextSuggestion }).data.state, "APPROVED")
        const configuration = yield* request(
          `/api/v1/organizations/${ORG}/repositories/${webId}/configuration`,
          json(admin.cookie, "GET")
        )
        assert.deepStrictEqual(
          (configuration.json as { data: RepositoryConfiguration }).data.secondary_repository_ids,
          [sharedId]
        )

        // The next review: both checked out, the sibling read-only, the agent told.
        const before = model.agentRequests().length
        const head2 = yield* pushToPull(web, WEB, {
          number: 1,
          base,
          files: { "src/hello.js": 'const { greet } = require("@acme-ctx/shared")\nconsole.log(greet("all"))\n' }
        })
        yield* send("pull_request", pullRequestEvent(tenant, { action: "synchronize", number: 1, head: head2, base }))
        yield* reviewEnded(2)
        const second = model.agentRequests().slice(before)
        assert.isTrue(
          second.some((entry) => JSON.stringify(entry.body).includes("./context-shared: acme-ctx/shared")),
          "the agent is told where the sibling is"
        )
        const results = second.flatMap(toolResults).map((result) => result.content)
        assert.isTrue(
          results.some((content) => /^repo$/m.test(content) && /^context-shared$/m.test(content)),
          "both repositories are checked out"
        )
        assert.isTrue(results.some((content) => content.includes("exports.greet")))
        assert.isTrue(
          results.some((content) => content.includes("-r--r--r-- context-shared/index.js")),
          "the sibling's files are read-only"
        )
        const again = yield* request(listPath, json(admin.cookie, "GET"))
        assert.strictEqual((again.json as { data: ReadonlyArray<unknown> }).data.length, 1, "not proposed twice")
      })
  )
})

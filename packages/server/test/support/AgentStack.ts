/**
 * The agent side of end-to-end tests: the real runtime process (OpenCode inside), the settings
 * that point a test server at it, a whole test server on the fake GitHub with its git repositories
 * and the scripted model (`FakeModelServer`), an organization's OpenCode connection to that model,
 * model turns that write a run's output file, and waiting for a run of a type to end.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import {
  eventually,
  FakeGithub,
  type FakeModelRequest,
  FakeModelServer,
  type FakeModelTurn,
  type GitRepository,
  makeGitRepository
} from "@bosun/testing"
import { type RuntimeProcess, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { assert } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { ConfigurationRepo } from "../../src/features/agentConnections/ConfigurationRepo.ts"
import { layerTestServer, request } from "./TestServer.ts"

export class TestRuntime extends Context.Service<TestRuntime, RuntimeProcess>()("test/AgentStack/TestRuntime") {}

/**
 * The runtime process, its data under a fresh temporary directory named after `name` (0711: as
 * root its agents run as users of their own and must pass through to their workspaces).
 */
export const layerTestRuntime = (name: string) =>
  Layer.effect(
    TestRuntime,
    Effect.acquireRelease(
      Effect.promise(() => {
        const root = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`))
        fs.chmodSync(root, 0o711)
        return startRuntime({ BOSUN_RUNTIME_DATA_DIR: path.join(root, "runtime") })
      }),
      (runtime) => Effect.promise(() => runtime.stop())
    )
  )

/** The `runtime` settings of a test server whose attempts run on `runtime`. */
export const runtimeSettings = (runtime: RuntimeProcess) => ({
  external: Option.some({ url: new URL(runtime.base), token: Redacted.make(TOKEN) }),
  embeddedPort: 0,
  reviewAgentProfile: Option.none()
})

/** The organization's OpenCode connection to the fake model, and OpenCode with it as its agent. */
export const connectFakeAgent = (org: string, cookie: string) =>
  Effect.gen(function* () {
    const model = yield* FakeModelServer
    const imported = yield* request(`/api/v1/organizations/${org}/opencode-connection/import`, {
      method: "PUT",
      headers: { cookie, "content-type": "application/json" },
      body: JSON.stringify({
        auth: {
          fake: {
            type: "api",
            key: `sk-${org}-0123456789abcdef`,
            npm: "@ai-sdk/openai-compatible",
            name: "Fake Provider",
            base_url: model.url,
            models: { "fake-coder": { name: "Fake Coder" } }
          }
        }
      })
    })
    assert.strictEqual(imported.status, 200, imported.text)
    yield* (yield* ConfigurationRepo).setOrganizationGroup(
      org,
      "agent",
      { agent_provider: "OPENCODE", model: "fake/fake-coder" },
      null
    )
  })

/**
 * `runs` runs' worth of turns: a bash call that writes `$BOSUN_OUTPUT_DIR/<file>` with what
 * `output` gives for the agent's request, then a closing text.
 */
export const outputTurns = (
  runs: number,
  file: string,
  output: (request: FakeModelRequest) => unknown
): ReadonlyArray<FakeModelTurn> =>
  Array.from(
    { length: runs },
    (): ReadonlyArray<FakeModelTurn> => [
      {
        type: "tools",
        text: `Writing ${file}.`,
        calls: [
          {
            name: "bash",
            arguments: (request) => ({
              command: `cat > "$BOSUN_OUTPUT_DIR/${file}" <<'JSON'\n${JSON.stringify(output(request))}\nJSON`,
              description: `Write ${file}`
            })
          }
        ],
        usage: { input: 700, output: 50 }
      },
      { type: "text", text: `${file} is written.`, usage: { input: 800, output: 8 } }
    ]
  ).flat()

/** A git repository under `root`, served by the fake GitHub as `fullName`, as the service `tag`. */
export const layerGitRepository = <I>(tag: Context.Service<I, GitRepository>, root: string, fullName: string) =>
  Layer.effect(
    tag,
    Effect.gen(function* () {
      const repository = yield* Effect.promise(() => makeGitRepository(path.join(root, "git"), fullName))
      ;(yield* FakeGithub).addGitRepository(fullName, repository.dir)
      return repository
    })
  )

/**
 * A test server on the fake GitHub whose attempts run on the real runtime (named `name`) with the
 * scripted model's `turns`; `repositories` (built with `layerGitRepository`) are served by the fake.
 */
export const layerAgentServer = <ROut, E>(options: {
  readonly name: string
  readonly title: string
  readonly turns: ReadonlyArray<FakeModelTurn>
  readonly repositories: Layer.Layer<ROut, E, FakeGithub>
}) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const github = yield* FakeGithub
      const runtime = yield* TestRuntime
      return layerTestServer({
        settings: { githubApiUrl: new URL(github.apiUrl), runtime: runtimeSettings(runtime) }
      })
    })
  ).pipe(
    Layer.provideMerge(options.repositories),
    Layer.provideMerge(layerTestRuntime(options.name)),
    Layer.provideMerge(FakeModelServer.layer({ turns: options.turns, title: options.title })),
    Layer.provideMerge(FakeGithub.layer)
  )

/** A JSON request of a signed-in user. */
export const jsonRequest = (cookie: string, method: string, body?: unknown): RequestInit => ({
  method,
  headers: { cookie, "content-type": "application/json" },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

/** Waits for the organization's `count`-th run of `workflowType` to end, asserts it SUCCEEDED; answers its id. */
export const runEnded = (organizationId: string, workflowType: string, count: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const runs = yield* eventually(
      sql<{ id: string; status: string; error_message: string | null }>`
        SELECT id, status, error_message FROM workflow_runs
        WHERE organization_id = ${organizationId} AND workflow_type = ${workflowType} ORDER BY created_at, id`,
      (found) =>
        found.length === count && ["SUCCEEDED", "FAILED", "CANCELLED"].includes(found[count - 1]?.status ?? ""),
      Duration.seconds(120)
    )
    const run = runs[count - 1]
    assert.strictEqual(run?.status, "SUCCEEDED", `${workflowType} run: ${run?.error_message}`)
    return run?.id ?? ""
  })

/**
 * The agent side of end-to-end tests of work items: the real runtime process (OpenCode inside),
 * the settings that point a test server at it, an organization's OpenCode connection to the
 * scripted model (`FakeModelServer`), and model turns that write a run's output file.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type FakeModelRequest, FakeModelServer, type FakeModelTurn } from "@bosun/testing"
import { type RuntimeProcess, startRuntime, TOKEN } from "@bosun/testing/RuntimeProcess"
import { assert } from "@effect/vitest"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { ConfigurationRepo } from "../../src/persistence/ConfigurationRepo.ts"
import { request } from "./TestServer.ts"

export class TestRuntime extends Context.Service<TestRuntime, RuntimeProcess>()("test/AgentStack/TestRuntime") {}

/** The runtime process, its data under a fresh temporary directory named after `name`. */
export const layerTestRuntime = (name: string) =>
  Layer.effect(
    TestRuntime,
    Effect.acquireRelease(
      Effect.promise(() =>
        startRuntime({
          BOSUN_RUNTIME_DATA_DIR: path.join(fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`)), "runtime")
        })
      ),
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

/**
 * The CATALOG task of the real runtime process with the real agent CLIs (protocol 1.1): OPENCODE
 * lists the providers its credentials define, AGENT_ONE lists Codex's visible OpenAI models, a
 * CUSTOM profile is told the task and writes the catalog itself. Each catalog is read back from
 * `outputs/catalog.json` and decoded with the domain schema.
 */
import * as path from "node:path"
import { CatalogOutput, RunState } from "@bosun/domain"
import {
  awaitEnd,
  call,
  makeFixtures,
  type RuntimeProcess,
  readTail,
  runRequest,
  startRuntime
} from "@bosun/testing/RuntimeProcess"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

const fixtures = makeFixtures()
let runtime: RuntimeProcess
let counter = 0

const customCatalog = JSON.stringify({
  catalog: {
    providers: [
      {
        id: "house",
        name: "House models",
        models: [
          {
            id: "h1",
            name: "H One",
            variants: ["fast"],
            capabilities: { attachment: false, reasoning: true, temperature: true, tool_call: true },
            limits: { context: 64000, output: 4000 }
          }
        ]
      }
    ],
    runtime_version: "custom"
  },
  provider_version: "house-agent 2.0"
})

beforeAll(async () => {
  runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data"),
    BOSUN_RUNTIME_AGENTS: JSON.stringify({
      lister: {
        command: [
          fixtures.script(
            "lister.sh",
            `echo "{\\"type\\":\\"task\\",\\"task\\":\\"$BOSUN_TASK\\"}"
printf '%s' '${customCatalog}' > "$BOSUN_OUTPUT_DIR/catalog.json"`
          )
        ]
      }
    })
  })
}, 60_000)
afterAll(async () => {
  await runtime?.stop()
})

const runCatalog = async (overrides: Record<string, unknown>) => {
  counter++
  const ids = { run_id: `catalog-${counter}`, attempt_id: `catalog-${counter}:1` }
  const started = await call(
    runtime.base,
    "POST",
    "/v1/runs",
    runRequest(fixtures, { ...ids, task: "CATALOG", repositories: [], prompt: "list the models", ...overrides })
  )
  expect(started.status).toBe(201)
  const state = Schema.decodeUnknownSync(RunState)(await awaitEnd(runtime.base, ids.attempt_id, 60_000))
  return { ids, state }
}

const readCatalog = async (attemptId: string) => {
  const file = await call(runtime.base, "GET", `/v1/runs/${attemptId}/files/outputs/catalog.json`)
  expect(file.status).toBe(200)
  return Schema.decodeUnknownSync(Schema.fromJsonString(CatalogOutput))(file.text)
}

describe("the CATALOG task", () => {
  it("OPENCODE lists the models of the providers its credentials define, and only those", async () => {
    const { ids, state } = await runCatalog({
      agent: { kind: "OPENCODE" },
      model: "fake/m1",
      provider_credentials: {
        fake: {
          type: "api",
          key: "sk-fake-catalog-key",
          npm: "@ai-sdk/openai-compatible",
          name: "Fake Provider",
          base_url: "http://127.0.0.1:9/v1",
          models: {
            m1: { name: "Model One", limit: { context: 32000, output: 2000 }, reasoning: true },
            m2: { name: "Model Two", tool_call: false, attachment: true }
          }
        }
      }
    })
    expect(state.status).toBe("SUCCEEDED")
    expect(state.error).toBeNull()
    const output = await readCatalog(ids.attempt_id)
    expect(output.provider_version).toMatch(/^opencode \d+\.\d+\.\d+/)
    expect(output.catalog.runtime_version).toBe("bosun-runtime 0.1.0")
    expect(output.catalog.providers.map((provider) => provider.id)).toEqual(["fake"])
    const [provider] = output.catalog.providers
    expect(provider?.name).toBe("Fake Provider")
    const models = [...(provider?.models ?? [])].sort((a, b) => a.id.localeCompare(b.id))
    expect(models).toEqual([
      {
        id: "m1",
        name: "Model One",
        // OpenCode offers its reasoning efforts as variants of a reasoning model.
        variants: ["low", "medium", "high"],
        capabilities: { attachment: false, reasoning: true, temperature: false, tool_call: true },
        limits: { context: 32000, output: 2000 }
      },
      {
        id: "m2",
        name: "Model Two",
        variants: [],
        capabilities: { attachment: true, reasoning: false, temperature: false, tool_call: false },
        limits: { context: 0, output: 0 }
      }
    ])
    // The key went to OpenCode, never into the catalog.
    const file = await call(runtime.base, "GET", `/v1/runs/${ids.attempt_id}/files/outputs/catalog.json`)
    expect(file.text).not.toContain("sk-fake-catalog-key")
  }, 90_000)

  it("AGENT_ONE lists Codex's visible OpenAI models with their reasoning levels and context windows", async () => {
    const { ids, state } = await runCatalog({
      agent: { kind: "AGENT_ONE" },
      model: "openai/gpt-5.5",
      provider_credentials: { openai: { type: "api", key: "sk-codex-catalog-key" } }
    })
    expect(state.status).toBe("SUCCEEDED")
    const output = await readCatalog(ids.attempt_id)
    expect(output.provider_version).toMatch(/^codex \d+\.\d+/)
    expect(output.catalog.providers.map((provider) => [provider.id, provider.name])).toEqual([["openai", "OpenAI"]])
    const models = output.catalog.providers[0]?.models ?? []
    expect(models.length).toBeGreaterThan(0)
    for (const model of models) {
      expect(model.id).toMatch(/\S/)
      expect(model.capabilities.tool_call).toBe(true)
      expect(model.capabilities.temperature).toBe(false)
      expect(model.capabilities.reasoning).toBe(model.variants.length > 0)
      expect(model.limits.context).toBeGreaterThan(0)
      expect(model.limits.output).toBe(0)
    }
    // Codex's hidden models (its own reviewer, experiments) are not offered.
    expect(models.map((model) => model.id)).not.toContain("codex-auto-review")
  }, 90_000)

  it("a CUSTOM profile is told the task and its catalog.json is the run's output", async () => {
    const { ids, state } = await runCatalog({ agent: { kind: "CUSTOM", profile: "lister" } })
    expect(state.status).toBe("SUCCEEDED")
    expect(state.files.map((file) => file.path)).toContain("outputs/catalog.json")
    const output = await readCatalog(ids.attempt_id)
    expect(output.provider_version).toBe("house-agent 2.0")
    expect(output.catalog.providers[0]?.models[0]?.id).toBe("h1")
    const tail = await readTail(`${runtime.base}/v1/runs/${ids.attempt_id}/events?after=0`)
    const told = tail.lines.find((line) => line.type === "agent.event")
    expect(told?.data).toEqual({ type: "task", task: "CATALOG" })
  }, 60_000)

  it("OPENCODE with credentials it cannot read fails the run, naming the field and not the value", async () => {
    const { state } = await runCatalog({
      agent: { kind: "OPENCODE" },
      provider_credentials: { fake: { key: "sk-secret-value-123", unknown_field: "x" } }
    })
    expect(state.status).toBe("FAILED")
    expect(state.error?.code).toBe("invalid_provider_credentials")
    expect(state.error?.message).not.toContain("sk-secret-value-123")
  }, 60_000)
})

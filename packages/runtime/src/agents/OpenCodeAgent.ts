/**
 * The OPENCODE agent: one `opencode run --format json` turn in the workspace root, its JSONL events
 * passed on as `agent.event`s, its usage summed from `step_finish`, and its failures read from its
 * events as well as its exit code (a turn can end 0 after OpenCode refused a tool). It owns
 * translating a `RunRequest` into what OpenCode reads; it does not sandbox the agent (the runtime's
 * host does) nor proxy its credentials.
 *
 * What the agent gets, all inside the attempt (nothing is written to the repositories):
 * - HOME, XDG_* and TMPDIR of the attempt, so OpenCode's database, logs and snapshots stay there,
 *   and no project config from the directories above the workspace;
 * - `OPENCODE_CONFIG_CONTENT`: model, `autoupdate: false`, `share: "disabled"`, the providers,
 *   the MCP servers (remote, with their headers), the instructions file, and permission to write
 *   to the output and artifacts directories (outside the workspace, so otherwise "ask", which a
 *   non-interactive run refuses);
 * - `OPENCODE_AUTH_CONTENT`: the keys. They are never written to a file, but the agent's own tools
 *   run in its environment and can read them: INLINE credentials are as visible to the agent as
 *   to OpenCode; INJECTED mode hands it placeholders;
 * - `$XDG_CONFIG_HOME/opencode/`: `bosun-instructions.md` (the request's instructions, named in
 *   the config's `instructions`) and `skills/<name>/SKILL.md` (OpenCode's own skills, offered to
 *   the model through its `skill` tool);
 * - the prompt on stdin (no argv length limit, not visible in the process list), `--title` (so
 *   OpenCode makes no extra model call to name the session) and `--variant` for the reasoning
 *   effort (ignored by models without variants).
 *
 * `provider_credentials` (docs/interface.md: Resources "Agent connection", shaped like OpenCode's
 * `auth.json`), per provider id: `{"type"?: "api" (default) | "oauth" | "wellknown", "key"?,
 * "access"?, "refresh"?, "expires"?, "token"?, "accountId"?, "enterpriseUrl"?,` — the auth.json
 * entry — `"base_url"?: "https://host/v1", "npm"?: "@ai-sdk/openai-compatible", "name"?: string,
 *   "headers"?: {string: string}, "models"?: ["id", ...] | {"id": {OpenCode model options}}}`.
 * The second group defines the provider in the config: needed for a provider OpenCode does not
 * know (then `npm` and `base_url`), optional for one it does. The requested model is always
 * declared in its provider's `models`, with tool calls enabled unless the entry says otherwise.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type CatalogModel, ProviderBaseUrl, ProviderHeaders } from "@bosun/domain"
import { Effect, Result, Schema } from "effect"
import type { AgentAdapter, AgentContext, AgentOutcome } from "./Agent.ts"
import { baseEnvironment, findAgentBinary, refusedOutcome, skillMarkdown } from "./Agent.ts"
import { runAgentProcess } from "./AgentProcess.ts"
import { integerOr0, runListing } from "./Catalog.ts"

/** The `opencode` launcher (see `findAgentBinary`). */
export const findOpenCode = (searchPath?: string): string | undefined => findAgentBinary("opencode", searchPath)

type Json = Record<string, unknown>

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

const optionalString = Schema.optional(Schema.String)

/** One entry of `provider_credentials`: an auth.json entry, and optionally the provider's definition. */
const ProviderEntry = Schema.Struct({
  type: Schema.optional(Schema.Literals(["api", "oauth", "wellknown"])),
  key: optionalString,
  access: optionalString,
  refresh: optionalString,
  expires: Schema.optional(Schema.Number),
  token: optionalString,
  accountId: optionalString,
  enterpriseUrl: optionalString,
  // Checked again here, not only on import: credentials stored before the check reach this too.
  base_url: Schema.optional(ProviderBaseUrl),
  npm: optionalString,
  name: optionalString,
  headers: Schema.optional(ProviderHeaders),
  models: Schema.optional(
    Schema.Union([
      Schema.Array(Schema.String),
      Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Unknown))
    ])
  )
})

const decodeCredentials = Schema.decodeUnknownResult(Schema.Record(Schema.String, ProviderEntry), {
  onExcessProperty: "error"
})

const AUTH_FIELDS = ["key", "access", "refresh", "expires", "token", "accountId", "enterpriseUrl"] as const

/** The auth entries and provider definitions a request's credentials describe, or why they cannot be read. */
const providers = (request: AgentContext["request"]): Result.Result<{ auth: Json; provider: Json }, string> => {
  const decoded = decodeCredentials(request.provider_credentials)
  // Schema messages name the path and the expected shape, never the value: nothing of a
  // misplaced key reaches the run's state.
  if (Result.isFailure(decoded)) {
    return Result.fail(`provider_credentials: ${decoded.failure.message.replace(/\s*\n\s*/g, " ")}`)
  }
  const slash = request.model.indexOf("/")
  const modelProvider = slash > 0 ? request.model.slice(0, slash) : undefined
  const modelId = request.model.slice(slash + 1)
  const auth: Json = {}
  const provider: Json = {}
  for (const [id, entry] of Object.entries(decoded.success)) {
    const secrets = AUTH_FIELDS.filter((field) => entry[field] !== undefined)
    if (secrets.length > 0 || entry.type !== undefined) {
      auth[id] = { type: entry.type ?? "api", ...Object.fromEntries(secrets.map((field) => [field, entry[field]])) }
    }
    const defines = [entry.base_url, entry.npm, entry.name, entry.headers, entry.models].some(
      (field) => field !== undefined
    )
    if (!defines) continue
    const models: Record<string, Json> = Array.isArray(entry.models)
      ? Object.fromEntries(entry.models.map((model) => [model, {}]))
      : { ...entry.models }
    if (id === modelProvider && models[modelId] === undefined) models[modelId] = {}
    const options: Json = {
      ...(entry.base_url === undefined ? {} : { baseURL: entry.base_url }),
      ...(entry.headers === undefined ? {} : { headers: entry.headers })
    }
    provider[id] = {
      ...(entry.npm === undefined ? {} : { npm: entry.npm }),
      ...(entry.name === undefined ? {} : { name: entry.name }),
      ...(Object.keys(options).length > 0 ? { options } : {}),
      // An agent model without tools cannot work: tool calls are on unless the entry says otherwise.
      models: Object.fromEntries(
        Object.entries(models).map(([model, settings]) => [model, { tool_call: true, ...settings }])
      )
    }
  }
  return Result.succeed({ auth, provider })
}

/** Writes what OpenCode reads from its config directory, and returns the config to pass it. */
const prepare = (context: AgentContext, provider: Json): Json => {
  const { request } = context
  const configDir = path.join(context.homeDir, ".config", "opencode")
  fs.mkdirSync(configDir, { recursive: true })
  // OpenCode installs `@opencode-ai/plugin` from the npm registry into each config directory
  // that lacks it, on every start (a network fetch per attempt, ~1.7 s, and nothing we use: no
  // plugins are configured). A node_modules directory and a lock file naming it make the
  // directory count as installed.
  fs.mkdirSync(path.join(configDir, "node_modules"), { recursive: true })
  fs.writeFileSync(
    path.join(configDir, "package-lock.json"),
    JSON.stringify({ lockfileVersion: 3, packages: { "": { dependencies: { "@opencode-ai/plugin": "*" } } } })
  )
  for (const skill of request.skills) {
    const dir = path.join(configDir, "skills", skill.name)
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, "SKILL.md"), skillMarkdown(skill.name, skill.content))
  }
  const instructions = path.join(configDir, "bosun-instructions.md")
  if (request.instructions !== undefined) fs.writeFileSync(instructions, request.instructions)

  return {
    $schema: "https://opencode.ai/config.json",
    model: request.model,
    autoupdate: false,
    share: "disabled",
    ...(Object.keys(provider).length > 0 ? { provider } : {}),
    ...(request.mcp_servers.length > 0
      ? {
          mcp: Object.fromEntries(
            request.mcp_servers.map((server) => [
              server.name,
              { type: "remote", url: server.url, headers: server.headers, enabled: true }
            ])
          )
        }
      : {}),
    ...(request.instructions === undefined ? {} : { instructions: [instructions] }),
    permission: {
      external_directory: {
        [path.join(context.outputDir, "*")]: "allow",
        [path.join(context.artifactsDir, "*")]: "allow"
      }
    }
  }
}

/** OpenCode's environment: the attempt's own, its config and keys, and nothing fetched or updated. */
const environment = (context: AgentContext, config: Json, auth: Json) => ({
  ...baseEnvironment(context),
  OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
  OPENCODE_AUTH_CONTENT: JSON.stringify(auth),
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  // Otherwise each run leaves a 5.5 MB native library in TMPDIR.
  OPENCODE_DISABLE_FFF: "1",
  // The workspace root is no git repository, so OpenCode looks for a project config and
  // AGENTS.md in every directory above it, up to /: the runtime host's directories, not
  // the run's. (A repository's own AGENTS.md still reaches the model when it reads files
  // there.)
  OPENCODE_DISABLE_PROJECT_CONFIG: "1"
})

const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0)

/** What the OpenCode error names mean for the run. */
const errorCode = (name: string) =>
  ({
    APIError: "model_api_error",
    ProviderAuthError: "model_auth_error",
    MessageOutputLengthError: "output_length_exceeded",
    MessageAbortedError: "agent_aborted"
  })[name] ?? "agent_error"

const describeError = (event: Json) => {
  const error = isRecord(event.error) ? event.error : {}
  const name = typeof error.name === "string" ? error.name : "UnknownError"
  const data = isRecord(error.data) ? error.data : {}
  const message = typeof data.message === "string" && data.message !== "" ? data.message : name
  const status = typeof data.statusCode === "number" ? ` (HTTP ${data.statusCode})` : ""
  return { code: errorCode(name), message: `${name}${status}: ${message}` }
}

export const openCodeAgent =
  (binary: string): AgentAdapter =>
  (context) =>
    Effect.suspend(() => {
      const usage = { input_tokens: 0, output_tokens: 0, cost_usd: null as number | null }
      const defined = providers(context.request)
      if (Result.isFailure(defined)) {
        return refusedOutcome("invalid_provider_credentials", defined.failure)
      }
      const config = prepare(context, defined.success.provider)
      let reported: { code: string; message: string } | undefined
      let lastStepReason: string | undefined
      let refused: string | undefined
      const effort = context.request.reasoning_effort
      return runAgentProcess({
        command: binary,
        args: [
          "run",
          "--format",
          "json",
          "--title",
          `bosun ${context.request.attempt_id}`,
          ...(effort === undefined ? [] : ["--variant", effort])
        ],
        cwd: context.workspace,
        env: environment(context, config, defined.success.auth),
        grace: context.grace,
        stdin: context.request.prompt,
        onSpawn: context.onSpawn,
        runAs: context.runAs,
        onJson: (event) => {
          const part = isRecord(event.part) ? event.part : {}
          if (event.type === "step_finish") {
            const tokens = isRecord(part.tokens) ? part.tokens : {}
            const cache = isRecord(tokens.cache) ? tokens.cache : {}
            // OpenCode splits the prompt into uncached input and cache reads and writes, and the
            // completion into output and reasoning: the run counts what the provider billed.
            usage.input_tokens += Math.round(count(tokens.input) + count(cache.read) + count(cache.write))
            usage.output_tokens += Math.round(count(tokens.output) + count(tokens.reasoning))
            if (typeof part.cost === "number") usage.cost_usd = (usage.cost_usd ?? 0) + count(part.cost)
            lastStepReason = typeof part.reason === "string" ? part.reason : undefined
          }
          if (event.type === "tool_use" && refused === undefined) {
            const state = isRecord(part.state) ? part.state : {}
            if (
              state.status === "error" &&
              typeof state.error === "string" &&
              /rejected permission/i.test(state.error)
            ) {
              refused = typeof part.tool === "string" ? part.tool : "a tool"
            }
          }
          if (event.type === "error" && reported === undefined) reported = describeError(event)
          context.emit("agent.event", event)
        },
        onText: (line) => context.emit("agent.output", { line })
      }).pipe(
        Effect.map((exit): AgentOutcome => {
          // Exit 0 is not enough: a refused permission ends the turn with a step that still
          // waits for tool results, and OpenCode exits 0.
          const unfinished =
            reported === undefined &&
            exit.exitCode === 0 &&
            (lastStepReason === undefined || lastStepReason === "tool-calls")
          const error =
            reported ??
            (!unfinished
              ? undefined
              : refused === undefined
                ? { code: "turn_unfinished", message: "OpenCode exited 0 before the model finished its turn" }
                : {
                    code: "tool_refused",
                    message:
                      `OpenCode refused the ${refused} call (it asks for permission, which a non-interactive ` +
                      "run refuses) and ended the turn unfinished"
                  })
          return {
            ...exit,
            usage: { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, cost_usd: usage.cost_usd },
            ...(error === undefined ? {} : { error })
          }
        })
      )
    })

/**
 * `opencode models --verbose` prints, per model, a `provider/model` line and the model as
 * indented JSON ending with a `}` in the first column.
 */
const MODEL_BLOCK = /^([^\s/{}]+)\/(\S+)\n(\{\n[\s\S]*?\n\})$/gm

const flag = (value: unknown) => value === true

/**
 * The providers and models OpenCode offers with the request's credentials: its listing (from its
 * bundled models snapshot, with the providers the credentials define added — nothing is fetched),
 * kept to the providers the connection has credentials for, since only those can be used.
 */
export const parseOpenCodeModels = (
  output: string,
  credentials: Readonly<Record<string, Readonly<Record<string, unknown>>>>
) => {
  const providers = new Map<string, { id: string; name: string; models: Array<CatalogModel> }>()
  for (const match of output.matchAll(MODEL_BLOCK)) {
    const [, providerId = "", listedId = "", body = ""] = match
    if (!Object.hasOwn(credentials, providerId)) continue
    const parsed: unknown = JSON.parse(body)
    if (!isRecord(parsed)) continue
    const capabilities = isRecord(parsed.capabilities) ? parsed.capabilities : {}
    const limit = isRecord(parsed.limit) ? parsed.limit : {}
    const entryName = credentials[providerId]?.name
    const provider = providers.get(providerId) ?? {
      id: providerId,
      name: typeof entryName === "string" ? entryName : providerId,
      models: []
    }
    const id = typeof parsed.id === "string" ? parsed.id : listedId
    provider.models.push({
      id,
      name: typeof parsed.name === "string" && parsed.name !== "" ? parsed.name : id,
      variants: isRecord(parsed.variants) ? Object.keys(parsed.variants) : [],
      capabilities: {
        attachment: flag(capabilities.attachment),
        reasoning: flag(capabilities.reasoning),
        temperature: flag(capabilities.temperature),
        tool_call: flag(capabilities.toolcall)
      },
      limits: { context: integerOr0(limit.context), output: integerOr0(limit.output) }
    })
    providers.set(providerId, provider)
  }
  return [...providers.values()].sort((a, b) => a.id.localeCompare(b.id))
}

/** The CATALOG task for OPENCODE: `opencode models --verbose` with the run's config and keys. */
export const openCodeCatalog =
  (binary: string, version: string | null): AgentAdapter =>
  (context) =>
    Effect.suspend(() => {
      const defined = providers(context.request)
      if (Result.isFailure(defined)) {
        return refusedOutcome("invalid_provider_credentials", defined.failure)
      }
      const config = prepare(context, defined.success.provider)
      const credentials = context.request.provider_credentials
      return runListing(
        context,
        { binary, args: ["models", "--verbose"], env: environment(context, config, defined.success.auth) },
        (output) => {
          const listed = parseOpenCodeModels(output, credentials)
          return listed.length === 0 && Object.keys(credentials).length > 0
            ? `OpenCode lists no models for the providers ${Object.keys(credentials).sort().join(", ")}`
            : listed
        },
        `opencode ${version ?? "unknown"}`
      )
    })

/**
 * The AGENT_ONE agent: one `codex exec --json` turn of the Codex CLI (npm `@openai/codex`) in the
 * workspace root, its JSONL events passed on as `agent.event`s, its usage read from
 * `turn.completed`, and its failures read from `turn.failed` and `error` events as well as its exit
 * code. It owns translating a `RunRequest` into what Codex reads; it does not sandbox the agent
 * (the runtime's host does) nor proxy its credentials.
 *
 * What the agent gets, all inside the attempt (nothing is written to the repositories):
 * - `CODEX_HOME` = `$HOME/.codex` of the attempt (sessions, logs, databases stay there) with a
 *   generated `config.toml`: the model and its provider, the reasoning effort, the MCP servers
 *   (streamable HTTP, header values taken from environment variables), and:
 *   - `approval_policy = "never"`, `sandbox_mode = "danger-full-access"`: nobody is there to
 *     approve, and the runtime is the sandbox (one container or VM per runtime, egress through
 *     its proxy). Codex's own `workspace-write` sandbox works on a root VM, but it needs user
 *     namespaces that container hosts often deny (then every command fails), still lets commands
 *     read everything and write /tmp, and would need HOME, TMPDIR, outputs and artifacts as
 *     writable roots; the agent writes to `$BOSUN_OUTPUT_DIR` and `$BOSUN_ARTIFACTS_DIR` freely;
 *   - `project_root_markers = []`: Codex otherwise reads every AGENTS.md from the nearest
 *     directory above holding `.git` (the host's checkout when the data directory sits inside
 *     one, as the default `./.bosun-runtime` does) down to the workspace root. Project
 *     `.codex/config.toml` files are not read either way (no project is trusted in a fresh
 *     CODEX_HOME); the host's `/etc/codex/` is, as the machine's policy;
 *   - `allow_login_shell = false`: a login shell sources /etc/profile, which replaces PATH;
 *   - `shell_environment_policy.exclude`: the keys' variables stay out of the commands the model
 *     runs (a command running as the same user can still read Codex's own environment in /proc:
 *     INJECTED mode hands it placeholders);
 *   - `web_search = "disabled"`: hosted search runs at the provider, outside the egress tiers;
 *     analytics, plugins, apps, bundled skills and the update check off: measured, they reach
 *     chatgpt.com, ab.chatgpt.com, github.com and api.github.com on every start;
 * - `$CODEX_HOME/AGENTS.md`: the request's instructions (Codex's global instructions, sent with
 *   the workspace root's AGENTS.md if there is one; a repository's own AGENTS.md reaches the
 *   model when it works there); `$CODEX_HOME/skills/<name>/SKILL.md`: the request's skills;
 * - the keys only in environment variables (`env_key`, `env_http_headers`, `CODEX_API_KEY`);
 * - the prompt on stdin (`codex exec -`: no argv length limit, not in the process list).
 *
 * `model` is `<provider id>/<model>`; without a slash the provider is Codex's built-in `openai`.
 * `provider_credentials`, per provider id: `{"type"?: "api", "key"?: "...", "base_url"?:
 * "https://host/v1", "name"?, "wire_api"?: "responses", "headers"?: {string: string},
 * "query_params"?: {string: string}, "request_max_retries"?, "stream_max_retries"?,
 * "stream_idle_timeout_ms"?}` defines `[model_providers.<id>]` (Codex speaks only the Responses
 * API; query parameters are not secret: they appear in error messages). `openai` is built in and
 * cannot be redefined: its entry takes only `key` (as `CODEX_API_KEY`) and `base_url` (as
 * `openai_base_url`). ChatGPT sign-in tokens (Codex's `auth.json`) are not accepted yet.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { type CatalogModel, ProviderBaseUrl, ProviderHeaders } from "@bosun/domain"
import { Effect, Option, Result, Schema } from "effect"
import type { AgentAdapter, AgentContext, AgentOutcome } from "./Agent.ts"
import { baseEnvironment, findAgentBinary, refusedOutcome, skillMarkdown } from "./Agent.ts"
import { runAgentProcess } from "./AgentProcess.ts"
import { integerOr0, runListing } from "./Catalog.ts"

/** The `codex` launcher (see `findAgentBinary`). */
export const findCodex = (searchPath?: string): string | undefined => findAgentBinary("codex", searchPath)

type Json = Record<string, unknown>

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

const OPENAI = "openai"
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const StringMap = Schema.Record(Schema.String, Schema.String)

/** One entry of `provider_credentials`: the key, and the provider's definition for Codex. */
const ProviderEntry = Schema.Struct({
  type: Schema.optional(Schema.Literal("api")),
  key: Schema.optional(Schema.String),
  // Checked again here, not only on import: credentials stored before the check reach this too.
  base_url: Schema.optional(ProviderBaseUrl),
  name: Schema.optional(Schema.String),
  wire_api: Schema.optional(Schema.Literal("responses")),
  headers: Schema.optional(ProviderHeaders),
  query_params: Schema.optional(StringMap),
  request_max_retries: Schema.optional(NonNegativeInt),
  stream_max_retries: Schema.optional(NonNegativeInt),
  stream_idle_timeout_ms: Schema.optional(NonNegativeInt)
})

const decodeCredentials = Schema.decodeUnknownResult(Schema.Record(Schema.String, ProviderEntry), {
  onExcessProperty: "error"
})

type TomlValue = string | number | boolean | ReadonlyArray<string> | Readonly<Record<string, string>>

/** A TOML basic string: JSON's escapes are TOML's, except that TOML also escapes DEL. */
const tomlString = (value: string) => JSON.stringify(value).replace(/\u007f/g, "\\u007f")

const tomlValue = (value: TomlValue): string =>
  typeof value === "string"
    ? tomlString(value)
    : typeof value === "number" || typeof value === "boolean"
      ? String(value)
      : Array.isArray(value)
        ? `[${value.map(tomlString).join(", ")}]`
        : `{ ${Object.entries(value)
            .map(([key, entry]) => `${tomlString(key)} = ${tomlString(entry)}`)
            .join(", ")} }`

/** Lines of `key = value` for the defined entries, under a `[table]` header when named. */
const tomlTable = (name: string | undefined, entries: Readonly<Record<string, TomlValue | undefined>>) =>
  [
    ...(name === undefined ? [] : [`\n[${name}]`]),
    ...Object.entries(entries).flatMap(([key, value]) => (value === undefined ? [] : [`${key} = ${tomlValue(value)}`]))
  ].join("\n")

/** Header values as environment variables named `<prefix>_HEADER_<n>`, and Codex's `env_http_headers` naming them. */
const headersThroughEnv = (prefix: string, headers: Readonly<Record<string, string>>, env: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(headers).map(([name, value], index) => {
      const variable = `${prefix}_HEADER_${index}`
      env[variable] = value
      return [name, variable]
    })
  )

/** Codex's config for the request and the variables carrying its secrets, or why the credentials cannot be used. */
const configure = (context: AgentContext): Result.Result<{ config: string; env: Record<string, string> }, string> => {
  const { request } = context
  const decoded = decodeCredentials(request.provider_credentials)
  // Schema messages name the path and the expected shape, never the value: nothing of a
  // misplaced key reaches the run's state.
  if (Result.isFailure(decoded)) {
    return Result.fail(`provider_credentials: ${decoded.failure.message.replace(/\s*\n\s*/g, " ")}`)
  }
  const slash = request.model.indexOf("/")
  const provider = slash > 0 ? request.model.slice(0, slash) : OPENAI
  const model = slash > 0 ? request.model.slice(slash + 1) : request.model
  const env: Record<string, string> = {}
  let openaiBaseUrl: string | undefined
  const providerTables: Array<string> = []
  for (const [index, [id, entry]] of Object.entries(decoded.success).entries()) {
    if (id === OPENAI) {
      const extra = Object.keys(entry).filter((field) => !["type", "key", "base_url"].includes(field))
      if (extra.length > 0) {
        return Result.fail(
          `provider_credentials: ["openai"] is Codex's built-in provider and takes only type, key and base_url, not ${extra.join(", ")}`
        )
      }
      if (entry.key !== undefined) env.CODEX_API_KEY = entry.key
      openaiBaseUrl = entry.base_url
      continue
    }
    const prefix = `BOSUN_PROVIDER_${index}`
    if (entry.key !== undefined) env[`${prefix}_KEY`] = entry.key
    providerTables.push(
      tomlTable(`model_providers.${tomlString(id)}`, {
        name: entry.name ?? id,
        base_url: entry.base_url,
        env_key: entry.key === undefined ? undefined : `${prefix}_KEY`,
        wire_api: entry.wire_api ?? "responses",
        env_http_headers: entry.headers === undefined ? undefined : headersThroughEnv(prefix, entry.headers, env),
        query_params: entry.query_params,
        request_max_retries: entry.request_max_retries,
        stream_max_retries: entry.stream_max_retries,
        stream_idle_timeout_ms: entry.stream_idle_timeout_ms
      })
    )
  }
  const mcpTables = request.mcp_servers.map((server, index) =>
    tomlTable(`mcp_servers.${tomlString(server.name)}`, {
      url: server.url,
      env_http_headers: headersThroughEnv(`BOSUN_MCP_${index}`, server.headers, env)
    })
  )
  const config = [
    "# Generated by the Bosun runtime for this attempt (packages/runtime/src/agents/CodexAgent.ts).",
    tomlTable(undefined, {
      model,
      model_provider: provider,
      model_reasoning_effort: request.reasoning_effort,
      openai_base_url: openaiBaseUrl,
      approval_policy: "never",
      sandbox_mode: "danger-full-access",
      allow_login_shell: false,
      project_root_markers: [],
      web_search: "disabled",
      check_for_update_on_startup: false
    }),
    ...providerTables,
    ...mcpTables,
    tomlTable("shell_environment_policy", { exclude: ["BOSUN_PROVIDER_*", "BOSUN_MCP_*", "CODEX_API_KEY"] }),
    tomlTable("analytics", { enabled: false }),
    tomlTable("features", { plugins: false, apps: false }),
    tomlTable("skills.bundled", { enabled: false })
  ].join("\n")
  return Result.succeed({ config: `${config}\n`, env })
}

/** Writes CODEX_HOME: the config, the instructions, the skills. */
const prepare = (context: AgentContext, codexHome: string, config: string) => {
  fs.mkdirSync(codexHome, { recursive: true })
  fs.writeFileSync(path.join(codexHome, "config.toml"), config)
  if (context.request.instructions !== undefined) {
    fs.writeFileSync(path.join(codexHome, "AGENTS.md"), context.request.instructions)
  }
  for (const skill of context.request.skills) {
    const dir = path.join(codexHome, "skills", skill.name)
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, "SKILL.md"), skillMarkdown(skill.name, skill.content))
  }
}

/** An OpenAI-style error body (`{"error": {"message", "type", "code"}}`), which Codex quotes for a 400. */
const decodeApiError = Schema.decodeUnknownOption(
  Schema.fromJsonString(
    Schema.Struct({
      error: Schema.Struct({
        message: Schema.String,
        type: Schema.optional(Schema.NullOr(Schema.String)),
        code: Schema.optional(Schema.NullOr(Schema.String))
      })
    })
  )
)

/**
 * What a failed turn's message means for the run. `retries` is how many times Codex said it was
 * reconnecting to the model first: only model requests are retried, and a 5xx ends in a message
 * naming no status.
 */
const describeFailure = (message: string, retries: number) => {
  const body = decodeApiError(message)
  if (Option.isSome(body)) {
    const { error } = body.value
    const kind = error.code ?? error.type ?? undefined
    return {
      code: error.code === "invalid_api_key" ? "model_auth_error" : "model_api_error",
      message: kind === undefined ? error.message : `${error.message} (${kind})`
    }
  }
  // Other statuses come as "unexpected status 401 Unauthorized: <body>, url: ...", after Codex's retries.
  const status = /unexpected status (\d{3})/.exec(message)?.[1]
  if (status === undefined) {
    return retries === 0
      ? { code: "turn_failed", message }
      : { code: "model_api_error", message: `${message} (after ${retries} ${retries === 1 ? "retry" : "retries"})` }
  }
  return { code: status === "401" || status === "403" ? "model_auth_error" : "model_api_error", message }
}

const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0)

export const codexAgent =
  (binary: string): AgentAdapter =>
  (context) =>
    Effect.suspend(() => {
      const usage = { input_tokens: 0, output_tokens: 0, cost_usd: null as number | null }
      const configured = configure(context)
      if (Result.isFailure(configured)) {
        return refusedOutcome("invalid_provider_credentials", configured.failure)
      }
      const codexHome = path.join(context.homeDir, ".codex")
      prepare(context, codexHome, configured.success.config)
      let completed = false
      let failed: { code: string; message: string } | undefined
      let lastError: string | undefined
      let retries = 0
      return runAgentProcess({
        command: binary,
        // The workspace root holds the repositories but is no git repository itself.
        args: ["exec", "--json", "--skip-git-repo-check", "-"],
        cwd: context.workspace,
        env: { ...baseEnvironment(context), CODEX_HOME: codexHome, ...configured.success.env },
        grace: context.grace,
        stdin: context.request.prompt,
        onSpawn: context.onSpawn,
        runAs: context.runAs,
        onJson: (event) => {
          if (event.type === "turn.completed") {
            completed = true
            // The Responses API counts cached input in `input_tokens` and reasoning in
            // `output_tokens`: what the provider billed.
            const tokens = isRecord(event.usage) ? event.usage : {}
            usage.input_tokens += Math.round(count(tokens.input_tokens))
            usage.output_tokens += Math.round(count(tokens.output_tokens))
          }
          if (event.type === "turn.failed" && failed === undefined) {
            const error = isRecord(event.error) ? event.error : {}
            failed = describeFailure(typeof error.message === "string" ? error.message : "The turn failed", retries)
          }
          // `error` events also announce retries ("Reconnecting... 1/5"); only the last one before
          // the end counts, and only when the turn did not complete. (Items of type `error` are
          // warnings: an unknown model's metadata, deprecated settings.)
          if (event.type === "error" && typeof event.message === "string") {
            lastError = event.message
            if (/^Reconnecting\.\.\. \d+\/\d+/.test(event.message)) retries++
          }
          context.emit("agent.event", event)
        },
        onText: (line) => context.emit("agent.output", { line })
      }).pipe(
        Effect.map((exit): AgentOutcome => {
          const error =
            failed ??
            (completed
              ? undefined
              : lastError !== undefined
                ? describeFailure(lastError, retries)
                : exit.exitCode === 0
                  ? { code: "turn_unfinished", message: "Codex exited 0 without completing its turn" }
                  : undefined)
          return {
            ...exit,
            usage: { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, cost_usd: usage.cost_usd },
            ...(error === undefined ? {} : { error })
          }
        })
      )
    })

/**
 * `codex debug models` prints Codex's model catalog as JSON: the OpenAI models it knows (its
 * bundled list, refreshed when it can reach OpenAI), each with its reasoning levels, context
 * window and input modalities. Codex states no output limit (0) and takes no temperature; every
 * model calls tools. Hidden models are left out. Providers the credentials define besides
 * `openai` are listed without models: Codex uses whatever model name it is given for them.
 */
export const parseCodexModels = (
  output: string,
  credentials: Readonly<Record<string, Readonly<Record<string, unknown>>>>
) => {
  const start = output.indexOf("{")
  if (start === -1) return "Codex printed no model catalog"
  const parsed = Effect.runSync(
    Effect.try({ try: (): unknown => JSON.parse(output.slice(start)), catch: () => undefined }).pipe(
      Effect.orElseSucceed(() => undefined)
    )
  )
  if (!isRecord(parsed) || !Array.isArray(parsed.models)) return "Codex's model catalog is not the JSON it should be"
  const models: Array<CatalogModel> = []
  for (const model of parsed.models) {
    if (!isRecord(model) || typeof model.slug !== "string" || model.visibility === "hide") continue
    const levels = Array.isArray(model.supported_reasoning_levels) ? model.supported_reasoning_levels : []
    const efforts = levels.flatMap((level) =>
      isRecord(level) && typeof level.effort === "string" ? [level.effort] : []
    )
    const modalities = Array.isArray(model.input_modalities) ? model.input_modalities : []
    models.push({
      id: model.slug,
      name: typeof model.display_name === "string" ? model.display_name : model.slug,
      variants: efforts,
      capabilities: {
        attachment: modalities.includes("image"),
        reasoning: efforts.length > 0,
        temperature: false,
        tool_call: true
      },
      limits: { context: integerOr0(model.context_window), output: 0 }
    })
  }
  const others = Object.entries(credentials)
    .filter(([id]) => id !== OPENAI)
    .map(([id, entry]) => ({ id, name: typeof entry.name === "string" ? entry.name : id, models: [] }))
  return [{ id: OPENAI, name: "OpenAI", models }, ...others].sort((a, b) => a.id.localeCompare(b.id))
}

/** The CATALOG task for AGENT_ONE: `codex debug models` with the run's generated config. */
export const codexCatalog =
  (binary: string, version: string | null): AgentAdapter =>
  (context) =>
    Effect.suspend(() => {
      const configured = configure(context)
      if (Result.isFailure(configured)) {
        return refusedOutcome("invalid_provider_credentials", configured.failure)
      }
      const codexHome = path.join(context.homeDir, ".codex")
      prepare(context, codexHome, configured.success.config)
      return runListing(
        context,
        {
          binary,
          args: ["debug", "models"],
          env: { ...baseEnvironment(context), CODEX_HOME: codexHome, ...configured.success.env }
        },
        (output) => parseCodexModels(output, context.request.provider_credentials),
        `codex ${version ?? "unknown"}`
      )
    })

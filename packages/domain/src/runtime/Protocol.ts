/**
 * The agent runtime protocol (docs/interface.md: Agent runtime protocol; Authentication 6;
 * Events 2; Versioning 2): the one narrow interface between the control plane and the place agent
 * code runs. The runtime (`packages/runtime`) serves it on port 8787; the control plane's runtime
 * client speaks it to whichever sandbox provider hosts a runtime.
 *
 * - Every request but `GET /healthz` carries `Authorization: Bearer <token>` and
 *   `X-Bosun-Protocol: <major.minor>`; another major is refused with 426.
 * - `POST /v1/runs` starts a run, idempotent by `(run_id, attempt_id)`.
 * - `GET /v1/runs/{id}/events?after=N` tails the run's events as NDJSON: the stored events with
 *   `seq > N`, then live ones, with a heartbeat line every 5 s that carries the run's phase and
 *   is never stored.
 * - `GET /v1/runs/{id}/result`, `GET /v1/runs/{id}/files/{path}`, `DELETE /v1/runs/{id}` (cancel).
 *
 * A run has a `task`: `AGENT` (the default) has the agent work on the prompt; `CATALOG` (protocol
 * 1.1) has the agent CLI list the providers and models it can use with the request's credentials,
 * which the runtime leaves as `outputs/catalog.json` (`CatalogOutput`) — the catalog discovery of
 * an agent connection. A 1.0 runtime refuses the field (400), never runs an agent in its place.
 *
 * `{id}` is the attempt id (`runId:attempt` from the control plane): an attempt is the unit that
 * runs, and a retried run is a new attempt with its own workspace and log. An attempt id belongs
 * to one run; starting it under another run id is a conflict.
 */
import { Schema } from "effect"

export const RUNTIME_PROTOCOL_VERSION = "1.1"
export const RUNTIME_PROTOCOL_HEADER = "x-bosun-protocol"

/** Whether a runtime reporting `version` (its health's `protocol_version`) serves this control plane: same major. */
export const isCompatibleRuntimeProtocol = (version: string) =>
  version.split(".")[0] === RUNTIME_PROTOCOL_VERSION.split(".")[0]

/** `run_id` and `attempt_id`: the control plane's ids, also path segments, so a safe alphabet. */
export const RuntimeId = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/))

export const AgentKind = Schema.Literals(["OPENCODE", "AGENT_ONE", "CUSTOM"])
export type AgentKind = typeof AgentKind.Type

export const EgressTier = Schema.Literals(["STRICT", "BUILD", "DEEP_SCAN"])
export const CredentialMode = Schema.Literals(["INLINE", "INJECTED"])
export const ReasoningEffort = Schema.Literals(["low", "medium", "high"])

/** A repository to check out into the workspace, under `path`. */
export const RunRepository = Schema.Struct({
  id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128)),
  /** A git URL: https://, or file:// for a repository on the runtime's own disk. */
  url: Schema.String.check(Schema.isPattern(/^(https?|file):\/\/\S+$/)),
  /** Branch or tag to check out; `sha`, when given, pins the exact commit and must be reachable from it. */
  ref: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(255)),
  sha: Schema.optional(Schema.String.check(Schema.isPattern(/^[0-9a-f]{40}([0-9a-f]{24})?$/))),
  /** Directory under the workspace: a plain name. */
  path: Schema.String.check(Schema.isPattern(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/)),
  /** An access token (INLINE) or a `bosun-inject-...` placeholder (INJECTED); null for public ones. */
  credential: Schema.NullOr(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(4096))),
  /**
   * Context only (a secondary repository): its files are checked out read-only and nothing the
   * agent does there is collected into the run's changes.
   */
  read_only: Schema.optional(Schema.Boolean)
})
export type RunRepository = typeof RunRepository.Type

export const McpServer = Schema.Struct({
  name: Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9_-]{0,63}$/)),
  url: Schema.String.check(Schema.isPattern(/^https?:\/\/\S+$/)),
  headers: Schema.Record(Schema.String, Schema.String)
})

export const Skill = Schema.Struct({
  /** The skill's directory name under the agent's skills folder. */
  name: Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9._-]{0,63}$/)),
  content: Schema.String.check(Schema.isMaxLength(200_000))
})

export const RunAgent = Schema.Struct({
  kind: AgentKind,
  /** For CUSTOM: the name of a profile in the runtime's configuration. */
  profile: Schema.optional(Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9_-]{0,63}$/)))
})

export const RunTask = Schema.Literals(["AGENT", "CATALOG"])
export type RunTask = typeof RunTask.Type

export const RunRequest = Schema.Struct({
  run_id: RuntimeId,
  attempt_id: RuntimeId,
  agent: RunAgent,
  /** What the agent is asked to do; `AGENT` when absent. */
  task: Schema.optional(RunTask),
  /** `provider/model` as the agent CLI names it. */
  model: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(255)),
  reasoning_effort: Schema.optional(ReasoningEffort),
  prompt: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(1_000_000)),
  instructions: Schema.optional(Schema.String.check(Schema.isMaxLength(1_000_000))),
  repositories: Schema.Array(RunRepository).check(Schema.isMaxLength(20)),
  mcp_servers: Schema.Array(McpServer).check(Schema.isMaxLength(50)),
  skills: Schema.Array(Skill).check(Schema.isMaxLength(100)),
  egress_tier: EgressTier,
  time_limit_seconds: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 86_400 })),
  credential_mode: CredentialMode,
  /**
   * The agent's provider credentials, shaped like OpenCode's `auth.json` (provider id → object);
   * placeholders in INJECTED mode. Never written to the runtime's disk.
   */
  provider_credentials: Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Unknown))
})
export type RunRequest = typeof RunRequest.Type

export const RunStatus = Schema.Literals(["RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"])
export type RunStatus = typeof RunStatus.Type

/** Where the run is: checking out, the agent at work, collecting its changes, done. */
export const RunPhase = Schema.Literals(["PREPARING", "AGENT", "COLLECTING", "DONE"])
export type RunPhase = typeof RunPhase.Type

export const FileKind = Schema.Literals(["DIFF", "ARTIFACT", "OUTPUT"])

export const RunFile = Schema.Struct({
  /** The path under `.../files/`: `changes.diff`, `artifacts/<name>`, `outputs/<name>`. */
  path: Schema.String,
  kind: FileKind,
  size: Schema.Int,
  sha256: Schema.String,
  content_type: Schema.String
})
export type RunFile = typeof RunFile.Type

export const RunUsage = Schema.Struct({
  input_tokens: Schema.Int,
  output_tokens: Schema.Int,
  cost_usd: Schema.NullOr(Schema.Number),
  duration_ms: Schema.Int
})
export type RunUsage = typeof RunUsage.Type

/** A run as `POST /v1/runs` and `GET .../result` describe it; files and usage are final once it has ended. */
export const RunState = Schema.Struct({
  run_id: Schema.String,
  attempt_id: Schema.String,
  agent: AgentKind,
  status: RunStatus,
  phase: RunPhase,
  /** Whether a failed run may succeed if tried again (the runtime restarted, the agent timed out). */
  retryable: Schema.Boolean,
  exit_code: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.Struct({ code: Schema.String, message: Schema.String })),
  usage: RunUsage,
  files: Schema.Array(RunFile),
  last_seq: Schema.Int,
  started_at: Schema.String,
  finished_at: Schema.NullOr(Schema.String)
})
export type RunState = typeof RunState.Type

/**
 * One stored event. `type` names it: `run.phase` (data: {phase}), `agent.event` (data: one event
 * of the agent's own JSON stream), `agent.stderr` (data: {lines}), `run.finished` (data: the
 * final RunState). Sequence numbers start at 1 and have no gaps.
 */
export const RunEvent = Schema.Struct({
  seq: Schema.Int,
  at: Schema.String,
  type: Schema.String,
  data: Schema.Unknown
})
export type RunEvent = typeof RunEvent.Type

/** A model an agent CLI offers, as the agent connection's catalog shows it. */
export const CatalogModel = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  /** Reasoning variants (`low`, `high`, ...), as the CLI names them. */
  variants: Schema.Array(Schema.String),
  capabilities: Schema.Struct({
    attachment: Schema.Boolean,
    reasoning: Schema.Boolean,
    temperature: Schema.Boolean,
    tool_call: Schema.Boolean
  }),
  /** Token limits; 0 where the CLI does not state one. */
  limits: Schema.Struct({ context: Schema.Int, output: Schema.Int })
})
export type CatalogModel = typeof CatalogModel.Type

export const CatalogProvider = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  models: Schema.Array(CatalogModel)
})

export const AgentCatalog = Schema.Struct({
  providers: Schema.Array(CatalogProvider),
  /** The Bosun runtime that asked the CLI. */
  runtime_version: Schema.String
})
export type AgentCatalog = typeof AgentCatalog.Type

/** `outputs/catalog.json` of a CATALOG run. */
export const CatalogOutput = Schema.Struct({
  catalog: AgentCatalog,
  /** The agent CLI and its version, e.g. `opencode 1.18.33`. */
  provider_version: Schema.String
})
export type CatalogOutput = typeof CatalogOutput.Type

export const CATALOG_OUTPUT_PATH = "outputs/catalog.json"

/** The heartbeat line of the tail: not stored, no sequence number. */
export const RunHeartbeat = Schema.Struct({
  type: Schema.Literal("heartbeat"),
  at: Schema.String,
  phase: RunPhase,
  last_seq: Schema.Int
})

export const RuntimeHealth = Schema.Struct({
  status: Schema.Literal("ok"),
  protocol_version: Schema.String,
  /** The agent CLIs installed, with their versions; null where a CLI is missing. */
  toolchain: Schema.Struct({
    opencode: Schema.NullOr(Schema.String),
    codex: Schema.NullOr(Schema.String),
    git: Schema.NullOr(Schema.String),
    custom_profiles: Schema.Array(Schema.String)
  }),
  active_runs: Schema.Int,
  max_runs: Schema.Int
})
export type RuntimeHealth = typeof RuntimeHealth.Type

/**
 * `POST /v1/tools/agent-auth/fetch` (docs/interface.md: Agent runtime protocol, the fallback agent
 * OAuth): when the control plane cannot reach an agent's sign-in host, it has the runtime make the
 * one request for it. Only origins in the runtime's allow-list are reached; redirects are returned,
 * not followed.
 */
export const AgentAuthFetch = Schema.Struct({
  method: Schema.Literals(["GET", "POST"]),
  url: Schema.String.check(Schema.isPattern(/^https?:\/\/\S+$/), Schema.isMaxLength(4096)),
  headers: Schema.optional(Schema.Record(Schema.String, Schema.String.check(Schema.isMaxLength(8192)))),
  body: Schema.optional(Schema.String.check(Schema.isMaxLength(1_048_576)))
})
export type AgentAuthFetch = typeof AgentAuthFetch.Type

export const AgentAuthFetchResult = Schema.Struct({
  status: Schema.Int,
  headers: Schema.Record(Schema.String, Schema.String),
  body: Schema.String
})
export type AgentAuthFetchResult = typeof AgentAuthFetchResult.Type

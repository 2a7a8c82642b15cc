/**
 * The write side of configuration: the flat body of `PUT .../configuration` at the organization
 * and at the repository level. Every field is optional — a PUT changes only the fields it names —
 * and `null` drops the level's own value so the field inherits again. Unknown fields are refused
 * (the endpoints decode with `onExcessProperty: "error"`).
 *
 * MCP server headers are secrets: a PUT sends them, the read form shows only their names, and a
 * header sent as `null` keeps the value stored for that server and header.
 */
import { Schema } from "effect"
import {
  AgentBehavior,
  AgentProvider,
  AutomaticPrDescription,
  DesignStyle,
  Glob,
  Instruction,
  IssuePullRequestMode,
  Login,
  SandboxProvider,
  SkillInput,
  SpeedMode,
  Strictness
} from "./RepositoryConfiguration.ts"

/** `null` returns the field to its inherited value; absent leaves it as it is. */
const patch = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))

/** Hosts an MCP server may use plain http on: this machine only. */
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"])

/** Whether an MCP server URL is https, or http on the loopback interface. */
export const isAllowedMcpUrl = (value: string): boolean => {
  if (!URL.canParse(value) || /\s/.test(value)) return false
  const url = new URL(value)
  if (url.username !== "" || url.password !== "") return false
  return url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname))
}

export const McpServerName = Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9_-]{0,63}$/))

export const McpServerUrl = Schema.String.check(
  Schema.isMaxLength(2048),
  Schema.makeFilter((url: string) =>
    isAllowedMcpUrl(url) ? undefined : "must be an https:// URL (plain http only on 127.0.0.1, localhost or [::1])"
  )
)

/** An HTTP header name (RFC 9110 token). */
export const HeaderName = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/))

const HeaderValue = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(8192),
  Schema.makeFilter((value: string) =>
    value.includes("\r") || value.includes("\n") || value.includes("\u0000")
      ? "must not contain a line break or NUL"
      : undefined
  )
)

export const McpServerInput = Schema.Struct({
  name: McpServerName,
  url: McpServerUrl,
  /** Sent to the server with every request (an API key, say); `null` keeps the stored value. */
  headers: Schema.optionalKey(Schema.Record(HeaderName, Schema.NullOr(HeaderValue)))
})
export type McpServerInput = typeof McpServerInput.Type

export const ReviewPolicyUpdate = Schema.Struct({
  comment_limit: patch(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  excluded_authors: patch(Schema.Array(Login).check(Schema.isMaxLength(200))),
  excluded_paths: patch(Schema.Array(Glob).check(Schema.isMaxLength(200))),
  guidance: patch(Instruction),
  max_changed_files: patch(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  review_drafts: patch(Schema.Boolean),
  review_on_open: patch(Schema.Boolean),
  review_on_push: patch(Schema.Boolean),
  review_on_ready: patch(Schema.Boolean),
  review_on_reopen: patch(Schema.Boolean),
  strictness: patch(Strictness)
})
export type ReviewPolicyUpdate = typeof ReviewPolicyUpdate.Type

/** `provider/model` as the catalog lists it (the agent CLIs' own naming). */
export const ModelId = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(255),
  Schema.isPattern(/^\S+$/, { message: "must be provider/model, without spaces" })
)

export const ReasoningEffortSetting = Schema.Literals(["low", "medium", "high"])

const RelativePath = Schema.String.check(
  Schema.isMaxLength(512),
  Schema.makeFilter((value: string) =>
    value === "" || (!value.startsWith("/") && !value.split("/").includes("..") && !value.includes("\u0000"))
      ? undefined
      : "must be a path inside the repository"
  )
)

const RepositoryIds = Schema.Array(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128))).check(
  Schema.isMaxLength(20)
)

export const ConfigurationUpdate = Schema.Struct({
  agent_behavior: patch(AgentBehavior),
  agent_behavior_custom: patch(Instruction),
  agent_provider: patch(AgentProvider),
  agent_use_cases: patch(
    Schema.Array(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))).check(Schema.isMaxLength(50))
  ),
  auto_approve_pull_requests: patch(Schema.Boolean),
  auto_handle_pull_request_feedback: patch(Schema.Boolean),
  automatic_pr_description: patch(AutomaticPrDescription),
  custom_instructions: patch(Instruction),
  design_style: patch(DesignStyle),
  design_style_custom: patch(Instruction),
  issue_pull_request_mode: patch(IssuePullRequestMode),
  mcp_servers: patch(Schema.Array(McpServerInput).check(Schema.isMaxLength(50))),
  /** `""` chooses Bosun's default pick at this level (over an organization's model); `null` inherits. */
  model: patch(Schema.Union([Schema.Literal(""), ModelId])),
  model_variant: patch(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64))),
  pull_request_template_path: patch(RelativePath),
  reasoning_effort: patch(ReasoningEffortSetting),
  review_policy: patch(ReviewPolicyUpdate),
  sandbox_config: patch(Schema.Record(Schema.String, Schema.Unknown)),
  sandbox_provider: patch(SandboxProvider),
  secondary_repository_ids: patch(RepositoryIds),
  skills: patch(Schema.Array(SkillInput).check(Schema.isMaxLength(100))),
  speed_mode: patch(SpeedMode)
})
export type ConfigurationUpdate = typeof ConfigurationUpdate.Type

/**
 * Repository configuration (docs/interface.md: Resources "Repository configuration",
 * "review_policy"; Organization endpoints GET/PUT `.../repositories/{id}/configuration`;
 * Trust boundaries 3).
 *
 * The effective configuration is built from Bosun's defaults, overlaid by the organization's
 * settings, overlaid by the repository's, one group at a time. `overrides.<group>` says whether
 * the repository sets that group itself; `sources.<group>` where the group's values come from:
 *
 * | group        | fields                                                                                     |
 * | ------------ | ------------------------------------------------------------------------------------------ |
 * | agent        | agent_provider, agent_behavior(_custom), agent_use_cases, model, model_variant,            |
 * |              | reasoning_effort, speed_mode, automatic_pr_description, issue_pull_request_mode,           |
 * |              | auto_approve_pull_requests, auto_handle_pull_request_feedback, design_style(_custom),      |
 * |              | pull_request_template_path, secondary_repository_ids                                       |
 * | instructions | custom_instructions                                                                        |
 * | mcp          | mcp_servers                                                                                |
 * | review_policy| review_policy                                                                              |
 * | sandbox      | sandbox_provider, sandbox_config                                                           |
 * | skills       | skills                                                                                     |
 *
 * Enumerations docs/interface.md leaves open are defined here. AGENT_ONE on PLATFORM_CONTAINER is
 * accepted and recorded, and yields a BLOCKING sandbox-readiness finding with
 * `AGENT_ONE_ON_PLATFORM_CONTAINER` as its message, which the prepare step reuses word for word
 * (docs/interface.md: Errors 6).
 */
import { Schema } from "effect"

export const AgentProvider = Schema.Literals(["OPENCODE", "AGENT_ONE"])
export const SandboxProvider = Schema.Literals(["PLATFORM_CONTAINER", "HOSTED_SANDBOX", "EXTERNAL_RUNTIME"])
export const AutomaticPrDescription = Schema.Literals(["DISABLED", "ENABLED"])
export const IssuePullRequestMode = Schema.Literals(["DISABLED", "DRAFT", "READY"])
export const Strictness = Schema.Literals(["LOW", "MEDIUM", "HIGH"])
export const AgentBehavior = Schema.Literals(["DEFAULT", "CUSTOM"])
export const DesignStyle = Schema.Literals(["DEFAULT", "CUSTOM"])
export const SpeedMode = Schema.Literals(["STANDARD", "FAST"])
/** Where a group's values come from; FILE is the repository's `.bosun.yaml` on its default branch. */
export const ConfigurationSource = Schema.Literals(["DEFAULT", "ORGANIZATION", "REPOSITORY", "FILE"])
export type ConfigurationSource = typeof ConfigurationSource.Type

export const CONFIGURATION_GROUPS = ["agent", "instructions", "mcp", "review_policy", "sandbox", "skills"] as const
export type ConfigurationGroup = (typeof CONFIGURATION_GROUPS)[number]

export const AGENT_ONE_ON_PLATFORM_CONTAINER =
  "AGENT_ONE is not supported on PLATFORM_CONTAINER: choose HOSTED_SANDBOX or EXTERNAL_RUNTIME for this repository"

/** Whether a glob's brackets, braces and parentheses pair up (what a matcher needs to compile it). */
export const isWellFormedGlob = (glob: string): boolean => {
  if (glob.length === 0 || glob.length > 512 || glob.includes("\u0000")) return false
  const closing: Record<string, string> = { "[": "]", "{": "}", "(": ")" }
  const stack: Array<string> = []
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] ?? ""
    if (c === "\\") {
      i++
      continue
    }
    if (stack[stack.length - 1] === "]") {
      if (c === "]") stack.pop()
      continue
    }
    if (c in closing) stack.push(closing[c] ?? "")
    else if (c === "]" || c === "}" || c === ")") {
      if (stack.pop() !== c) return false
    }
  }
  return stack.length === 0
}

export const Glob = Schema.String.check(
  Schema.makeFilter((glob: string) =>
    isWellFormedGlob(glob) ? undefined : "must be a glob of 1..512 characters whose [ ], { } and ( ) pair up"
  )
)

export const Login = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(39))

/** The longest instruction text Bosun takes (custom instructions, guidance, a path instruction). */
export const MAX_INSTRUCTION_LENGTH = 20_000

/** Free text handed to the agent: at most `MAX_INSTRUCTION_LENGTH` characters. */
export const Instruction = Schema.String.check(Schema.isMaxLength(MAX_INSTRUCTION_LENGTH))

/** One glob and the instruction for the files it matches (the CodeRabbit / PR-Agent convention). */
export const PathInstruction = Schema.Struct({
  path: Glob,
  instructions: Instruction.check(Schema.isMinLength(1))
})
export type PathInstruction = typeof PathInstruction.Type

/** An MCP server as the read form shows it: its headers' names, never their values. */
export const McpServerView = Schema.Struct({
  name: Schema.String,
  url: Schema.String,
  header_names: Schema.Array(Schema.String)
})
export type McpServerView = typeof McpServerView.Type

export const SkillName = Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9._-]{0,63}$/))

/** A skill the agent may load: its SKILL.md body (the agent CLIs' own skill format). */
export const SkillInput = Schema.Struct({
  name: SkillName,
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1024))),
  content: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100_000))
})
export type SkillInput = typeof SkillInput.Type

/** review_policy as PUT takes it (without `guidance`). */
export const ReviewPolicyInput = Schema.Struct({
  comment_limit: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  excluded_authors: Schema.Array(Login).check(Schema.isMaxLength(200)),
  excluded_paths: Schema.Array(Glob).check(Schema.isMaxLength(200)),
  max_changed_files: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  review_drafts: Schema.Boolean,
  review_on_open: Schema.Boolean,
  review_on_push: Schema.Boolean,
  review_on_ready: Schema.Boolean,
  review_on_reopen: Schema.Boolean,
  strictness: Strictness
})

export const ReviewPolicy = Schema.Struct({ ...ReviewPolicyInput.fields, guidance: Schema.String })
export type ReviewPolicy = typeof ReviewPolicy.Type

export const ConfigFileStatus = Schema.Struct({
  path: Schema.String,
  /** The branch it was read from: the repository's default branch, never a pull request's head. */
  ref: Schema.String,
  /** Whether the branch has the file. */
  found: Schema.Boolean,
  read_at: Schema.String,
  /** Why the file is ignored (it does not parse or match its schema), with its line; null when it applies. */
  error: Schema.NullOr(Schema.String)
})
export type ConfigFileStatus = typeof ConfigFileStatus.Type

const Flags = Schema.Struct({
  agent: Schema.Boolean,
  instructions: Schema.Boolean,
  mcp: Schema.Boolean,
  review_policy: Schema.Boolean,
  sandbox: Schema.Boolean,
  skills: Schema.Boolean
})

const Sources = Schema.Struct({
  agent: ConfigurationSource,
  instructions: ConfigurationSource,
  mcp: ConfigurationSource,
  review_policy: ConfigurationSource,
  sandbox: ConfigurationSource,
  skills: ConfigurationSource
})

export const RepositoryConfiguration = Schema.Struct({
  agent_behavior: AgentBehavior,
  agent_behavior_custom: Schema.String,
  agent_provider: AgentProvider,
  agent_use_cases: Schema.Array(Schema.String),
  auto_approve_pull_requests: Schema.Boolean,
  auto_handle_pull_request_feedback: Schema.Boolean,
  automatic_pr_description: AutomaticPrDescription,
  custom_instructions: Schema.String,
  design_style: DesignStyle,
  design_style_custom: Schema.String,
  issue_pull_request_mode: IssuePullRequestMode,
  mcp_servers: Schema.Array(McpServerView),
  model: Schema.String,
  model_variant: Schema.String,
  overrides: Flags,
  /** From `.bosun.yaml` only: instructions for the files a glob matches. */
  path_instructions: Schema.Array(PathInstruction),
  pull_request_template_path: Schema.String,
  reasoning_effort: Schema.String,
  review_policy: ReviewPolicy,
  sandbox_config: Schema.Record(Schema.String, Schema.Unknown),
  sandbox_provider: SandboxProvider,
  secondary_repository_ids: Schema.Array(Schema.String),
  skills: Schema.Array(SkillInput),
  sources: Sources,
  speed_mode: SpeedMode,
  /**
   * The model runs use and where it comes from: the configured `model` with the level that set it,
   * or, when none is set, Bosun's default pick from the discovered catalog with source DEFAULT;
   * null when no model is set and no catalog has been discovered.
   */
  model_in_force: Schema.NullOr(Schema.Struct({ id: Schema.String, source: ConfigurationSource })),
  /** The repository's `.bosun.yaml` as Bosun last read it (null at the organization level, or never read). */
  config_file: Schema.NullOr(ConfigFileStatus)
})
export type RepositoryConfiguration = typeof RepositoryConfiguration.Type

/** Bosun's defaults: what a group is when neither the organization nor the repository set it. */
export const DEFAULT_CONFIGURATION = {
  agent: {
    agent_behavior: "DEFAULT",
    agent_behavior_custom: "",
    agent_provider: "OPENCODE",
    agent_use_cases: [],
    auto_approve_pull_requests: false,
    auto_handle_pull_request_feedback: false,
    automatic_pr_description: "DISABLED",
    design_style: "DEFAULT",
    design_style_custom: "",
    issue_pull_request_mode: "DRAFT",
    model: "",
    model_variant: "",
    pull_request_template_path: "",
    reasoning_effort: "low",
    secondary_repository_ids: [],
    speed_mode: "STANDARD"
  },
  instructions: { custom_instructions: "" },
  mcp: { mcp_servers: [] },
  review_policy: {
    review_policy: {
      comment_limit: 10,
      excluded_authors: [],
      excluded_paths: [],
      guidance: "",
      max_changed_files: 100,
      review_drafts: false,
      review_on_open: true,
      review_on_push: true,
      review_on_ready: true,
      review_on_reopen: false,
      strictness: "LOW"
    }
  },
  sandbox: { sandbox_config: {}, sandbox_provider: "EXTERNAL_RUNTIME" },
  skills: { skills: [] }
} as const satisfies Record<ConfigurationGroup, Record<string, unknown>>

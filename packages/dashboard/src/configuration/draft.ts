/**
 * The configuration form's state and what a save sends: the form holds every field of the read
 * form as text the inputs edit, and a save sends only the fields that differ from what was
 * loaded, so a field left alone keeps inheriting. Pure functions, no React and no I/O.
 */
import {
  type AgentBehavior,
  type AgentProvider,
  type AutomaticPrDescription,
  CONFIGURATION_GROUPS,
  type ConfigurationGroup,
  type ConfigurationUpdate,
  type DesignStyle,
  type IssuePullRequestMode,
  type McpServerInput,
  type RepositoryConfiguration,
  type ReviewPolicyUpdate,
  type SandboxProvider,
  type SkillInput,
  type SpeedMode,
  type Strictness
} from "@bosun/domain"

export type McpHeaderDraft = {
  readonly key: string
  readonly name: string
  /** Whether the server already holds a value for this header (its value is never read back). */
  readonly stored: boolean
  /** A new value to send; empty keeps the stored one. */
  readonly value: string
}

export type McpServerDraft = {
  readonly key: string
  readonly name: string
  readonly url: string
  readonly headers: ReadonlyArray<McpHeaderDraft>
}

export type SkillDraft = {
  readonly key: string
  readonly name: string
  readonly description: string
  readonly content: string
}

export type Draft = {
  readonly model: string
  readonly model_variant: string
  readonly reasoning_effort: string
  readonly agent_provider: typeof AgentProvider.Type
  readonly speed_mode: typeof SpeedMode.Type
  readonly automatic_pr_description: typeof AutomaticPrDescription.Type
  readonly issue_pull_request_mode: typeof IssuePullRequestMode.Type
  readonly auto_approve_pull_requests: boolean
  readonly auto_handle_pull_request_feedback: boolean
  readonly pull_request_template_path: string
  readonly agent_behavior: typeof AgentBehavior.Type
  readonly agent_behavior_custom: string
  readonly design_style: typeof DesignStyle.Type
  readonly design_style_custom: string
  readonly agent_use_cases: string
  readonly custom_instructions: string
  readonly mcp_servers: ReadonlyArray<McpServerDraft>
  readonly guidance: string
  readonly strictness: typeof Strictness.Type
  readonly comment_limit: string
  readonly max_changed_files: string
  readonly excluded_authors: string
  readonly excluded_paths: string
  readonly review_drafts: boolean
  readonly review_on_open: boolean
  readonly review_on_push: boolean
  readonly review_on_ready: boolean
  readonly review_on_reopen: boolean
  readonly sandbox_provider: typeof SandboxProvider.Type
  readonly sandbox_config: string
  readonly skills: ReadonlyArray<SkillDraft>
}

let nextKey = 0
/** A key for a list row the user adds or reorders (React needs one that survives edits of its name). */
export const newKey = () => `row-${++nextKey}`

export const lines = (text: string) =>
  text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

export const draftOf = (configuration: RepositoryConfiguration): Draft => {
  const policy = configuration.review_policy
  return {
    model: configuration.model,
    model_variant: configuration.model_variant,
    reasoning_effort: configuration.reasoning_effort,
    agent_provider: configuration.agent_provider,
    speed_mode: configuration.speed_mode,
    automatic_pr_description: configuration.automatic_pr_description,
    issue_pull_request_mode: configuration.issue_pull_request_mode,
    auto_approve_pull_requests: configuration.auto_approve_pull_requests,
    auto_handle_pull_request_feedback: configuration.auto_handle_pull_request_feedback,
    pull_request_template_path: configuration.pull_request_template_path,
    agent_behavior: configuration.agent_behavior,
    agent_behavior_custom: configuration.agent_behavior_custom,
    design_style: configuration.design_style,
    design_style_custom: configuration.design_style_custom,
    agent_use_cases: configuration.agent_use_cases.join("\n"),
    custom_instructions: configuration.custom_instructions,
    mcp_servers: configuration.mcp_servers.map((server) => ({
      key: newKey(),
      name: server.name,
      url: server.url,
      headers: server.header_names.map((name) => ({ key: newKey(), name, stored: true, value: "" }))
    })),
    guidance: policy.guidance,
    strictness: policy.strictness,
    comment_limit: String(policy.comment_limit),
    max_changed_files: String(policy.max_changed_files),
    excluded_authors: policy.excluded_authors.join("\n"),
    excluded_paths: policy.excluded_paths.join("\n"),
    review_drafts: policy.review_drafts,
    review_on_open: policy.review_on_open,
    review_on_push: policy.review_on_push,
    review_on_ready: policy.review_on_ready,
    review_on_reopen: policy.review_on_reopen,
    sandbox_provider: configuration.sandbox_provider,
    sandbox_config: JSON.stringify(configuration.sandbox_config, null, 2),
    skills: configuration.skills.map((skill) => ({
      key: newKey(),
      name: skill.name,
      description: skill.description ?? "",
      content: skill.content
    }))
  }
}

type Mutable<T> = { -readonly [K in keyof T]?: T[K] }

const sameLines = (a: string, b: string) => lines(a).join("\n") === lines(b).join("\n")

/** The MCP servers as compared: what would be sent, with a typed value standing for "changed". */
const mcpShape = (servers: ReadonlyArray<McpServerDraft>) =>
  JSON.stringify(
    servers.map((server) => [
      server.name.trim(),
      server.url.trim(),
      server.headers.map((header) => [header.name.trim(), header.value !== ""])
    ])
  )

const skillsShape = (skills: ReadonlyArray<SkillDraft>) =>
  JSON.stringify(skills.map((skill) => [skill.name.trim(), skill.description.trim(), skill.content]))

const mcpInput = (servers: ReadonlyArray<McpServerDraft>): ReadonlyArray<McpServerInput> | string => {
  const inputs: Array<McpServerInput> = []
  for (const server of servers) {
    const name = server.name.trim()
    if (name === "") return "Every MCP server needs a name."
    const headers: Record<string, string | null> = {}
    for (const header of server.headers) {
      const headerName = header.name.trim()
      if (headerName === "") return `A header of MCP server "${name}" has no name.`
      // A header whose value is stored is sent as null: the server keeps that value.
      if (header.value === "" && !header.stored) return `Header "${headerName}" of MCP server "${name}" needs a value.`
      headers[headerName] = header.value === "" ? null : header.value
    }
    inputs.push(
      Object.keys(headers).length === 0 ? { name, url: server.url.trim() } : { name, url: server.url.trim(), headers }
    )
  }
  return inputs
}

const skillsInput = (skills: ReadonlyArray<SkillDraft>): ReadonlyArray<SkillInput> | string => {
  const inputs: Array<SkillInput> = []
  for (const skill of skills) {
    const name = skill.name.trim()
    if (name === "") return "Every skill needs a name."
    if (skill.content.trim() === "") return `Skill "${name}" needs its content (the SKILL.md body).`
    const description = skill.description.trim()
    inputs.push(description === "" ? { name, content: skill.content } : { name, description, content: skill.content })
  }
  return inputs
}

const wholeNumber = (text: string, least: number) => {
  const trimmed = text.trim()
  return /^\d+$/.test(trimmed) && Number(trimmed) >= least ? Number(trimmed) : undefined
}

const REASONING = ["low", "medium", "high"] as const

/** Which group each field of a PUT body belongs to (docs of `RepositoryConfiguration`). */
export const groupOfField: Record<keyof ConfigurationUpdate, ConfigurationGroup> = {
  agent_behavior: "agent",
  agent_behavior_custom: "agent",
  agent_provider: "agent",
  agent_use_cases: "agent",
  auto_approve_pull_requests: "agent",
  auto_handle_pull_request_feedback: "agent",
  automatic_pr_description: "agent",
  custom_instructions: "instructions",
  design_style: "agent",
  design_style_custom: "agent",
  issue_pull_request_mode: "agent",
  mcp_servers: "mcp",
  model: "agent",
  model_variant: "agent",
  pull_request_template_path: "agent",
  reasoning_effort: "agent",
  review_policy: "review_policy",
  sandbox_config: "sandbox",
  sandbox_provider: "sandbox",
  secondary_repository_ids: "agent",
  skills: "skills",
  speed_mode: "agent"
}

/**
 * The PUT body with only what differs from `base`, or what is wrong with the form (checked here so
 * the admin is told before a round trip; the API checks everything again). An emptied model or
 * variant is sent as `null`: the field inherits again, since the API has no empty model.
 */
export const changesOf = (base: Draft, draft: Draft): ConfigurationUpdate | string => {
  const update: Mutable<ConfigurationUpdate> = {}
  const same = <K extends keyof Draft>(key: K) => base[key] === draft[key]

  if (!same("model")) update.model = draft.model === "" ? null : draft.model
  if (!same("model_variant")) update.model_variant = draft.model_variant === "" ? null : draft.model_variant
  if (!same("reasoning_effort")) {
    const effort = REASONING.find((level) => level === draft.reasoning_effort)
    if (effort === undefined) return "Reasoning effort must be low, medium or high."
    update.reasoning_effort = effort
  }
  if (!same("agent_provider")) update.agent_provider = draft.agent_provider
  if (!same("speed_mode")) update.speed_mode = draft.speed_mode
  if (!same("automatic_pr_description")) update.automatic_pr_description = draft.automatic_pr_description
  if (!same("issue_pull_request_mode")) update.issue_pull_request_mode = draft.issue_pull_request_mode
  if (!same("auto_approve_pull_requests")) update.auto_approve_pull_requests = draft.auto_approve_pull_requests
  if (!same("auto_handle_pull_request_feedback")) {
    update.auto_handle_pull_request_feedback = draft.auto_handle_pull_request_feedback
  }
  if (draft.pull_request_template_path.trim() !== base.pull_request_template_path) {
    update.pull_request_template_path = draft.pull_request_template_path.trim()
  }
  if (!same("agent_behavior")) update.agent_behavior = draft.agent_behavior
  if (!same("agent_behavior_custom")) update.agent_behavior_custom = draft.agent_behavior_custom
  if (!same("design_style")) update.design_style = draft.design_style
  if (!same("design_style_custom")) update.design_style_custom = draft.design_style_custom
  if (!sameLines(base.agent_use_cases, draft.agent_use_cases)) update.agent_use_cases = lines(draft.agent_use_cases)
  if (!same("custom_instructions")) update.custom_instructions = draft.custom_instructions

  if (mcpShape(base.mcp_servers) !== mcpShape(draft.mcp_servers)) {
    const servers = mcpInput(draft.mcp_servers)
    if (typeof servers === "string") return servers
    update.mcp_servers = servers
  }

  const policy: Mutable<ReviewPolicyUpdate> = {}
  if (!same("guidance")) policy.guidance = draft.guidance
  if (!same("strictness")) policy.strictness = draft.strictness
  if (draft.comment_limit.trim() !== base.comment_limit) {
    const limit = wholeNumber(draft.comment_limit, 0)
    if (limit === undefined) return "Comment limit must be a whole number, 0 or more."
    policy.comment_limit = limit
  }
  if (draft.max_changed_files.trim() !== base.max_changed_files) {
    const most = wholeNumber(draft.max_changed_files, 1)
    if (most === undefined) return "Max changed files must be a whole number, 1 or more."
    policy.max_changed_files = most
  }
  if (!sameLines(base.excluded_authors, draft.excluded_authors)) policy.excluded_authors = lines(draft.excluded_authors)
  if (!sameLines(base.excluded_paths, draft.excluded_paths)) policy.excluded_paths = lines(draft.excluded_paths)
  for (const key of [
    "review_drafts",
    "review_on_open",
    "review_on_push",
    "review_on_ready",
    "review_on_reopen"
  ] as const) {
    if (!same(key)) policy[key] = draft[key]
  }
  if (Object.keys(policy).length > 0) update.review_policy = policy

  if (!same("sandbox_provider")) update.sandbox_provider = draft.sandbox_provider
  if (draft.sandbox_config !== base.sandbox_config) {
    let parsed: unknown
    try {
      parsed = JSON.parse(draft.sandbox_config.trim() === "" ? "{}" : draft.sandbox_config)
    } catch (error) {
      return `Sandbox config is not valid JSON: ${error instanceof Error ? error.message : String(error)}`
    }
    if (!isRecord(parsed)) return 'Sandbox config must be a JSON object, like {"image": "node:24"}.'
    // Reformatting the same object is no change.
    if (JSON.stringify(parsed) !== JSON.stringify(JSON.parse(base.sandbox_config))) update.sandbox_config = parsed
  }

  if (skillsShape(base.skills) !== skillsShape(draft.skills)) {
    const skills = skillsInput(draft.skills)
    if (typeof skills === "string") return skills
    update.skills = skills
  }
  return update
}

/** The form's fields of each group. */
export const GROUP_FIELDS: Record<ConfigurationGroup, ReadonlyArray<keyof Draft>> = {
  agent: [
    "model",
    "model_variant",
    "reasoning_effort",
    "agent_provider",
    "speed_mode",
    "automatic_pr_description",
    "issue_pull_request_mode",
    "auto_approve_pull_requests",
    "auto_handle_pull_request_feedback",
    "pull_request_template_path",
    "agent_behavior",
    "agent_behavior_custom",
    "design_style",
    "design_style_custom",
    "agent_use_cases"
  ],
  instructions: ["custom_instructions"],
  mcp: ["mcp_servers"],
  review_policy: [
    "guidance",
    "strictness",
    "comment_limit",
    "max_changed_files",
    "excluded_authors",
    "excluded_paths",
    "review_drafts",
    "review_on_open",
    "review_on_push",
    "review_on_ready",
    "review_on_reopen"
  ],
  sandbox: ["sandbox_provider", "sandbox_config"],
  skills: ["skills"]
}

const sameGroup = (a: Draft, b: Draft, group: ConfigurationGroup) =>
  GROUP_FIELDS[group].every((field) => JSON.stringify(a[field]) === JSON.stringify(b[field]))

/**
 * The form once a configuration is loaded again: each group the admin has not edited since
 * `base` (and each group in `adopt`, just saved or reset) takes the fresh values; an edited group
 * keeps its edits, so a reload caused elsewhere on the page does not throw them away.
 */
export const rebase = (
  draft: Draft,
  base: Draft,
  fresh: Draft,
  adopt: ReadonlySet<ConfigurationGroup> | "all"
): Draft => {
  const next: { -readonly [K in keyof Draft]: Draft[K] } = { ...draft }
  const take = <K extends keyof Draft>(field: K) => {
    next[field] = fresh[field]
  }
  for (const group of CONFIGURATION_GROUPS) {
    if (adopt !== "all" && !adopt.has(group) && !sameGroup(draft, base, group)) continue
    GROUP_FIELDS[group].forEach(take)
  }
  return next
}

/** The groups a body writes. */
export const groupsOf = (update: ConfigurationUpdate): ReadonlySet<ConfigurationGroup> =>
  new Set(Object.keys(update).map((field) => groupOfField[field as keyof ConfigurationUpdate]))

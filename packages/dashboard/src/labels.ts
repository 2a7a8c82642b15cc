/**
 * The human words for the API's enumerations, in one place so every screen names a value the
 * same way. The API's own values stay what is sent and stored; these are only what is shown.
 * Types only from the domain: the sign-in page, in the first bundle, uses the setup steps.
 */
import type {
  AgentBehavior,
  AgentProvider,
  AutomaticPrDescription,
  ConfigurationGroup,
  ConfigurationSource,
  DesignStyle,
  IssuePullRequestMode,
  ReasoningEffortSetting,
  SandboxProvider,
  SetupStepId,
  SpeedMode,
  Strictness
} from "@bosun/domain"

export const agentProviderLabel: Record<typeof AgentProvider.Type, string> = {
  OPENCODE: "OpenCode",
  AGENT_ONE: "Codex CLI"
}

export const sandboxProviderLabel: Record<typeof SandboxProvider.Type, string> = {
  PLATFORM_CONTAINER: "Platform container (Kubernetes)",
  HOSTED_SANDBOX: "Hosted sandbox",
  EXTERNAL_RUNTIME: "Bosun runtime (this machine or BOSUN_RUNTIME_URL)"
}

export const automaticPrDescriptionLabel: Record<typeof AutomaticPrDescription.Type, string> = {
  DISABLED: "Disabled",
  ENABLED: "Enabled: the agent writes the description"
}

export const issuePullRequestModeLabel: Record<typeof IssuePullRequestMode.Type, string> = {
  DISABLED: "Disabled: no pull request from an issue",
  DRAFT: "Draft pull request",
  READY: "Pull request ready for review"
}

export const strictnessLabel: Record<typeof Strictness.Type, string> = {
  LOW: "Low: only clear problems",
  MEDIUM: "Medium",
  HIGH: "High: flag anything doubtful"
}

export const agentBehaviorLabel: Record<typeof AgentBehavior.Type, string> = {
  DEFAULT: "Bosun's default behaviour",
  CUSTOM: "Custom behaviour (the text below)"
}

export const designStyleLabel: Record<typeof DesignStyle.Type, string> = {
  DEFAULT: "Bosun's default design style",
  CUSTOM: "Custom design style (the text below)"
}

export const speedModeLabel: Record<typeof SpeedMode.Type, string> = {
  STANDARD: "Standard",
  FAST: "Fast: fewer, quicker agent steps"
}

export const reasoningEffortLabel: Record<typeof ReasoningEffortSetting.Type, string> = {
  low: "Low",
  medium: "Medium",
  high: "High"
}

export const groupLabel: Record<ConfigurationGroup, string> = {
  agent: "Agent",
  instructions: "Instructions",
  mcp: "MCP servers",
  review_policy: "Review policy",
  sandbox: "Sandbox",
  skills: "Skills"
}

/** Where a group's values come from, as read at the organization or at a repository. */
export const sourceLabel = (source: ConfigurationSource, level: "organization" | "repository"): string => {
  switch (source) {
    case "DEFAULT":
      return "inherited: Bosun's default"
    case "ORGANIZATION":
      return level === "organization" ? "set here" : "inherited from the organization"
    case "REPOSITORY":
      return "set here"
    case "FILE":
      return "from .bosun.yaml"
  }
}

export const setupStepLabel: Record<SetupStepId, string> = {
  github_app: "Connect a GitHub App",
  app_installed: "Install the App on your repositories",
  agent_credentials: "Give the agent credentials",
  model_chosen: "Choose a model",
  test_turn: "Run a test turn"
}

/** A label for any value of `labels`, or the value itself for one the dashboard does not know yet. */
export const labelOf = <T extends string>(labels: Record<T, string>, value: string): string =>
  Object.hasOwn(labels, value) ? labels[value as T] : value

/**
 * The configuration form shared by the organization settings screen and a repository's screen:
 * every group of `RepositoryConfiguration`, each saying where its values come from and offering
 * to drop this level's values of it ("Reset to default" at the organization, "Reset to
 * organization" at a repository). A save sends only the fields that changed (`draft.ts`). A
 * caller who may not write sees the same values with every input disabled and no buttons.
 */
import {
  AGENT_ONE_ON_PLATFORM_CONTAINER,
  AgentBehavior,
  type AgentCatalog,
  AgentProvider,
  AutomaticPrDescription,
  CONFIGURATION_GROUPS,
  type ConfigurationGroup,
  type ConfigurationUpdate,
  DesignStyle,
  IssuePullRequestMode,
  type RepositoryConfiguration,
  SandboxProvider,
  SpeedMode,
  Strictness
} from "@bosun/domain"
import { type Dispatch, type ReactNode, type SetStateAction, useId, useState } from "react"
import { call } from "../api/client.ts"
import { useAction } from "../api/useLoad.ts"
import {
  agentBehaviorLabel,
  agentProviderLabel,
  automaticPrDescriptionLabel,
  designStyleLabel,
  groupLabel,
  issuePullRequestModeLabel,
  labelOf,
  sandboxProviderLabel,
  sourceLabel,
  speedModeLabel,
  strictnessLabel
} from "../labels.ts"
import { ActionButton, ErrorNote } from "../ui.tsx"
import {
  changesOf,
  type Draft,
  draftOf,
  groupsOf,
  type McpHeaderDraft,
  type McpServerDraft,
  newKey,
  rebase,
  type SkillDraft
} from "./draft.ts"
import { type ModelFields, ModelPicker } from "./ModelPicker.tsx"

type Level = "organization" | "repository"

export type EditorProps = {
  readonly org: string
  /** null edits the organization's own configuration. */
  readonly repositoryId: string | null
  readonly configuration: RepositoryConfiguration
  /** The catalog of the credentials in force at this level; null while it loads or when it failed. */
  readonly catalog: AgentCatalog | null
  readonly catalogProblem: string | null
  /** The sandbox providers this instance is set up for; null while they load. */
  readonly sandboxProviders: ReadonlyArray<typeof SandboxProvider.Type> | null
  readonly canWrite: boolean
  /** After a save or a reset, to load the configuration again. */
  readonly changed: () => void
}

/* ---------------------------------------------------------------- fields */

/** A select over a schema's literals, each shown by its label. */
const Choice = <T extends string>(props: {
  readonly label: string
  readonly value: T
  readonly options: ReadonlyArray<T>
  readonly labels: Record<T, string>
  readonly onChange: (value: T) => void
}) => (
  <label className="field">
    <span>{props.label}</span>
    <select
      value={props.value}
      onChange={(event) => {
        const chosen = props.options.find((option) => option === event.target.value)
        if (chosen !== undefined) props.onChange(chosen)
      }}
    >
      {props.options.map((option) => (
        <option key={option} value={option}>
          {labelOf(props.labels, option)}
        </option>
      ))}
    </select>
  </label>
)

const Check = (props: {
  readonly label: string
  readonly checked: boolean
  readonly onChange: (on: boolean) => void
}) => (
  <label className="row">
    <input type="checkbox" checked={props.checked} onChange={(event) => props.onChange(event.target.checked)} />{" "}
    {props.label}
  </label>
)

type TextProps = {
  readonly label: string
  readonly value: string
  readonly onChange: (value: string) => void
  readonly placeholder?: string
}

const Line = (props: TextProps) => (
  <label className="field">
    <span>{props.label}</span>
    <input
      type="text"
      spellCheck={false}
      placeholder={props.placeholder}
      value={props.value}
      onChange={(event) => props.onChange(event.target.value)}
    />
  </label>
)

const Paragraphs = (props: TextProps & { readonly rows: number }) => (
  <label className="field">
    <span>{props.label}</span>
    <textarea
      rows={props.rows}
      placeholder={props.placeholder}
      value={props.value}
      onChange={(event) => props.onChange(event.target.value)}
    />
  </label>
)

/* ---------------------------------------------------------------- groups */

const resetLabel = (level: Level) => (level === "organization" ? "Reset to default" : "Reset to organization")

/**
 * One group: its fields in a fieldset named by the group, where its values come from, and the
 * reset of this level's values when this level sets any.
 */
const Group = (props: {
  readonly group: ConfigurationGroup
  readonly level: Level
  readonly configuration: RepositoryConfiguration
  readonly canWrite: boolean
  readonly pending: boolean
  readonly resetting: boolean
  readonly onReset: () => void
  readonly children: ReactNode
}) => {
  const source = props.configuration.sources[props.group]
  const own = props.configuration.overrides[props.group]
  return (
    <fieldset disabled={!props.canWrite} data-testid={`group-${props.group}`}>
      <legend>{groupLabel[props.group]}</legend>
      <div className="group-source">
        <span className={`source ${source.toLowerCase()}`} data-testid={`source-${props.group}`}>
          {sourceLabel(source, props.level)}
        </span>
        {source === "FILE" ? <span className="muted">Its values win over the ones set here.</span> : null}
        {props.pending ? <span className="badge warn">changed, not yet sent</span> : null}
        {props.canWrite && own ? (
          <ActionButton pending={props.resetting} kind="plain" onClick={props.onReset}>
            {resetLabel(props.level)}
          </ActionButton>
        ) : null}
      </div>
      {props.children}
    </fieldset>
  )
}

/** One header of an MCP server: its name (fixed once stored) and, for writers, a new value. */
const McpHeaderRow = (props: {
  readonly header: McpHeaderDraft
  /** How the server is named in labels: its name, or its place in the list while it has none. */
  readonly serverName: string
  readonly canWrite: boolean
  readonly onChange: (change: (header: McpHeaderDraft) => McpHeaderDraft) => void
  readonly onRemove: () => void
}) => {
  const { header, canWrite } = props
  return (
    <li className="row">
      {header.stored ? (
        <code className="code">{header.name}</code>
      ) : (
        <input
          type="text"
          aria-label={`Header name of ${props.serverName}`}
          placeholder="Authorization"
          spellCheck={false}
          value={header.name}
          onChange={(event) => props.onChange((h) => ({ ...h, name: event.target.value }))}
        />
      )}
      {canWrite ? (
        <>
          <input
            type="password"
            autoComplete="new-password"
            aria-label={`Value of header ${header.name || "(new)"} of ${props.serverName}`}
            placeholder={header.stored ? "stored (type to replace)" : "value"}
            value={header.value}
            onChange={(event) => props.onChange((h) => ({ ...h, value: event.target.value }))}
          />
          <button type="button" className="plain" onClick={props.onRemove}>
            Remove header
          </button>
        </>
      ) : (
        <span className="muted">value stored, never shown</span>
      )}
    </li>
  )
}

const McpServers = (props: {
  readonly servers: ReadonlyArray<McpServerDraft>
  readonly canWrite: boolean
  readonly onChange: (servers: ReadonlyArray<McpServerDraft>) => void
}) => {
  const { servers, canWrite } = props
  const update = (key: string, change: (server: McpServerDraft) => McpServerDraft) =>
    props.onChange(servers.map((server) => (server.key === key ? change(server) : server)))
  const updateHeader = (server: McpServerDraft, key: string, change: (header: McpHeaderDraft) => McpHeaderDraft) =>
    update(server.key, (current) => ({
      ...current,
      headers: current.headers.map((header) => (header.key === key ? change(header) : header))
    }))
  return (
    <>
      {servers.length === 0 ? <p className="muted">No MCP servers.</p> : null}
      {servers.map((server, index) => (
        <div className="card" key={server.key} data-testid="mcp-server">
          <Line
            label={`MCP server ${index + 1} name`}
            value={server.name}
            placeholder="docs"
            onChange={(name) => update(server.key, (current) => ({ ...current, name }))}
          />
          <Line
            label={`MCP server ${index + 1} URL`}
            value={server.url}
            placeholder="https://mcp.example.com/v1"
            onChange={(url) => update(server.key, (current) => ({ ...current, url }))}
          />
          {server.headers.length === 0 ? null : (
            <ul className="headers">
              {server.headers.map((header) => (
                <McpHeaderRow
                  key={header.key}
                  header={header}
                  serverName={server.name || `server ${index + 1}`}
                  canWrite={canWrite}
                  onChange={(change) => updateHeader(server, header.key, change)}
                  onRemove={() =>
                    update(server.key, (current) => ({
                      ...current,
                      headers: current.headers.filter((h) => h.key !== header.key)
                    }))
                  }
                />
              ))}
            </ul>
          )}
          {canWrite ? (
            <div className="actions">
              <button
                type="button"
                className="plain"
                onClick={() =>
                  update(server.key, (current) => ({
                    ...current,
                    headers: [...current.headers, { key: newKey(), name: "", stored: false, value: "" }]
                  }))
                }
              >
                Add header
              </button>
              <button
                type="button"
                className="danger"
                onClick={() => props.onChange(servers.filter((other) => other.key !== server.key))}
              >
                Remove server
              </button>
            </div>
          ) : null}
        </div>
      ))}
      {canWrite ? (
        <div className="actions">
          <button
            type="button"
            className="plain"
            onClick={() => props.onChange([...servers, { key: newKey(), name: "", url: "", headers: [] }])}
          >
            Add MCP server
          </button>
          <span className="muted">
            Header values are secrets: they are sent, never shown again; an empty value keeps the stored one.
          </span>
        </div>
      ) : null}
    </>
  )
}

const Skills = (props: {
  readonly skills: ReadonlyArray<SkillDraft>
  readonly canWrite: boolean
  readonly onChange: (skills: ReadonlyArray<SkillDraft>) => void
}) => {
  const { skills } = props
  const update = (key: string, change: Partial<SkillDraft>) =>
    props.onChange(skills.map((skill) => (skill.key === key ? { ...skill, ...change } : skill)))
  return (
    <>
      {skills.length === 0 ? <p className="muted">No skills.</p> : null}
      {skills.map((skill, index) => (
        <div className="card" key={skill.key} data-testid="skill">
          <Line
            label={`Skill ${index + 1} name`}
            value={skill.name}
            placeholder="house-style"
            onChange={(name) => update(skill.key, { name })}
          />
          <Line
            label={`Skill ${index + 1} description`}
            value={skill.description}
            onChange={(description) => update(skill.key, { description })}
          />
          <Paragraphs
            label={`Skill ${index + 1} content (SKILL.md)`}
            rows={5}
            value={skill.content}
            onChange={(content) => update(skill.key, { content })}
          />
          {props.canWrite ? (
            <div className="actions">
              <button
                type="button"
                className="danger"
                onClick={() => props.onChange(skills.filter((other) => other.key !== skill.key))}
              >
                Remove skill
              </button>
            </div>
          ) : null}
        </div>
      ))}
      {props.canWrite ? (
        <div className="actions">
          <button
            type="button"
            className="plain"
            onClick={() => props.onChange([...skills, { key: newKey(), name: "", description: "", content: "" }])}
          >
            Add skill
          </button>
        </div>
      ) : null}
    </>
  )
}

/* ------------------------------------------------------------------ form */

type SetField = <K extends keyof Draft>(key: K, value: Draft[K]) => void

const AgentFields = (props: {
  readonly org: string
  readonly level: Level
  readonly catalog: AgentCatalog | null
  readonly catalogProblem: string | null
  readonly draft: Draft
  readonly set: SetField
  readonly onModelChange: (fields: ModelFields) => void
}) => {
  const { draft, set } = props
  return (
    <>
      <ModelPicker
        org={props.org}
        level={props.level}
        catalog={props.catalog}
        catalogProblem={props.catalogProblem}
        fields={draft}
        onChange={props.onModelChange}
      />
      <Choice
        label="Agent provider"
        value={draft.agent_provider}
        options={AgentProvider.literals}
        labels={agentProviderLabel}
        onChange={(value) => set("agent_provider", value)}
      />
      <Choice
        label="Agent behaviour"
        value={draft.agent_behavior}
        options={AgentBehavior.literals}
        labels={agentBehaviorLabel}
        onChange={(value) => set("agent_behavior", value)}
      />
      {draft.agent_behavior === "CUSTOM" || draft.agent_behavior_custom !== "" ? (
        <Paragraphs
          label="Custom behaviour"
          rows={4}
          value={draft.agent_behavior_custom}
          onChange={(value) => set("agent_behavior_custom", value)}
        />
      ) : null}
      <Choice
        label="Design style"
        value={draft.design_style}
        options={DesignStyle.literals}
        labels={designStyleLabel}
        onChange={(value) => set("design_style", value)}
      />
      {draft.design_style === "CUSTOM" || draft.design_style_custom !== "" ? (
        <Paragraphs
          label="Custom design style"
          rows={4}
          value={draft.design_style_custom}
          onChange={(value) => set("design_style_custom", value)}
        />
      ) : null}
      <Choice
        label="Speed mode"
        value={draft.speed_mode}
        options={SpeedMode.literals}
        labels={speedModeLabel}
        onChange={(value) => set("speed_mode", value)}
      />
      <Choice
        label="Automatic PR description"
        value={draft.automatic_pr_description}
        options={AutomaticPrDescription.literals}
        labels={automaticPrDescriptionLabel}
        onChange={(value) => set("automatic_pr_description", value)}
      />
      <Choice
        label="Issue pull request mode"
        value={draft.issue_pull_request_mode}
        options={IssuePullRequestMode.literals}
        labels={issuePullRequestModeLabel}
        onChange={(value) => set("issue_pull_request_mode", value)}
      />
      <Check
        label="Approve the agent's pull requests automatically"
        checked={draft.auto_approve_pull_requests}
        onChange={(on) => set("auto_approve_pull_requests", on)}
      />
      <Check
        label="Handle review feedback on the agent's pull requests automatically"
        checked={draft.auto_handle_pull_request_feedback}
        onChange={(on) => set("auto_handle_pull_request_feedback", on)}
      />
      <Line
        label="Pull request template path"
        value={draft.pull_request_template_path}
        placeholder=".github/pull_request_template.md"
        onChange={(value) => set("pull_request_template_path", value)}
      />
      <Paragraphs
        label="Agent use cases (one per line)"
        rows={3}
        value={draft.agent_use_cases}
        onChange={(value) => set("agent_use_cases", value)}
      />
    </>
  )
}

const ReviewPolicyFields = (props: { readonly draft: Draft; readonly set: SetField }) => {
  const { draft, set } = props
  return (
    <>
      <Choice
        label="Strictness"
        value={draft.strictness}
        options={Strictness.literals}
        labels={strictnessLabel}
        onChange={(value) => set("strictness", value)}
      />
      <label className="field">
        <span>Comment limit</span>
        <input
          type="number"
          inputMode="numeric"
          min={0}
          step={1}
          value={draft.comment_limit}
          onChange={(event) => set("comment_limit", event.target.value)}
        />
      </label>
      <label className="field">
        <span>Max changed files</span>
        <input
          type="number"
          inputMode="numeric"
          min={1}
          step={1}
          value={draft.max_changed_files}
          onChange={(event) => set("max_changed_files", event.target.value)}
        />
      </label>
      <Paragraphs
        label="Excluded authors (one login per line)"
        rows={3}
        value={draft.excluded_authors}
        onChange={(value) => set("excluded_authors", value)}
      />
      <Paragraphs
        label="Excluded paths (one glob per line)"
        rows={3}
        value={draft.excluded_paths}
        onChange={(value) => set("excluded_paths", value)}
      />
      <Check label="Review drafts" checked={draft.review_drafts} onChange={(on) => set("review_drafts", on)} />
      <Check label="Review on open" checked={draft.review_on_open} onChange={(on) => set("review_on_open", on)} />
      <Check label="Review on push" checked={draft.review_on_push} onChange={(on) => set("review_on_push", on)} />
      <Check label="Review on ready" checked={draft.review_on_ready} onChange={(on) => set("review_on_ready", on)} />
      <Check label="Review on reopen" checked={draft.review_on_reopen} onChange={(on) => set("review_on_reopen", on)} />
      <Paragraphs
        label="Review guidance"
        rows={4}
        value={draft.guidance}
        placeholder="What reviews should focus on."
        onChange={(value) => set("guidance", value)}
      />
    </>
  )
}

const SandboxFields = (props: {
  readonly draft: Draft
  readonly set: SetField
  readonly sandboxProviders: ReadonlyArray<typeof SandboxProvider.Type> | null
}) => {
  const { draft, set } = props
  // Until the instance says what it is set up for, only the value in force is offered.
  const providers = props.sandboxProviders ?? [draft.sandbox_provider]
  const sandboxOptions = providers.includes(draft.sandbox_provider) ? providers : [...providers, draft.sandbox_provider]
  const sandboxLabels: Record<typeof SandboxProvider.Type, string> = { ...sandboxProviderLabel }
  for (const provider of SandboxProvider.literals) {
    if (!providers.includes(provider)) sandboxLabels[provider] += " (not set up on this instance)"
  }
  return (
    <>
      <Choice
        label="Sandbox provider"
        value={draft.sandbox_provider}
        options={sandboxOptions}
        labels={sandboxLabels}
        onChange={(value) => set("sandbox_provider", value)}
      />
      <label className="field">
        <span>Sandbox config (JSON object)</span>
        <textarea
          rows={5}
          spellCheck={false}
          value={draft.sandbox_config}
          onChange={(event) => set("sandbox_config", event.target.value)}
        />
      </label>
      {draft.agent_provider === "AGENT_ONE" && draft.sandbox_provider === "PLATFORM_CONTAINER" ? (
        <p className="banner bad" role="note">
          {AGENT_ONE_ON_PLATFORM_CONTAINER}. Saving this makes the readiness of the repositories using it BLOCKING.
        </p>
      ) : null}
    </>
  )
}

/** Groups whose fresh values replace the form at the next load: all after a save, one after a reset. */
type Adopt = ReadonlySet<ConfigurationGroup> | "all"

/**
 * The form's draft and the configuration it was made from: `base` stays what was loaded until the
 * next load, for the diff, and a new load is folded into the draft as `adopt` says.
 */
const useConfigurationDraft = (configuration: RepositoryConfiguration) => {
  const [initial] = useState(() => draftOf(configuration))
  const [draft, setDraft] = useState(initial)
  const [base, setBase] = useState(initial)
  const [loaded, setLoaded] = useState(configuration)
  const [adopt, setAdopt] = useState<Adopt>(() => new Set())

  if (configuration !== loaded) {
    const fresh = draftOf(configuration)
    setLoaded(configuration)
    setBase(fresh)
    setDraft(rebase(draft, base, fresh, adopt))
    setAdopt(new Set())
  }

  return { draft, setDraft, base, setAdopt }
}

/** The save and the group resets, sent to the organization's configuration or the repository's. */
const useConfigurationRequests = (
  props: EditorProps,
  level: Level,
  setAdopt: Dispatch<SetStateAction<Adopt>>,
  setNotice: (notice: string | null) => void
) => {
  const [resetting, setResetting] = useState<ConfigurationGroup | null>(null)
  const save = useAction()
  const reset = useAction()
  const repositoryId = props.repositoryId

  const send = (changes: ConfigurationUpdate) => {
    void save
      .perform(() =>
        call((client) =>
          repositoryId === null
            ? client.configuration.putOrganization({ params: { organization_id: props.org }, payload: changes })
            : client.configuration.put({
                params: { organization_id: props.org, repository_id: repositoryId },
                payload: changes
              })
        )
      )
      .then((ok) => {
        if (!ok) return
        // The answer is 204: what the server now holds is read again and replaces the form.
        setAdopt("all")
        setNotice("Saved")
        props.changed()
      })
  }

  const resetGroup = (group: ConfigurationGroup) => {
    setNotice(null)
    setResetting(group)
    void reset
      .perform(() =>
        call((client) =>
          repositoryId === null
            ? client.configuration.resetOrganization({ params: { organization_id: props.org, group } })
            : client.configuration.reset({ params: { organization_id: props.org, repository_id: repositoryId, group } })
        )
      )
      .then((ok) => {
        setResetting(null)
        if (!ok) return
        setAdopt((previous) => (previous === "all" ? previous : new Set([...previous, group])))
        setNotice(
          `${groupLabel[group]} ${level === "organization" ? "is back to Bosun's default" : "follows the organization again"}.`
        )
        props.changed()
      })
  }

  return { save, reset, resetting, send, resetGroup }
}

const SaveBar = (props: {
  readonly saving: boolean
  readonly notice: string | null
  readonly pendingGroups: ReadonlySet<ConfigurationGroup>
}) => (
  <div className="actions save-bar">
    <button type="submit" className="primary" disabled={props.saving} aria-busy={props.saving}>
      Save configuration
    </button>
    {props.saving ? (
      <span className="progress" aria-busy="true">
        Saving…
      </span>
    ) : null}
    {props.notice === null ? null : (
      <span className={props.notice === "Saved" ? "badge good" : "muted"} role="status">
        {props.notice}
      </span>
    )}
    {props.pendingGroups.size === 0 ? null : (
      <span className="muted">To send: {[...props.pendingGroups].map((name) => groupLabel[name]).join(", ")}</span>
    )}
  </div>
)

export const ConfigurationEditor = (props: EditorProps) => {
  const { configuration, canWrite } = props
  const level: Level = props.repositoryId === null ? "organization" : "repository"
  const { draft, setDraft, base, setAdopt } = useConfigurationDraft(configuration)
  const [notice, setNotice] = useState<string | null>(null)
  const [invalid, setInvalid] = useState<string | null>(null)
  const { save, reset, resetting, send, resetGroup } = useConfigurationRequests(props, level, setAdopt, setNotice)
  const ids = useId()

  const changes = changesOf(base, draft)
  const pendingGroups = typeof changes === "string" ? new Set<ConfigurationGroup>() : groupsOf(changes)

  const set: SetField = (key, value) => {
    setDraft((previous) => ({ ...previous, [key]: value }))
    setNotice(null)
  }

  const submit = () => {
    setNotice(null)
    if (typeof changes === "string") {
      setInvalid(changes)
      return
    }
    setInvalid(null)
    if (Object.keys(changes).length === 0) {
      setNotice("Nothing changed.")
      return
    }
    send(changes)
  }

  const group = (name: ConfigurationGroup, children: ReactNode) => (
    <Group
      key={name}
      group={name}
      level={level}
      configuration={configuration}
      canWrite={canWrite}
      pending={pendingGroups.has(name)}
      resetting={reset.pending && resetting === name}
      onReset={() => resetGroup(name)}
    >
      {children}
    </Group>
  )

  const sections: Record<ConfigurationGroup, ReactNode> = {
    agent: (
      <AgentFields
        org={props.org}
        level={level}
        catalog={props.catalog}
        catalogProblem={props.catalogProblem}
        draft={draft}
        set={set}
        onModelChange={(fields) => {
          setDraft((previous) => ({ ...previous, ...fields }))
          setNotice(null)
        }}
      />
    ),
    instructions: (
      <Paragraphs
        label="Custom instructions"
        rows={6}
        value={draft.custom_instructions}
        placeholder="What the agent should always keep in mind here."
        onChange={(value) => set("custom_instructions", value)}
      />
    ),
    mcp: (
      <McpServers servers={draft.mcp_servers} canWrite={canWrite} onChange={(servers) => set("mcp_servers", servers)} />
    ),
    review_policy: <ReviewPolicyFields draft={draft} set={set} />,
    sandbox: <SandboxFields draft={draft} set={set} sandboxProviders={props.sandboxProviders} />,
    skills: <Skills skills={draft.skills} canWrite={canWrite} onChange={(skills) => set("skills", skills)} />
  }

  return (
    <form
      className="form configuration"
      aria-labelledby={`${ids}-title`}
      onSubmit={(event) => {
        event.preventDefault()
        if (canWrite) submit()
      }}
    >
      <h2 id={`${ids}-title`}>Configuration</h2>
      <p className="muted">
        {level === "organization"
          ? "What every repository of this organization uses unless it sets its own. A group left alone keeps Bosun's default; saving sends only the fields you changed."
          : "What this repository uses. A group left alone follows the organization; saving sends only the fields you changed, which this repository then sets itself."}
      </p>
      {canWrite ? null : (
        <p className="banner" role="note">
          Only admins change the configuration; you see it read-only.
        </p>
      )}
      {CONFIGURATION_GROUPS.map((name) => group(name, sections[name]))}
      {canWrite ? <SaveBar saving={save.pending} notice={notice} pendingGroups={pendingGroups} /> : null}
      <ErrorNote message={invalid ?? save.error ?? reset.error} />
    </form>
  )
}

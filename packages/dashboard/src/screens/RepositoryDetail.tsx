/**
 * One repository (spec: Organization endpoints `GET`/`PATCH .../repositories/{id}`,
 * `GET`/`PUT .../configuration`, `.../context-suggestions`, `.../deep-scan-schedule`; Resources
 * "Repository configuration", "review_policy", "Context suggestion"; issue 11): everything an
 * admin changes about one repository in one place. The configuration form edits exactly the six
 * fields `PUT .../configuration` takes and says, per configuration group, whether the value is
 * inherited (from Bosun's defaults or the organization) or overridden by this repository, because
 * a save turns the groups it writes into this repository's overrides. The other effective fields
 * are shown read-only. Context suggestions are decided here, and the recurring deep scan is set.
 */
import {
  AGENT_ONE_ON_PLATFORM_CONTAINER,
  AgentProvider,
  AutomaticPrDescription,
  CONFIGURATION_GROUPS,
  type ContextSuggestion,
  IssuePullRequestMode,
  type Repository,
  type RepositoryConfiguration,
  type ConfigurationUpdate,
  SandboxProvider,
  Strictness
} from "@bosun/domain"
import { type ReactNode, useId, useState } from "react"
import { call, isNotFound } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { orgPath } from "../routes.ts"
import { ActionButton, Badge, Empty, ErrorNote, Link, Loading, when } from "../ui.tsx"

type Props = { readonly org: string; readonly id: string }

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const lines = (text: string) =>
  text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")

/** A select over a schema's literals, typed by them, with its visible label. */
const Choice = <T extends string>(props: {
  readonly label: string
  readonly value: T
  readonly options: ReadonlyArray<T>
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
          {option}
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

const Fact = (props: { readonly label: string; readonly children: ReactNode }) => (
  <>
    <dt>{props.label}</dt>
    <dd>{props.children}</dd>
  </>
)

/* ---------------------------------------------------------------- header */

const Header = (props: Props & { readonly repository: Repository; readonly changed: () => void }) => {
  const { repository } = props
  const toggle = useAction()
  return (
    <>
      <h1 id="repository-title">
        {repository.owner}/{repository.name}
      </h1>
      {repository.readiness_status === "BLOCKING" ? (
        <div className="banner bad" role="status">
          This repository has BLOCKING readiness findings: its runs fail until the configuration below is fixed.
        </div>
      ) : null}
      {repository.available ? null : (
        <div className="banner bad" role="status">
          The GitHub App has lost access to this repository; give it access again in GitHub to review it.
        </div>
      )}
      <dl className="facts">
        <Fact label="Default branch">{repository.default_branch}</Fact>
        <Fact label="Readiness">
          <Badge value={repository.readiness_status} />
        </Fact>
        <Fact label="Available">{repository.available ? "Yes" : "No"}</Fact>
        <Fact label="Reviews">
          <Badge value={repository.enabled ? "ACTIVE" : "PAUSED"} />
        </Fact>
      </dl>
      <div className="actions">
        <ActionButton
          pending={toggle.pending}
          kind={repository.enabled ? "plain" : "primary"}
          onClick={() =>
            void toggle
              .perform(() =>
                call((client) =>
                  client.repositories.update({
                    params: { organization_id: props.org, repository_id: props.id },
                    payload: { enabled: !repository.enabled }
                  })
                )
              )
              .then((ok) => {
                if (ok) props.changed()
              })
          }
        >
          {repository.enabled ? "Pause reviews" : "Enable reviews"}
        </ActionButton>
        <Link href={`${orgPath(props.org, "runs")}?repository_id=${encodeURIComponent(props.id)}`}>Runs</Link>
      </div>
      <ErrorNote message={toggle.error} />
    </>
  )
}

/* --------------------------------------------------------- configuration */

type Draft = {
  readonly agent_provider: typeof AgentProvider.Type
  readonly automatic_pr_description: typeof AutomaticPrDescription.Type
  readonly issue_pull_request_mode: typeof IssuePullRequestMode.Type
  readonly sandbox_provider: typeof SandboxProvider.Type
  readonly sandbox_config: string
  readonly comment_limit: string
  readonly excluded_authors: string
  readonly excluded_paths: string
  readonly max_changed_files: string
  readonly review_drafts: boolean
  readonly review_on_open: boolean
  readonly review_on_push: boolean
  readonly review_on_ready: boolean
  readonly review_on_reopen: boolean
  readonly strictness: typeof Strictness.Type
}

const draftOf = (configuration: RepositoryConfiguration): Draft => ({
  agent_provider: configuration.agent_provider,
  automatic_pr_description: configuration.automatic_pr_description,
  issue_pull_request_mode: configuration.issue_pull_request_mode,
  sandbox_provider: configuration.sandbox_provider,
  sandbox_config: JSON.stringify(configuration.sandbox_config, null, 2),
  comment_limit: String(configuration.review_policy.comment_limit),
  excluded_authors: configuration.review_policy.excluded_authors.join("\n"),
  excluded_paths: configuration.review_policy.excluded_paths.join("\n"),
  max_changed_files: String(configuration.review_policy.max_changed_files),
  review_drafts: configuration.review_policy.review_drafts,
  review_on_open: configuration.review_policy.review_on_open,
  review_on_push: configuration.review_policy.review_on_push,
  review_on_ready: configuration.review_policy.review_on_ready,
  review_on_reopen: configuration.review_policy.review_on_reopen,
  strictness: configuration.review_policy.strictness
})

/** The PUT body, or what is wrong with the form (checked here so the admin is told before a round trip). */
const updateOf = (draft: Draft): ConfigurationUpdate | string => {
  let sandboxConfig: unknown
  try {
    sandboxConfig = JSON.parse(draft.sandbox_config.trim() === "" ? "{}" : draft.sandbox_config)
  } catch (error) {
    return `Sandbox config is not valid JSON: ${error instanceof Error ? error.message : String(error)}`
  }
  if (!isRecord(sandboxConfig)) return 'Sandbox config must be a JSON object, like {"image": "node:24"}.'
  if (!/^\d+$/.test(draft.comment_limit.trim())) return "Comment limit must be a whole number, 0 or more."
  if (!/^\d+$/.test(draft.max_changed_files.trim()) || Number(draft.max_changed_files) < 1) {
    return "Max changed files must be a whole number, 1 or more."
  }
  return {
    agent_provider: draft.agent_provider,
    automatic_pr_description: draft.automatic_pr_description,
    issue_pull_request_mode: draft.issue_pull_request_mode,
    sandbox_provider: draft.sandbox_provider,
    sandbox_config: sandboxConfig,
    review_policy: {
      comment_limit: Number(draft.comment_limit.trim()),
      excluded_authors: lines(draft.excluded_authors),
      excluded_paths: lines(draft.excluded_paths),
      max_changed_files: Number(draft.max_changed_files.trim()),
      review_drafts: draft.review_drafts,
      review_on_open: draft.review_on_open,
      review_on_push: draft.review_on_push,
      review_on_ready: draft.review_on_ready,
      review_on_reopen: draft.review_on_reopen,
      strictness: draft.strictness
    }
  }
}

const sourceText = (source: RepositoryConfiguration["sources"]["agent"]) =>
  source === "REPOSITORY"
    ? "overridden here"
    : source === "ORGANIZATION"
      ? "inherited from ORGANIZATION"
      : "inherited from DEFAULT (Bosun's defaults)"

const Sources = (props: { readonly configuration: RepositoryConfiguration }) => (
  <ul className="muted" data-testid="configuration-sources">
    {CONFIGURATION_GROUPS.map((group) => (
      <li key={group}>
        <strong>{group}</strong>: {sourceText(props.configuration.sources[group])}
      </li>
    ))}
  </ul>
)

const ReadOnly = (props: Props & { readonly configuration: RepositoryConfiguration }) => {
  const { configuration } = props
  const [repositories] = useLoad(
    () => call((client) => client.repositories.list({ params: { organization_id: props.org } })),
    [props.org]
  )
  const names = new Map(
    (repositories.data?.data ?? []).map((repository) => [repository.id, `${repository.owner}/${repository.name}`])
  )
  return (
    <dl className="facts">
      <Fact label="Model">{configuration.model === "" ? "Provider's default" : configuration.model}</Fact>
      <Fact label="Reasoning effort">{configuration.reasoning_effort}</Fact>
      <Fact label="Secondary repositories">
        {configuration.secondary_repository_ids.length === 0
          ? "None"
          : configuration.secondary_repository_ids.map((id, index) => (
              <span key={id}>
                {index === 0 ? null : ", "}
                <Link href={orgPath(props.org, "repositories", id)}>{names.get(id) ?? id}</Link>
              </span>
            ))}
      </Fact>
      <Fact label="Custom instructions">
        {configuration.custom_instructions === "" ? (
          "None"
        ) : (
          <pre className="code">{configuration.custom_instructions}</pre>
        )}
      </Fact>
      <Fact label="MCP servers">{configuration.mcp_servers.length}</Fact>
      <Fact label="Skills">{configuration.skills.length}</Fact>
      {configuration.review_policy.guidance === "" ? null : (
        <Fact label="Review guidance">
          <pre className="code">{configuration.review_policy.guidance}</pre>
        </Fact>
      )}
    </dl>
  )
}

const ConfigurationForm = (
  props: Props & { readonly configuration: RepositoryConfiguration; readonly saved: () => void }
) => {
  const [draft, setDraft] = useState(() => draftOf(props.configuration))
  const [invalid, setInvalid] = useState<string | null>(null)
  const [done, setDone] = useState(false)
  const save = useAction()
  const ids = useId()
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => {
    setDraft((previous) => ({ ...previous, [key]: value }))
    setDone(false)
  }
  const policy = (key: keyof Draft & `review_${string}`) => (on: boolean) => set(key, on)

  const submit = () => {
    const update = updateOf(draft)
    setDone(false)
    if (typeof update === "string") {
      setInvalid(update)
      return
    }
    setInvalid(null)
    void save
      .perform(() =>
        call((client) =>
          client.configuration.put({
            params: { organization_id: props.org, repository_id: props.id },
            payload: update
          })
        )
      )
      .then((ok) => {
        if (ok) {
          setDone(true)
          props.saved()
        }
      })
  }

  return (
    <form
      className="form"
      aria-labelledby={`${ids}-title`}
      onSubmit={(event) => {
        event.preventDefault()
        submit()
      }}
    >
      <h2 id={`${ids}-title`}>Configuration</h2>
      <p className="muted">
        Saving writes the agent, review_policy and sandbox groups as this repository's own overrides. Where each group
        comes from now:
      </p>
      <Sources configuration={props.configuration} />

      <fieldset>
        <legend>Agent</legend>
        <Choice
          label="Agent provider"
          value={draft.agent_provider}
          options={AgentProvider.literals}
          onChange={(value) => set("agent_provider", value)}
        />
        <Choice
          label="Automatic PR description"
          value={draft.automatic_pr_description}
          options={AutomaticPrDescription.literals}
          onChange={(value) => set("automatic_pr_description", value)}
        />
        <Choice
          label="Issue pull request mode"
          value={draft.issue_pull_request_mode}
          options={IssuePullRequestMode.literals}
          onChange={(value) => set("issue_pull_request_mode", value)}
        />
      </fieldset>

      <fieldset>
        <legend>Sandbox</legend>
        <Choice
          label="Sandbox provider"
          value={draft.sandbox_provider}
          options={SandboxProvider.literals}
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
            {AGENT_ONE_ON_PLATFORM_CONTAINER}. Saving this makes the repository's readiness BLOCKING.
          </p>
        ) : null}
      </fieldset>

      <fieldset>
        <legend>Review policy</legend>
        <Choice
          label="Strictness"
          value={draft.strictness}
          options={Strictness.literals}
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
        <label className="field">
          <span>Excluded authors (one login per line)</span>
          <textarea
            rows={3}
            spellCheck={false}
            value={draft.excluded_authors}
            onChange={(event) => set("excluded_authors", event.target.value)}
          />
        </label>
        <label className="field">
          <span>Excluded paths (one glob per line)</span>
          <textarea
            rows={3}
            spellCheck={false}
            value={draft.excluded_paths}
            onChange={(event) => set("excluded_paths", event.target.value)}
          />
        </label>
        <Check label="Review drafts" checked={draft.review_drafts} onChange={policy("review_drafts")} />
        <Check label="Review on open" checked={draft.review_on_open} onChange={policy("review_on_open")} />
        <Check label="Review on push" checked={draft.review_on_push} onChange={policy("review_on_push")} />
        <Check label="Review on ready" checked={draft.review_on_ready} onChange={policy("review_on_ready")} />
        <Check label="Review on reopen" checked={draft.review_on_reopen} onChange={policy("review_on_reopen")} />
      </fieldset>

      <div className="actions">
        <button type="submit" className="primary" disabled={save.pending} aria-busy={save.pending}>
          Save configuration
        </button>
        {save.pending ? (
          <span className="progress" aria-busy="true">
            Saving…
          </span>
        ) : null}
        {done ? (
          <span className="badge good" role="status">
            Saved
          </span>
        ) : null}
      </div>
      <ErrorNote message={invalid ?? save.error} />

      <h3>Other settings (read-only here)</h3>
      <ReadOnly org={props.org} id={props.id} configuration={props.configuration} />
    </form>
  )
}

/* --------------------------------------------------- context suggestions */

const SuggestionRow = (props: Props & { readonly suggestion: ContextSuggestion; readonly changed: () => void }) => {
  const { suggestion } = props
  const decide = useAction()
  const perform = (decision: "approve" | "reject") =>
    void decide
      .perform(() =>
        call((client) =>
          client.contextSuggestions.decide({
            params: { organization_id: props.org, repository_id: props.id, suggestion_id: suggestion.id },
            payload: { decision }
          })
        )
      )
      .then((ok) => {
        if (ok) props.changed()
      })
  return (
    <tr>
      <td>
        {suggestion.secondary_repository_id === null ? (
          `${suggestion.secondary_owner}/${suggestion.secondary_name}`
        ) : (
          <Link href={orgPath(props.org, "repositories", suggestion.secondary_repository_id)}>
            {suggestion.secondary_owner}/{suggestion.secondary_name}
          </Link>
        )}
      </td>
      <td>{suggestion.reason ?? <span className="muted">No reason given</span>}</td>
      <td>{suggestion.source}</td>
      <td>
        {suggestion.access_valid ? (
          <span className="badge good">Access valid</span>
        ) : (
          <span className="badge bad">No access</span>
        )}
      </td>
      <td>
        <Badge value={suggestion.state} />{" "}
        <span className="muted">
          {suggestion.decided_at === null ? `proposed ${when(suggestion.proposed_at)}` : when(suggestion.decided_at)}
        </span>
      </td>
      <td>
        {suggestion.state === "PROPOSED" ? (
          <div className="actions">
            <ActionButton pending={decide.pending} kind="primary" onClick={() => perform("approve")}>
              Approve
            </ActionButton>
            <ActionButton pending={decide.pending} kind="danger" onClick={() => perform("reject")}>
              Reject
            </ActionButton>
          </div>
        ) : null}
        <ErrorNote message={decide.error} />
      </td>
    </tr>
  )
}

const Suggestions = (props: Props & { readonly decided: () => void }) => {
  const [loaded, reload] = useLoad(
    () =>
      call((client) =>
        client.contextSuggestions.list({ params: { organization_id: props.org, repository_id: props.id } })
      ),
    [props.org, props.id]
  )
  return (
    <section aria-labelledby="suggestions-title">
      <h2 id="suggestions-title">Context suggestions</h2>
      <Loading loaded={loaded}>
        {({ data }) =>
          data.length === 0 ? (
            <Empty>
              No context suggestions. Bosun proposes a related repository here when a run needed it; approving one adds
              it to this repository's secondary repositories.
            </Empty>
          ) : (
            <table className="list" data-testid="context-suggestions">
              <thead>
                <tr>
                  <th>Secondary repository</th>
                  <th>Reason</th>
                  <th>Source</th>
                  <th>Access valid</th>
                  <th>State</th>
                  <th>
                    <span className="visually-hidden">Decision</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.map((suggestion) => (
                  <SuggestionRow
                    key={suggestion.id}
                    org={props.org}
                    id={props.id}
                    suggestion={suggestion}
                    changed={() => {
                      reload()
                      props.decided()
                    }}
                  />
                ))}
              </tbody>
            </table>
          )
        }
      </Loading>
    </section>
  )
}

/* ---------------------------------------------------- deep-scan schedule */

const Schedule = (props: Props) => {
  const [loaded, reload] = useLoad(
    () =>
      call((client) =>
        client.deepScans.schedule({ params: { organization_id: props.org, repository_id: props.id } })
      ).then(
        (answer) => answer.data,
        (error: unknown) => {
          if (isNotFound(error)) return null
          throw error
        }
      ),
    [props.org, props.id]
  )
  const [cron, setCron] = useState<string | null>(null)
  const save = useAction()
  const remove = useAction()
  const current = loaded.data?.cron ?? ""
  const typed = cron ?? current

  return (
    <section aria-labelledby="schedule-title">
      <h2 id="schedule-title">Deep-scan schedule</h2>
      <Loading loaded={loaded}>
        {(schedule) =>
          schedule === null ? (
            <Empty>No schedule. Set a cron expression below to scan this repository regularly.</Empty>
          ) : (
            <dl className="facts">
              <Fact label="Cron (UTC)">
                <code className="code">{schedule.cron}</code>
              </Fact>
              <Fact label="Next run">{when(schedule.next_run_at)}</Fact>
              <Fact label="Last run">{when(schedule.last_run_at)}</Fact>
              {schedule.last_deep_scan_id === null ? null : (
                <Fact label="Last scan">
                  <Link href={orgPath(props.org, "deep-scans", schedule.last_deep_scan_id)}>Open the last scan</Link>
                </Fact>
              )}
              {schedule.last_error === null ? null : (
                <Fact label="Last error">
                  <span className="error">{schedule.last_error}</span>
                </Fact>
              )}
              <Fact label="Updated">{when(schedule.updated_at)}</Fact>
            </dl>
          )
        }
      </Loading>
      <form
        className="form"
        onSubmit={(event) => {
          event.preventDefault()
          void save
            .perform(() =>
              call((client) =>
                client.deepScans.setSchedule({
                  params: { organization_id: props.org, repository_id: props.id },
                  payload: { cron: typed.trim() }
                })
              )
            )
            .then((ok) => {
              if (ok) {
                setCron(null)
                reload()
              }
            })
        }}
      >
        <label className="field">
          <span>Cron expression (five fields, UTC)</span>
          <input
            type="text"
            spellCheck={false}
            placeholder="0 3 * * 1"
            value={typed}
            onChange={(event) => setCron(event.target.value)}
          />
        </label>
        <div className="actions">
          <button type="submit" className="primary" disabled={save.pending} aria-busy={save.pending}>
            Save schedule
          </button>
          {loaded.data === null || loaded.data === undefined ? null : (
            <ActionButton
              pending={remove.pending}
              kind="danger"
              onClick={() =>
                void remove
                  .perform(() =>
                    call((client) =>
                      client.deepScans.removeSchedule({
                        params: { organization_id: props.org, repository_id: props.id }
                      })
                    )
                  )
                  .then((ok) => {
                    if (ok) {
                      setCron(null)
                      reload()
                    }
                  })
              }
            >
              Remove schedule
            </ActionButton>
          )}
        </div>
        <ErrorNote message={save.error ?? remove.error} />
      </form>
    </section>
  )
}

/* ------------------------------------------------------------------ page */

const RepositoryDetail = (props: Props) => {
  const [repository, reloadRepository] = useLoad(
    () =>
      call((client) => client.repositories.get({ params: { organization_id: props.org, repository_id: props.id } })),
    [props.org, props.id]
  )
  const [configuration, reloadConfiguration] = useLoad(
    () =>
      call((client) => client.configuration.get({ params: { organization_id: props.org, repository_id: props.id } })),
    [props.org, props.id]
  )

  return (
    <section aria-labelledby="repository-title">
      <p>
        <Link href={orgPath(props.org, "repositories")}>← Repositories</Link>
      </p>
      {repository.data === undefined ? <h1 id="repository-title">Repository</h1> : null}
      <Loading loaded={repository}>
        {({ data }) => <Header org={props.org} id={props.id} repository={data} changed={reloadRepository} />}
      </Loading>
      <Loading loaded={configuration}>
        {({ data }) => (
          <ConfigurationForm
            org={props.org}
            id={props.id}
            configuration={data}
            saved={() => {
              reloadConfiguration()
              reloadRepository()
            }}
          />
        )}
      </Loading>
      <Suggestions org={props.org} id={props.id} decided={reloadConfiguration} />
      <Schedule org={props.org} id={props.id} />
    </section>
  )
}

export default RepositoryDetail

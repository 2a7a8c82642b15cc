/**
 * One repository (docs/interface.md: Organization endpoints `GET`/`PATCH .../repositories/{id}`,
 * `GET`/`PUT .../configuration`, `.../context-suggestions`, `.../deep-scan-schedule`;
 * Resources "Repository configuration", "review_policy", "Context suggestion"): everything an admin
 * changes about one repository in one place. The configuration form edits exactly the six fields
 * `PUT .../configuration` takes and says, per configuration group, whether the value is inherited
 * (from Bosun's defaults or the organization) or overridden by this repository, because a save
 * turns the groups it writes into this repository's overrides. The other effective fields are shown
 * read-only. Context suggestions are decided here, and the recurring deep scan is set.
 */
import { BOSUN_CONFIG_FILE, type ContextSuggestion, type Repository, type RepositoryConfiguration } from "@bosun/domain"
import { type ReactNode, useState } from "react"
import { call, isNotFound } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { ConfigurationEditor } from "../configuration/ConfigurationEditor.tsx"
import { orgPath } from "../routes.ts"
import { ActionButton, Badge, Empty, ErrorNote, Link, Loading, when } from "../ui.tsx"

type Props = { readonly org: string; readonly id: string; readonly admin: boolean }

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
        {props.admin ? (
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
        ) : null}
        <Link href={`${orgPath(props.org, "runs")}?repository_id=${encodeURIComponent(props.id)}`}>Runs</Link>
      </div>
      <ErrorNote message={toggle.error} />
    </>
  )
}

/* --------------------------------------------------------- configuration */

/** The repository's `.bosun.yaml` as Bosun last read it from the default branch, and its path instructions. */
const ConfigFile = (props: { readonly configuration: RepositoryConfiguration }) => {
  const file = props.configuration.config_file
  const instructions = props.configuration.path_instructions
  return (
    <section aria-labelledby="config-file-title" data-testid="config-file">
      <h2 id="config-file-title">{BOSUN_CONFIG_FILE}</h2>
      {file === null ? (
        <p className="muted">
          Not read yet: Bosun reads it from the default branch when it next reviews a pull request here.
        </p>
      ) : (
        <dl className="facts">
          <Fact label="Found">
            {file.found ? `Yes, ${file.path} on ${file.ref}` : `No ${file.path} on ${file.ref}`}
          </Fact>
          <Fact label="Read">{when(file.read_at)}</Fact>
          {file.error === null ? null : (
            <Fact label="Error">
              <span className="error" data-testid="config-file-error">
                Ignored: {file.error}
              </span>
            </Fact>
          )}
        </dl>
      )}
      <h3>Path instructions</h3>
      {instructions.length === 0 ? (
        <p className="muted">None. They are set in {BOSUN_CONFIG_FILE} only.</p>
      ) : (
        <table className="list" data-testid="path-instructions">
          <thead>
            <tr>
              <th>Files (glob)</th>
              <th>Instructions</th>
            </tr>
          </thead>
          <tbody>
            {instructions.map((instruction) => (
              <tr key={instruction.path}>
                <td>
                  <code className="code">{instruction.path}</code>
                </td>
                <td>
                  <pre className="code">{instruction.instructions}</pre>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

/** Settings decided elsewhere on this screen (secondary repositories come from approved context suggestions). */
const Secondary = (props: Props & { readonly configuration: RepositoryConfiguration }) => {
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
    </dl>
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
        {suggestion.state === "PROPOSED" && props.admin ? (
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
                    admin={props.admin}
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
      {props.admin ? (
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
      ) : null}
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
  // The catalog of the credentials in force here: the repository's override, else the organization's.
  const [connection] = useLoad(
    () =>
      call((client) =>
        client.agentConnection.get({ params: { organization_id: props.org }, query: { repository_id: props.id } })
      ),
    [props.org, props.id]
  )
  const [instance] = useLoad(() => call((client) => client.instance.info()), [])

  return (
    <section aria-labelledby="repository-title">
      <p>
        <Link href={orgPath(props.org, "repositories")}>← Repositories</Link>
      </p>
      {repository.data === undefined ? <h1 id="repository-title">Repository</h1> : null}
      <Loading loaded={repository}>
        {({ data }) => (
          <Header org={props.org} id={props.id} admin={props.admin} repository={data} changed={reloadRepository} />
        )}
      </Loading>
      <Loading loaded={configuration}>
        {({ data }) => (
          <>
            <ConfigFile configuration={data} />
            <ConfigurationEditor
              org={props.org}
              repositoryId={props.id}
              configuration={data}
              catalog={connection.data?.data.catalog.catalog ?? null}
              catalogProblem={connection.status === "failed" ? connection.error : null}
              sandboxProviders={instance.data?.data.sandbox_providers ?? null}
              canWrite={props.admin}
              changed={() => {
                reloadConfiguration()
                // A configuration change can change the repository's readiness.
                reloadRepository()
              }}
            />
            <h3>Decided elsewhere on this screen</h3>
            <Secondary org={props.org} id={props.id} admin={props.admin} configuration={data} />
          </>
        )}
      </Loading>
      <Suggestions org={props.org} id={props.id} admin={props.admin} decided={reloadConfiguration} />
      <Schedule org={props.org} id={props.id} admin={props.admin} />
    </section>
  )
}

export default RepositoryDetail

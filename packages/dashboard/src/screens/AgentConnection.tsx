/**
 * The agent connection (docs/interface.md: Organization endpoints `.../opencode-connection`,
 * Resources "Agent connection"; Authentication 3, 7): whether the organization's agent has
 * credentials and a discovered model catalog, i.e. whether runs can start, and the two ways an
 * admin gives it credentials: one provider's API key, or an OpenCode `auth.json` import.
 * Credentials are write-only: the screen never shows a key back, only the fingerprints the API
 * answers, and clears what was typed as soon as it is sent. A repository can be picked to read and
 * write its override instead of the organization's connection. While a catalog discovery is queued
 * or running the screen refreshes itself, since that is what decides `ready`.
 */
import type { AgentConnection as Connection, ModelTurnResult } from "@bosun/domain"
import { type ReactNode, useEffect, useId, useState } from "react"
import { call } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { GettingStarted } from "../setup/GettingStarted.tsx"
import { ActionButton, Badge, ErrorNote, Loading, when } from "../ui.tsx"

const PROVIDER_ID = /^[a-z0-9][a-z0-9._-]{0,127}$/
const POLL_MS = 3000

type Scope = { readonly org: string; readonly repositoryId: string | undefined }

const queryOf = (scope: Scope) => (scope.repositoryId === undefined ? {} : { repository_id: scope.repositoryId })

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

type AuthJson = { readonly auth: Record<string, Record<string, unknown>>; readonly [key: string]: unknown }

/** The import body, or what is wrong with the text (the API checks it again). */
const importOf = (text: string): AuthJson | string => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    return `Not valid JSON: ${error instanceof Error ? error.message : String(error)}`
  }
  if (!isRecord(value)) return "The import must be a JSON object with an `auth` object in it."
  const { auth, ...rest } = value
  if (!isRecord(auth)) return "The import needs an `auth` object: provider id → credentials, as OpenCode's auth.json."
  const providers: Record<string, Record<string, unknown>> = {}
  for (const [provider, credentials] of Object.entries(auth)) {
    if (!PROVIDER_ID.test(provider)) return `"${provider}" is not a provider id (lowercase letters, digits, . _ -).`
    if (!isRecord(credentials)) return `The credentials of "${provider}" must be an object.`
    providers[provider] = credentials
  }
  if (Object.keys(providers).length === 0) return "The `auth` object names no provider."
  return { ...rest, auth: providers }
}

const Fact = (props: { readonly label: string; readonly children: ReactNode }) => (
  <>
    <dt>{props.label}</dt>
    <dd>{props.children}</dd>
  </>
)

const Fingerprint = (props: { readonly value: string | null }) =>
  props.value === null ? <span className="muted">none</span> : <code className="code">{props.value}</code>

const yesNo = (value: boolean) => (value ? "Yes" : "No")

const Status = (props: { readonly connection: Connection }) => {
  const { auth, catalog, configuration } = props.connection
  const providers = catalog.catalog.providers
  return (
    <>
      {props.connection.ready ? (
        <p>
          <Badge value="READY" /> The agent has credentials and a discovered model catalog; runs can start.
        </p>
      ) : (
        <div className="banner bad" role="status">
          Not ready: runs cannot start until credentials are configured and a catalog discovery succeeds.
        </div>
      )}
      <div className="cards">
        <div className="card">
          <h2>Credentials</h2>
          <dl className="facts">
            <Fact label="Configured">{yesNo(auth.configured)}</Fact>
            <Fact label="Mode">{auth.mode}</Fact>
            <Fact label="Fingerprint">
              <Fingerprint value={auth.fingerprint} />
            </Fact>
            <Fact label="Providers">{auth.provider_ids.length === 0 ? "none" : auth.provider_ids.join(", ")}</Fact>
            <Fact label="Inherited">
              {auth.inherited ? `Yes, from ${auth.source_scope}` : `No, set on this ${auth.source_scope.toLowerCase()}`}
            </Fact>
            <Fact label="Version">{auth.active_version}</Fact>
          </dl>
        </div>
        <div className="card">
          <h2>Configuration</h2>
          <dl className="facts">
            <Fact label="Configured">{yesNo(configuration.configured)}</Fact>
            <Fact label="Fingerprint">
              <Fingerprint value={configuration.fingerprint} />
            </Fact>
            <Fact label="Inherited">
              {configuration.inherited
                ? `Yes, from ${configuration.source_scope}`
                : `No, set on this ${configuration.source_scope.toLowerCase()}`}
            </Fact>
            <Fact label="Version">{configuration.active_version}</Fact>
          </dl>
        </div>
        <div className="card">
          <h2>Model catalog</h2>
          <dl className="facts">
            <Fact label="Discovery">
              {catalog.status === null ? <span className="muted">never run</span> : <Badge value={catalog.status} />}
            </Fact>
            {catalog.error === null ? null : (
              <Fact label="Error">
                <span className="error">{catalog.error}</span>
              </Fact>
            )}
            <Fact label="Last successful">{when(catalog.last_successful_at)}</Fact>
            <Fact label="Finished">{when(catalog.finished_at)}</Fact>
            <Fact label="Agent version">{catalog.provider_version ?? "—"}</Fact>
            <Fact label="Credential fingerprint">
              <Fingerprint value={catalog.credential_fingerprint} />
            </Fact>
            <Fact label="Configuration fingerprint">
              <Fingerprint value={catalog.configuration_fingerprint} />
            </Fact>
            <Fact label="Providers found">
              {providers.length === 0
                ? "none"
                : providers.map((provider) => `${provider.name} (${provider.models.length} models)`).join(", ")}
            </Fact>
          </dl>
        </div>
      </div>
    </>
  )
}

const ApiKeyForm = (props: {
  readonly scope: Scope
  readonly known: ReadonlyArray<string>
  readonly written: (fingerprint: string | null) => void
}) => {
  const [provider, setProvider] = useState("")
  const [key, setKey] = useState("")
  const [invalid, setInvalid] = useState<string | null>(null)
  const save = useAction()
  const ids = useId()
  return (
    <form
      className="form"
      aria-labelledby={`${ids}-title`}
      autoComplete="off"
      onSubmit={(event) => {
        event.preventDefault()
        const providerId = provider.trim()
        if (!PROVIDER_ID.test(providerId)) {
          setInvalid("Name the provider by its id: lowercase letters, digits, . _ - (for example openai).")
          return
        }
        if (key.length === 0) {
          setInvalid("Paste the API key.")
          return
        }
        setInvalid(null)
        const apiKey = key
        setKey("")
        let fingerprint: string | null = null
        void save
          .perform(() =>
            call((client) =>
              client.agentConnection.setApiKey({
                params: { organization_id: props.scope.org, provider_id: providerId },
                query: queryOf(props.scope),
                payload: { api_key: apiKey }
              })
            ).then((answer) => {
              fingerprint = answer.data.connection.auth.fingerprint
            })
          )
          .then((ok) => {
            if (ok) props.written(fingerprint)
          })
      }}
    >
      <h2 id={`${ids}-title`}>Set a provider's API key</h2>
      <label className="field">
        <span>Provider id</span>
        <input
          type="text"
          list={`${ids}-providers`}
          spellCheck={false}
          placeholder="openai"
          value={provider}
          onChange={(event) => setProvider(event.target.value)}
        />
        <datalist id={`${ids}-providers`}>
          {props.known.map((id) => (
            <option key={id} value={id} />
          ))}
        </datalist>
      </label>
      <label className="field">
        <span>API key</span>
        <input
          type="password"
          autoComplete="new-password"
          spellCheck={false}
          value={key}
          onChange={(event) => setKey(event.target.value)}
        />
      </label>
      <div className="actions">
        <button type="submit" className="primary" disabled={save.pending} aria-busy={save.pending}>
          Save API key
        </button>
        {save.pending ? <span className="progress">Saving…</span> : null}
      </div>
      <ErrorNote message={invalid ?? save.error} />
    </form>
  )
}

const ImportForm = (props: {
  readonly scope: Scope
  readonly written: (fingerprint: string | null, excluded: ReadonlyArray<string>) => void
}) => {
  const [text, setText] = useState("")
  const [invalid, setInvalid] = useState<string | null>(null)
  const save = useAction()
  const ids = useId()
  return (
    <form
      className="form"
      aria-labelledby={`${ids}-title`}
      autoComplete="off"
      onSubmit={(event) => {
        event.preventDefault()
        const body = importOf(text)
        if (typeof body === "string") {
          setInvalid(body)
          return
        }
        setInvalid(null)
        setText("")
        let fingerprint: string | null = null
        let excluded: ReadonlyArray<string> = []
        void save
          .perform(() =>
            call((client) =>
              client.agentConnection.import({
                params: { organization_id: props.scope.org },
                query: queryOf(props.scope),
                payload: body
              })
            ).then((answer) => {
              fingerprint = answer.data.connection.auth.fingerprint
              excluded = answer.data.excluded_sections
            })
          )
          .then((ok) => {
            if (ok) props.written(fingerprint, excluded)
          })
      }}
    >
      <h2 id={`${ids}-title`}>Import an OpenCode auth.json</h2>
      <p className="muted">
        Replaces this scope's credentials with the providers under <code>auth</code>; any other top-level section is
        left out and listed.
      </p>
      <label className="field">
        <span>auth.json content</span>
        <textarea
          rows={6}
          spellCheck={false}
          autoComplete="off"
          placeholder='{"auth": {"openai": {"type": "api", "key": "…"}}}'
          value={text}
          onChange={(event) => setText(event.target.value)}
        />
      </label>
      <div className="actions">
        <button type="submit" className="primary" disabled={save.pending} aria-busy={save.pending}>
          Import credentials
        </button>
        {save.pending ? <span className="progress">Importing…</span> : null}
      </div>
      <ErrorNote message={invalid ?? save.error} />
    </form>
  )
}

/** One line: which model answered and how fast, or the provider's own error. */
const TurnLine = (props: { readonly result: ModelTurnResult }) => {
  const { result } = props
  const model = result.model === "" ? "no model" : result.model
  return (
    <p className={result.ok ? "turn good" : "turn bad"} data-testid="test-result" data-ok={result.ok}>
      <Badge value={result.ok ? "SUCCEEDED" : "FAILED"} /> {model}:{" "}
      {result.ok ? `answered in ${(result.duration_ms / 1000).toFixed(1)} s` : "failed"} — {result.message}{" "}
      <span className="muted">({when(result.tested_at)})</span>
    </p>
  )
}

/**
 * The Test of a connection: one minimal model turn with the credentials and model in force, so an
 * admin learns the model answers before a review depends on it. Members see the last result.
 */
const TestTurn = (props: { readonly scope: Scope; readonly admin: boolean; readonly tested: () => void }) => {
  const [last, reload] = useLoad(
    () =>
      call((client) =>
        client.agentConnection.lastTest({
          params: { organization_id: props.scope.org },
          query: queryOf(props.scope)
        })
      ),
    [props.scope.org, props.scope.repositoryId]
  )
  const test = useAction()
  const result = last.data?.data ?? null
  return (
    <section aria-labelledby="test-title">
      <h2 id="test-title">Test the model</h2>
      <p className="muted">Runs one short turn with the credentials and the model in force, and records the answer.</p>
      {props.admin ? (
        <div className="actions">
          <ActionButton
            pending={test.pending}
            kind="primary"
            onClick={() =>
              void test
                .perform(() =>
                  call((client) =>
                    client.agentConnection.test({
                      params: { organization_id: props.scope.org },
                      query: queryOf(props.scope)
                    })
                  )
                )
                .then((ok) => {
                  if (ok) {
                    reload()
                    props.tested()
                  }
                })
            }
          >
            Test
          </ActionButton>
          {test.pending ? <span className="progress">Waiting for the model…</span> : null}
        </div>
      ) : null}
      <ErrorNote message={test.error} />
      {last.status === "failed" ? <ErrorNote message={`The last test could not be read: ${last.error}`} /> : null}
      {result === null ? (
        last.status === "ready" ? (
          <p className="muted">Not tested yet.</p>
        ) : null
      ) : (
        <TurnLine result={result} />
      )}
    </section>
  )
}

const AgentConnection = (props: { readonly org: string; readonly admin: boolean }) => {
  const [checklist, setChecklist] = useState(0)
  const [repositoryId, setRepositoryId] = useState<string | undefined>(undefined)
  const scope: Scope = { org: props.org, repositoryId }
  const [notice, setNotice] = useState<string | null>(null)
  const [repositories] = useLoad(
    () => call((client) => client.repositories.list({ params: { organization_id: props.org } })),
    [props.org]
  )
  const [loaded, reload] = useLoad(
    () =>
      call((client) =>
        client.agentConnection.get({
          params: { organization_id: props.org },
          query: repositoryId === undefined ? {} : { repository_id: repositoryId }
        })
      ),
    [props.org, repositoryId]
  )

  const discovering = loaded.data?.data.catalog.status === "QUEUED" || loaded.data?.data.catalog.status === "RUNNING"
  useEffect(() => {
    if (!discovering || loaded.status !== "ready") return
    const timer = setTimeout(reload, POLL_MS)
    return () => clearTimeout(timer)
  }, [discovering, loaded.status, reload])

  const written = (fingerprint: string | null, excluded: ReadonlyArray<string> = []) => {
    setNotice(
      `Saved. Credential fingerprint now ${fingerprint ?? "none"}.` +
        (excluded.length === 0 ? "" : ` Left out: ${excluded.join(", ")}.`) +
        " A catalog discovery is queued."
    )
    reload()
    setChecklist((n) => n + 1)
  }

  const connection = loaded.data?.data
  const known =
    connection === undefined
      ? []
      : [...new Set([...connection.auth.provider_ids, ...connection.catalog.catalog.providers.map((p) => p.id)])]

  return (
    <section aria-labelledby="agent-title">
      <h1 id="agent-title">Agent connection</h1>
      <GettingStarted org={props.org} version={checklist} />
      <div className="filters">
        <label>
          Scope{" "}
          <select
            value={repositoryId ?? ""}
            onChange={(event) => {
              setNotice(null)
              setRepositoryId(event.target.value === "" ? undefined : event.target.value)
            }}
          >
            <option value="">Organization</option>
            {(repositories.data?.data ?? []).map((repository) => (
              <option key={repository.id} value={repository.id}>
                {repository.owner}/{repository.name} (override)
              </option>
            ))}
          </select>
        </label>
      </div>
      {repositories.status === "failed" ? <ErrorNote message={repositories.error} /> : null}
      <Loading loaded={loaded}>{({ data }) => <Status connection={data} />}</Loading>
      <TestTurn scope={scope} admin={props.admin} tested={() => setChecklist((n) => n + 1)} />
      {notice === null ? null : (
        <p className="banner" role="status">
          {notice}
        </p>
      )}
      <p className="muted">
        {repositoryId === undefined
          ? "Keys set here are the organization's; every repository without its own override uses them."
          : "Keys set here are this repository's override; the organization's credentials stay as they are."}{" "}
        Only admins can change credentials.
      </p>
      {props.admin ? (
        <>
          <ApiKeyForm scope={scope} known={known} written={(fingerprint) => written(fingerprint)} />
          <ImportForm scope={scope} written={written} />
        </>
      ) : null}
    </section>
  )
}

export default AgentConnection

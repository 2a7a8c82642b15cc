/**
 * Connected apps (docs/interface.md: Organization endpoints `GET`/`POST .../composio/connections`,
 * Resources "Connected-app connection result"): the third-party apps the signed-in member connected
 * for themselves through Composio, and a form to connect another by its toolkit slug. An app that
 * needs authorization answers with a hosted link, shown once here (the API never lists it again: it
 * is a bearer URL). The organization's Linear and Slack connections are shown read-only beside
 * them, since they are what Bosun itself is connected to.
 */
import type { ConnectedAppConnection } from "@bosun/domain"
import { useState } from "react"
import { call, isNotFound } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { orgPath } from "../routes.ts"
import { Badge, Empty, ErrorNote, Link, Loading, when } from "../ui.tsx"

const TOOLKIT_SLUG = /^[a-z0-9][a-z0-9_-]{0,63}$/

/** A connection's read, with 404 (not connected) as null. */
const orNone = <A,>(request: Promise<{ readonly data: A }>): Promise<A | null> =>
  request.then(
    (answer) => answer.data,
    (error: unknown) => {
      if (isNotFound(error)) return null
      throw error
    }
  )

const ConnectForm = (props: { readonly org: string; readonly connected: () => void }) => {
  const [slug, setSlug] = useState("")
  const [invalid, setInvalid] = useState<string | null>(null)
  const [result, setResult] = useState<(ConnectedAppConnection & { readonly slug: string }) | null>(null)
  const connect = useAction()
  return (
    <form
      className="form"
      aria-label="Connect an app"
      onSubmit={(event) => {
        event.preventDefault()
        const toolkit = slug.trim().toLowerCase()
        if (!TOOLKIT_SLUG.test(toolkit)) {
          setInvalid("Name the app by its Composio toolkit slug: lowercase letters, digits, _ and - (like github).")
          return
        }
        setInvalid(null)
        setResult(null)
        void connect
          .perform(() =>
            call((client) =>
              client.composio.connect({ params: { organization_id: props.org }, payload: { toolkit_slug: toolkit } })
            ).then((answer) => setResult({ ...answer.data, slug: toolkit }))
          )
          .then((ok) => {
            if (ok) {
              setSlug("")
              props.connected()
            }
          })
      }}
    >
      <h2>Connect an app</h2>
      <label className="field">
        <span>Toolkit slug</span>
        <input
          type="text"
          spellCheck={false}
          autoCapitalize="none"
          placeholder="github"
          value={slug}
          onChange={(event) => setSlug(event.target.value)}
        />
      </label>
      <div className="actions">
        <button type="submit" className="primary" disabled={connect.pending} aria-busy={connect.pending}>
          Connect
        </button>
        {connect.pending ? <span className="progress">Connecting…</span> : null}
      </div>
      <ErrorNote message={invalid ?? connect.error} />
      {result === null ? null : result.status === "AUTHORIZATION_REQUIRED" && result.redirect_url !== null ? (
        <p role="status">
          <Badge value={result.status} />{" "}
          <a href={result.redirect_url} target="_blank" rel="noopener noreferrer">
            Authorize {result.slug}
          </a>
          {result.expires_at === null ? null : <span className="muted"> before {when(result.expires_at)}</span>}. The
          link is shown only now.
        </p>
      ) : (
        <p role="status">
          <Badge value={result.status} /> {result.slug} is ready to use.
        </p>
      )}
    </form>
  )
}

const ConnectedApps = (props: { readonly org: string }) => {
  const params = { organization_id: props.org }
  const [apps, reload] = useLoad(() => call((client) => client.composio.list({ params })), [props.org])
  const [linear] = useLoad(() => orNone(call((client) => client.linear.getConnection({ params }))), [props.org])
  const [slack] = useLoad(() => orNone(call((client) => client.slack.getConnection({ params }))), [props.org])

  return (
    <section aria-labelledby="apps-title">
      <h1 id="apps-title">Connected apps</h1>
      <p className="muted">Apps you connected for yourself; other members see their own.</p>
      <Loading loaded={apps}>
        {({ data }) =>
          data.length === 0 ? (
            <Empty>You have connected no app yet. Connect one below by its Composio toolkit slug.</Empty>
          ) : (
            <table className="list" data-testid="connected-apps">
              <thead>
                <tr>
                  <th>App</th>
                  <th>Status</th>
                  <th>Link expires</th>
                  <th>Updated</th>
                </tr>
              </thead>
              <tbody>
                {data.map((app) => (
                  <tr key={app.toolkit_slug}>
                    <td>{app.toolkit_slug}</td>
                    <td>
                      <Badge value={app.status} />
                    </td>
                    <td>{app.expires_at === null ? "—" : when(app.expires_at)}</td>
                    <td>{when(app.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loading>
      <ConnectForm org={props.org} connected={reload} />

      <h2>Organization connections</h2>
      <div className="cards">
        <div className="card">
          <h3>Linear</h3>
          <Loading loaded={linear}>
            {(connection) =>
              connection === null ? (
                <p className="muted">
                  Not connected. An admin connects Linear through the API (docs/connect-linear.md).
                </p>
              ) : (
                <dl className="facts">
                  <dt>Workspace</dt>
                  <dd>
                    <code className="code">{connection.linear_organization_id}</code>
                  </dd>
                  <dt>Bosun's user</dt>
                  <dd>{connection.app_user_name ?? connection.app_user_id ?? "—"}</dd>
                  <dt>Access token</dt>
                  <dd>
                    {connection.has_access_token ? "Set" : "None"}
                    {connection.refreshable ? ", renewed by Bosun" : ""}
                    {connection.access_token_expires_at === null
                      ? ""
                      : `, expires ${when(connection.access_token_expires_at)}`}
                  </dd>
                  <dt>Connected</dt>
                  <dd>{when(connection.created_at)}</dd>
                </dl>
              )
            }
          </Loading>
        </div>
        <div className="card">
          <h3>Slack</h3>
          <Loading loaded={slack}>
            {(connection) =>
              connection === null ? (
                <p className="muted">Not connected. An admin connects Slack through the API (docs/connect-slack.md).</p>
              ) : (
                <dl className="facts">
                  <dt>Workspace</dt>
                  <dd>{connection.team_name ?? connection.team_id}</dd>
                  <dt>Bot user</dt>
                  <dd>
                    <code className="code">{connection.bot_user_id}</code>
                  </dd>
                  <dt>Connected</dt>
                  <dd>{when(connection.created_at)}</dd>
                  <dt>Channels</dt>
                  <dd>
                    <Link href={orgPath(props.org, "slack")}>Slack channels</Link>
                  </dd>
                </dl>
              )
            }
          </Loading>
        </div>
      </div>
    </section>
  )
}

export default ConnectedApps

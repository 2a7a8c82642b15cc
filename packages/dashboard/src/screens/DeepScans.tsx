/**
 * Deep scans (docs/interface.md: Organization endpoints `GET`/`POST .../deep-scans`,
 * Resources "Deep scan"): the organization's whole-repository audits, newest first, and a form to
 * launch one on a repository's default branch. The API pages by size only (`page_size` up to 100,
 * no cursor), so "Show more" asks for a bigger first page. A launch answers with the new scan's id
 * and the screen opens it, where its progress and findings show.
 */
import { DEFAULT_DEEP_SCAN_PAGE_SIZE, type DeepScan, MAX_PAGE_SIZE, type Repository } from "@bosun/domain"
import { useState } from "react"
import { call } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { navigate, orgPath } from "../routes.ts"
import { Badge, Empty, ErrorNote, Link, Loading, when } from "../ui.tsx"

const RepositoryOptions = (props: { readonly choices: ReadonlyArray<Repository> }) =>
  props.choices.map((repository) => (
    <option key={repository.id} value={repository.id}>
      {repository.owner}/{repository.name}
    </option>
  ))

/** The launch form: a launch that is answered opens the new scan. */
const LaunchForm = (props: {
  readonly org: string
  readonly choices: ReadonlyArray<Repository>
  /** Why the repositories did not load, shown with the launch's own error. */
  readonly repositoriesError: string | null
}) => {
  const [target, setTarget] = useState("")
  const launch = useAction()
  return (
    <form
      className="form"
      aria-label="Launch a deep scan"
      onSubmit={(event) => {
        event.preventDefault()
        if (target === "") return
        let id: string | undefined
        void launch
          .perform(() =>
            call((client) =>
              client.deepScans.launch({ params: { organization_id: props.org }, payload: { repository_id: target } })
            ).then((answer) => {
              id = answer.data.id
            })
          )
          .then((ok) => {
            if (ok && id !== undefined) navigate(orgPath(props.org, "deep-scans", id))
          })
      }}
    >
      <label className="field">
        <span>Repository</span>
        <select value={target} onChange={(event) => setTarget(event.target.value)}>
          <option value="">Choose a repository</option>
          <RepositoryOptions choices={props.choices} />
        </select>
      </label>
      <div className="actions">
        <button type="submit" className="primary" disabled={launch.pending || target === ""} aria-busy={launch.pending}>
          Launch deep scan
        </button>
        {launch.pending ? (
          <span className="progress" aria-busy="true">
            Launching…
          </span>
        ) : null}
      </div>
      <p className="muted">The scan audits the default branch's head as it is now; it can take a while.</p>
      <ErrorNote message={launch.error ?? props.repositoriesError} />
    </form>
  )
}

const ScanTable = (props: { readonly org: string; readonly scans: ReadonlyArray<DeepScan> }) => (
  <table className="list" data-testid="deep-scans">
    <thead>
      <tr>
        <th>Repository</th>
        <th>Status</th>
        <th>Risk</th>
        <th>Findings</th>
        <th>Accepted / pending / rejected</th>
        <th>Created</th>
      </tr>
    </thead>
    <tbody>
      {props.scans.map((scan) => (
        <tr key={scan.id}>
          <td>
            <Link href={orgPath(props.org, "deep-scans", scan.id)}>
              {scan.repository.owner}/{scan.repository.name}
            </Link>{" "}
            <code className="muted">{scan.head_sha.slice(0, 7)}</code>
          </td>
          <td>
            <Badge value={scan.status} />
          </td>
          <td>{scan.risk_level === null ? <span className="muted">—</span> : <Badge value={scan.risk_level} />}</td>
          <td>{scan.finding_count}</td>
          <td>
            {scan.decision_counts.accepted} / {scan.decision_counts.pending} / {scan.decision_counts.rejected}
          </td>
          <td>{when(scan.created_at)}</td>
        </tr>
      ))}
    </tbody>
  </table>
)

const DeepScans = (props: { readonly org: string }) => {
  const [repositoryId, setRepositoryId] = useState<string | undefined>(undefined)
  const [pageSize, setPageSize] = useState(DEFAULT_DEEP_SCAN_PAGE_SIZE)

  const [repositories] = useLoad(
    () => call((client) => client.repositories.list({ params: { organization_id: props.org } })),
    [props.org]
  )
  const [loaded] = useLoad(
    () =>
      call((client) =>
        client.deepScans.list({
          params: { organization_id: props.org },
          query: { page_size: pageSize, ...(repositoryId === undefined ? {} : { repository_id: repositoryId }) }
        })
      ),
    [props.org, repositoryId, pageSize]
  )
  const choices = repositories.data?.data ?? []

  return (
    <section aria-labelledby="deep-scans-title">
      <h1 id="deep-scans-title">Deep scans</h1>
      <LaunchForm
        org={props.org}
        choices={choices}
        repositoriesError={repositories.status === "failed" ? repositories.error : null}
      />

      <div className="filters">
        <label>
          Show scans of{" "}
          <select
            value={repositoryId ?? ""}
            onChange={(event) => setRepositoryId(event.target.value === "" ? undefined : event.target.value)}
          >
            <option value="">Every repository</option>
            <RepositoryOptions choices={choices} />
          </select>
        </label>
      </div>
      <Loading loaded={loaded}>
        {({ data }) => (
          <>
            {data.length === 0 ? (
              <Empty>
                {repositoryId === undefined
                  ? "No deep scans yet. Launch one above, or set a schedule on a repository's page."
                  : "No deep scans of this repository yet. Launch one above."}
              </Empty>
            ) : (
              <ScanTable org={props.org} scans={data} />
            )}
            {data.length >= pageSize && pageSize < MAX_PAGE_SIZE ? (
              <div className="pager">
                <button
                  type="button"
                  className="plain"
                  onClick={() => setPageSize(Math.min(MAX_PAGE_SIZE, pageSize + DEFAULT_DEEP_SCAN_PAGE_SIZE))}
                >
                  Show more
                </button>
              </div>
            ) : null}
            {data.length >= MAX_PAGE_SIZE ? (
              <p className="muted">Showing the newest {MAX_PAGE_SIZE}; filter by repository to see older scans.</p>
            ) : null}
          </>
        )}
      </Loading>
    </section>
  )
}

export default DeepScans

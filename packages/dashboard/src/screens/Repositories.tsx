/**
 * Repositories (docs/interface.md: Organization endpoints `GET`/`PATCH .../repositories`,
 * Resources "Repository"): every repository the GitHub App reaches in the organization, whether
 * Bosun can still see it, its sandbox-readiness verdict and an Enable/Pause toggle for reviews.
 * BLOCKING readiness stops runs on a repository, so the screen says so in a banner above the list
 * instead of leaving it to a badge in one row. Each row links to the repository's configuration.
 */
import type { Repository } from "@bosun/domain"
import { call } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { orgPath } from "../routes.ts"
import { ActionButton, Badge, Empty, ErrorNote, Link, Loading } from "../ui.tsx"

const RepositoryRow = (props: {
  readonly org: string
  readonly repository: Repository
  readonly changed: () => void
}) => {
  const { repository } = props
  const toggle = useAction()
  const flip = () =>
    void toggle
      .perform(() =>
        call((client) =>
          client.repositories.update({
            params: { organization_id: props.org, repository_id: repository.id },
            payload: { enabled: !repository.enabled }
          })
        )
      )
      .then((ok) => {
        if (ok) props.changed()
      })
  return (
    <tr>
      <td>
        <Link href={orgPath(props.org, "repositories", repository.id)}>
          {repository.owner}/{repository.name}
        </Link>{" "}
        <span className="muted">{repository.default_branch}</span>
      </td>
      <td>
        <Badge value={repository.readiness_status} />
      </td>
      <td>
        {repository.available ? (
          <span className="badge good">Available</span>
        ) : (
          <span className="badge bad">No access</span>
        )}
      </td>
      <td>
        <Badge value={repository.enabled ? "ACTIVE" : "PAUSED"} />
      </td>
      <td>
        <ActionButton pending={toggle.pending} kind={repository.enabled ? "plain" : "primary"} onClick={flip}>
          {repository.enabled ? "Pause" : "Enable"}
        </ActionButton>
        <ErrorNote message={toggle.error} />
      </td>
    </tr>
  )
}

const Repositories = (props: { readonly org: string }) => {
  const [loaded, reload] = useLoad(
    () => call((client) => client.repositories.list({ params: { organization_id: props.org } })),
    [props.org]
  )

  return (
    <section aria-labelledby="repositories-title">
      <h1 id="repositories-title">Repositories</h1>
      <Loading loaded={loaded}>
        {({ data }) => {
          const blocking = data.filter((repository) => repository.readiness_status === "BLOCKING")
          return data.length === 0 ? (
            <Empty>
              No repositories yet. Install the Bosun GitHub App on your organization and give it access to the
              repositories Bosun should review; they appear here as GitHub reports them.
            </Empty>
          ) : (
            <>
              {blocking.length === 0 ? null : (
                <div className="banner bad" role="status">
                  {blocking.length === 1
                    ? "1 repository has BLOCKING readiness findings"
                    : `${blocking.length} repositories have BLOCKING readiness findings`}
                  : {blocking.map((repository) => `${repository.owner}/${repository.name}`).join(", ")}. Runs on them
                  fail until their configuration is fixed; open one to change it.
                </div>
              )}
              <table className="list" data-testid="repositories">
                <thead>
                  <tr>
                    <th>Repository</th>
                    <th>Readiness</th>
                    <th>Available</th>
                    <th>Reviews</th>
                    <th>
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((repository) => (
                    <RepositoryRow key={repository.id} org={props.org} repository={repository} changed={reload} />
                  ))}
                </tbody>
              </table>
            </>
          )
        }}
      </Loading>
    </section>
  )
}

export default Repositories

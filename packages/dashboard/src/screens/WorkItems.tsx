/**
 * Work items (docs/interface.md: Organization endpoints `GET .../work-items`, Resources "Work item"): what
 * people asked Bosun to do from GitHub, Slack, Linear or the API, newest-updated first, with where
 * each stands (state, phase, what it waits for). The API answers the whole list, so the state
 * filter and the search run here. Each row links to the item, where its actions are.
 */
import { WorkItemState } from "@bosun/domain"
import { useState } from "react"
import { call } from "../api/client.ts"
import { useLoad } from "../api/useLoad.ts"
import { orgPath } from "../routes.ts"
import { Badge, ChoiceFilter, Empty, Link, Loading, when } from "../ui.tsx"

const STATES = WorkItemState.literals
type State = (typeof STATES)[number]

const WorkItems = (props: { readonly org: string }) => {
  const [state, setState] = useState<State | undefined>(undefined)
  const [search, setSearch] = useState("")
  const [loaded] = useLoad(
    () => call((client) => client.workItems.list({ params: { organization_id: props.org } })),
    [props.org]
  )
  const [repositories] = useLoad(
    () => call((client) => client.repositories.list({ params: { organization_id: props.org } })),
    [props.org]
  )
  const names = new Map(
    (repositories.data?.data ?? []).map((repository) => [repository.id, `${repository.owner}/${repository.name}`])
  )
  const needle = search.trim().toLowerCase()

  return (
    <section aria-labelledby="work-items-title">
      <h1 id="work-items-title">Work items</h1>
      <div className="filters">
        <ChoiceFilter label="State" value={state} choices={STATES} onChange={setState} />
        <label>
          Search{" "}
          <input
            type="search"
            value={search}
            placeholder="title or requester"
            onChange={(event) => setSearch(event.target.value)}
          />
        </label>
      </div>
      <Loading loaded={loaded}>
        {({ data }) => {
          const shown = data.filter(
            (item) =>
              (state === undefined || item.state === state) &&
              (needle === "" ||
                item.title.toLowerCase().includes(needle) ||
                (item.requested_by_login ?? "").toLowerCase().includes(needle))
          )
          if (data.length === 0) {
            return (
              <Empty>
                No work items yet. Mention Bosun in a GitHub issue or pull request, a Slack channel it is in, or assign
                it a Linear issue; each request becomes a work item here.
              </Empty>
            )
          }
          if (shown.length === 0) {
            return <Empty>No work item matches these filters. Clear them to see every work item.</Empty>
          }
          return (
            <table className="list" data-testid="work-items">
              <thead>
                <tr>
                  <th>Work item</th>
                  <th>State</th>
                  <th>Kind / source</th>
                  <th>Repository</th>
                  <th>Updated</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((item) => (
                  <tr key={item.id}>
                    <td>
                      <Link href={orgPath(props.org, "work-items", item.id)}>{item.title}</Link>
                      {item.requested_by_login === null ? null : (
                        <span className="muted"> by {item.requested_by_login}</span>
                      )}
                    </td>
                    <td>
                      <Badge value={item.state} /> <span className="muted">{item.phase}</span>
                      {item.waiting_reason === null ? null : (
                        <span className="muted"> · waiting for {item.waiting_reason}</span>
                      )}
                    </td>
                    <td>
                      {item.kind} <span className="muted">via {item.source}</span>
                    </td>
                    <td>
                      {item.primary_repository_id === null ? (
                        <span className="muted">—</span>
                      ) : (
                        (names.get(item.primary_repository_id) ?? item.primary_repository_id)
                      )}
                    </td>
                    <td>{when(item.updated_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }}
      </Loading>
    </section>
  )
}

export default WorkItems

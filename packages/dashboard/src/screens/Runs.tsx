/**
 * Workflow runs (docs/interface.md: Organization endpoints `GET .../workflow-runs`):
 * newest first, optionally those of one pull request (the pull-request list links here with
 * both filters), each linking to its live detail.
 */
import { call } from "../api/client.ts"
import { useLoad } from "../api/useLoad.ts"
import { orgPath } from "../routes.ts"
import { Badge, Empty, Link, Loading, when } from "../ui.tsx"

const Runs = (props: { readonly org: string; readonly search: string }) => {
  const params = new URLSearchParams(props.search)
  const repository = params.get("repository_id") ?? undefined
  const number = Number(params.get("pull_request_number") ?? Number.NaN)
  const pull = Number.isInteger(number) && number > 0 ? number : undefined
  const [loaded] = useLoad(
    () =>
      call((client) =>
        client.workflowRuns.list({
          params: { organization_id: props.org },
          query: {
            page_size: 100,
            ...(repository === undefined ? {} : { repository_id: repository }),
            ...(pull === undefined ? {} : { pull_request_number: pull })
          }
        })
      ),
    [props.org, repository, pull]
  )
  return (
    <section aria-labelledby="runs-title">
      <h1 id="runs-title">Runs{pull === undefined ? "" : ` of pull request #${pull}`}</h1>
      {pull === undefined && repository === undefined ? null : (
        <p>
          <Link href={orgPath(props.org, "runs")}>Show every run</Link>
        </p>
      )}
      <Loading loaded={loaded}>
        {({ data }) =>
          data.length === 0 ? (
            <Empty>
              No runs yet. Reviews run when a pull request of an enabled repository is opened or pushed to; work items
              and deep scans start runs too.
            </Empty>
          ) : (
            <table className="list" data-testid="runs">
              <thead>
                <tr>
                  <th>Run</th>
                  <th>Type</th>
                  <th>Status</th>
                  <th>Pull request</th>
                  <th>Created</th>
                  <th>Finished</th>
                </tr>
              </thead>
              <tbody>
                {data.map((run) => (
                  <tr key={run.id}>
                    <td>
                      <Link href={orgPath(props.org, "runs", run.id)}>{run.id}</Link>
                    </td>
                    <td>{run.workflow_type}</td>
                    <td>
                      <Badge value={run.status} />
                    </td>
                    <td>{run.pull_request_number === null ? "—" : `#${run.pull_request_number}`}</td>
                    <td>{when(run.created_at)}</td>
                    <td>{when(run.finished_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Loading>
    </section>
  )
}

export default Runs

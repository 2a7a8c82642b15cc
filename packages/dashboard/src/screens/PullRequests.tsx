/**
 * Pull requests (docs/interface.md: Organization endpoints `GET .../pull-requests`): the
 * organization's pull requests with their review status and open/resolved findings, filtered by
 * state and a search of title, author and repository, paged by the API's cursors. The filters and
 * the cursor live in the query string, so a page can be bookmarked, reloaded and stepped back to.
 * Each row links to the pull request's runs.
 */
import { PullRequestState } from "@bosun/domain/PullRequest"
import { useEffect, useState } from "react"
import { call } from "../api/client.ts"
import { earlyPullRequests } from "../api/earlyAnswers.ts"
import { useLoad } from "../api/useLoad.ts"
import { PULL_REQUEST_PAGE_SIZE } from "../firstScreen.ts"
import { navigate, orgPath } from "../routes.ts"
import { Badge, ChoiceFilter, Empty, Link, Loading, when } from "../ui.tsx"

const STATES = PullRequestState.literals

type State = (typeof STATES)[number]

const isState = (value: string | null): value is State => STATES.some((state) => state === value)

export const PullRequests = (props: { readonly org: string; readonly search: string }) => {
  const params = new URLSearchParams(props.search)
  const stateParam = params.get("state")
  const state = isState(stateParam) ? stateParam : undefined
  const search = params.get("search") ?? ""
  const cursor = params.get("cursor") ?? undefined
  const [typed, setTyped] = useState(search)

  const go = (next: { state?: State | undefined; search?: string; cursor?: string | undefined }) => {
    const query = new URLSearchParams()
    const nextState = "state" in next ? next.state : state
    const nextSearch = next.search ?? search
    if (nextState !== undefined) query.set("state", nextState)
    if (nextSearch.trim() !== "") query.set("search", nextSearch.trim())
    if (next.cursor !== undefined) query.set("cursor", next.cursor)
    const text = query.toString()
    navigate(`${orgPath(props.org, "pull-requests")}${text === "" ? "" : `?${text}`}`)
  }

  useEffect(() => setTyped(search), [search])
  useEffect(() => {
    if (typed.trim() === search) return
    const timer = setTimeout(() => go({ search: typed, cursor: undefined }), 300)
    return () => clearTimeout(timer)
  })

  const [loaded] = useLoad(
    () =>
      (state === undefined && search === "" && cursor === undefined ? earlyPullRequests(props.org) : undefined) ??
      call((client) =>
        client.pullRequests.list({
          params: { organization_id: props.org },
          query: {
            page_size: PULL_REQUEST_PAGE_SIZE,
            ...(state === undefined ? {} : { state }),
            ...(search === "" ? {} : { search }),
            ...(cursor === undefined ? {} : { cursor })
          }
        })
      ),
    [props.org, state, search, cursor]
  )

  return (
    <section aria-labelledby="pull-requests-title">
      <h1 id="pull-requests-title">Pull requests</h1>
      <div className="filters">
        <ChoiceFilter
          label="State"
          value={state}
          choices={STATES}
          onChange={(next) => go({ state: next, cursor: undefined })}
        />
        <label>
          Search{" "}
          <input
            type="search"
            value={typed}
            placeholder="title, author or repository"
            onChange={(event) => setTyped(event.target.value)}
          />
        </label>
      </div>
      <Loading loaded={loaded}>
        {({ data, meta }) => (
          <>
            {data.length === 0 ? (
              <Empty>
                {state !== undefined || search !== ""
                  ? "No pull request matches these filters. Clear them to see every pull request."
                  : "No pull requests yet. Enable a repository under Repositories; Bosun lists its pull requests as GitHub reports them."}
              </Empty>
            ) : (
              <table className="list" data-testid="pull-requests">
                <thead>
                  <tr>
                    <th>Pull request</th>
                    <th>State</th>
                    <th>Review</th>
                    <th>Findings open / resolved</th>
                    <th>Updated</th>
                    <th>Runs</th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((pull) => (
                    <tr key={pull.id}>
                      <td>
                        <span className="muted">
                          {pull.repository}#{pull.number}
                        </span>{" "}
                        {pull.title}
                        {pull.author_login === null ? null : <span className="muted"> by {pull.author_login}</span>}
                      </td>
                      <td>
                        <Badge value={pull.state} />
                      </td>
                      <td>
                        <Badge value={pull.review_status} />
                      </td>
                      <td>
                        <span className={pull.open_findings > 0 ? "count open" : "count"}>{pull.open_findings}</span> /{" "}
                        {pull.resolved_findings}
                      </td>
                      <td>{when(pull.updated_at)}</td>
                      <td>
                        <Link
                          href={`${orgPath(props.org, "runs")}?repository_id=${encodeURIComponent(pull.repository_id)}&pull_request_number=${pull.number}`}
                        >
                          Runs
                        </Link>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <div className="pager">
              <button
                type="button"
                className="plain"
                disabled={meta.previous_cursor === null}
                onClick={() => go({ cursor: meta.previous_cursor ?? undefined })}
              >
                ← Newer
              </button>
              <button
                type="button"
                className="plain"
                disabled={meta.next_cursor === null}
                onClick={() => go({ cursor: meta.next_cursor ?? undefined })}
              >
                Older →
              </button>
            </div>
          </>
        )}
      </Loading>
    </section>
  )
}

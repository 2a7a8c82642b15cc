/**
 * One work item (docs/interface.md: Organization endpoints `GET .../work-items/{id}`,
 * `POST .../actions`; Resources "Work item"): every field of the item, a link to the run working on
 * it, and one button per action its state allows (`available_actions`, which the API derives from
 * the state machine in `WorkItem.ts`), so the screen never offers an action the API would refuse.
 * After an action the item is read again and its new state shown; while a run is active the
 * screen refreshes itself so the state keeps up with the run.
 */
import type { WorkItemAction } from "@bosun/domain"
import { type ReactNode, useEffect, useState } from "react"
import { call } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { orgPath } from "../routes.ts"
import { ActionButton, Badge, ErrorNote, Link, Loading, when } from "../ui.tsx"

const POLL_MS = 5000

/** `APPROVE` → `Approve`. */
const labelOf = (action: WorkItemAction) => action.charAt(0) + action.slice(1).toLowerCase()

const Fact = (props: { readonly label: string; readonly children: ReactNode }) => (
  <>
    <dt>{props.label}</dt>
    <dd>{props.children}</dd>
  </>
)

const WorkItemDetail = (props: { readonly org: string; readonly id: string }) => {
  const [loaded, reload] = useLoad(
    () => call((client) => client.workItems.get({ params: { organization_id: props.org, work_item_id: props.id } })),
    [props.org, props.id]
  )
  const [repositories] = useLoad(
    () => call((client) => client.repositories.list({ params: { organization_id: props.org } })),
    [props.org]
  )
  const nameOf = (id: string) => {
    const repository = repositories.data?.data.find((candidate) => candidate.id === id)
    return repository === undefined ? id : `${repository.owner}/${repository.name}`
  }
  const act = useAction()
  const [done, setDone] = useState<string | null>(null)

  const running = loaded.data?.data.active_run_id !== null && loaded.data?.data.active_run_id !== undefined
  useEffect(() => {
    if (!running || loaded.status !== "ready") return
    const timer = setTimeout(reload, POLL_MS)
    return () => clearTimeout(timer)
  }, [running, loaded.status, reload])

  const perform = (action: WorkItemAction) => {
    setDone(null)
    let after = ""
    void act
      .perform(() =>
        call((client) =>
          client.workItems.act({
            params: { organization_id: props.org, work_item_id: props.id },
            payload: { action }
          })
        ).then((answer) => {
          after = `${answer.data.state} (${answer.data.phase})`
        })
      )
      .then((ok) => {
        if (ok) {
          setDone(`${labelOf(action)}: done. The item is now ${after}.`)
          reload()
        }
      })
  }

  return (
    <section aria-labelledby="work-item-title">
      <p>
        <Link href={orgPath(props.org, "work-items")}>← Work items</Link>
      </p>
      {loaded.data === undefined ? <h1 id="work-item-title">Work item</h1> : null}
      <Loading loaded={loaded}>
        {({ data: item }) => (
          <>
            <h1 id="work-item-title">{item.title}</h1>
            <p>
              <Badge value={item.state} /> <span className="muted">{item.phase}</span>
              {item.waiting_reason === null ? null : (
                <span className="muted"> · waiting for {item.waiting_reason}</span>
              )}
            </p>
            {item.summary === null ? null : <p>{item.summary}</p>}
            <dl className="facts">
              <Fact label="State">{item.state}</Fact>
              <Fact label="Phase">{item.phase}</Fact>
              <Fact label="Waiting for">{item.waiting_reason ?? "—"}</Fact>
              <Fact label="Kind">{item.kind}</Fact>
              <Fact label="Source">
                {item.source}{" "}
                {item.source_url === null ? null : (
                  <a href={item.source_url} target="_blank" rel="noopener noreferrer">
                    open the request
                  </a>
                )}
              </Fact>
              <Fact label="Requested by">{item.requested_by_login ?? "—"}</Fact>
              <Fact label="Repository">
                {item.primary_repository_id === null ? (
                  "—"
                ) : (
                  <Link href={orgPath(props.org, "repositories", item.primary_repository_id)}>
                    {nameOf(item.primary_repository_id)}
                  </Link>
                )}
              </Fact>
              <Fact label="Active run">
                {item.active_run_id === null ? (
                  "None"
                ) : (
                  <Link href={orgPath(props.org, "runs", item.active_run_id)}>Open the active run</Link>
                )}
              </Fact>
              {item.parent_work_item_id === null ? null : (
                <Fact label="Parent work item">
                  <Link href={orgPath(props.org, "work-items", item.parent_work_item_id)}>
                    {item.parent_work_item_id}
                  </Link>
                </Fact>
              )}
              {item.parent_artifact_id === null ? null : (
                <Fact label="Parent artifact">
                  <code className="code">{item.parent_artifact_id}</code>
                </Fact>
              )}
              <Fact label="Created">{when(item.created_at)}</Fact>
              <Fact label="Updated">{when(item.updated_at)}</Fact>
              <Fact label="Completed">{when(item.completed_at)}</Fact>
              <Fact label="Id">
                <code className="code">{item.id}</code>
              </Fact>
            </dl>
            {item.available_actions.length === 0 ? (
              <p className="muted">No action is available in this state.</p>
            ) : (
              <div className="actions">
                {item.available_actions.map((action) => (
                  <ActionButton
                    key={action}
                    pending={act.pending}
                    kind={action === "APPROVE" || action === "RETRY" || action === "REOPEN" ? "primary" : "danger"}
                    onClick={() => perform(action)}
                  >
                    {labelOf(action)}
                  </ActionButton>
                ))}
              </div>
            )}
            {done === null ? null : (
              <p className="muted" role="status">
                {done}
              </p>
            )}
            <ErrorNote message={act.error} />
          </>
        )}
      </Loading>
    </section>
  )
}

export default WorkItemDetail

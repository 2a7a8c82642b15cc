/**
 * One run (docs/interface.md: Organization endpoints `GET .../workflow-runs/{run_id}`; Events 1):
 * status, phase, the model and usage, errors, its attempts, and the live event log. The log follows
 * the stream (`api/runEvents.ts`) and sticks to the bottom while the reader is there; it renders
 * the newest lines and shows older ones as the reader scrolls up, so a run of thousands of events
 * stays responsive. The run's record (status, attempts, usage) is reloaded every 5 s until it ends.
 */
import type { WorkflowEvent } from "@bosun/domain"
import { useEffect, useLayoutEffect, useRef, useState } from "react"
import { call } from "../api/client.ts"
import { useRunEvents } from "../api/runEvents.ts"
import { useLoad } from "../api/useLoad.ts"
import { Badge, Loading, when } from "../ui.tsx"

const WINDOW = 300
const TERMINAL = new Set(["SUCCEEDED", "FAILED", "CANCELLED"])

const lineOf = (event: WorkflowEvent): string => {
  const data = event.data
  if (typeof data === "string") return data
  if (typeof data === "object" && data !== null) {
    const record = data as Readonly<Record<string, unknown>>
    for (const key of ["text", "line", "message", "summary"]) {
      const value = record[key]
      if (typeof value === "string") return value
    }
  }
  return data === undefined || data === null ? "" : JSON.stringify(data)
}

const EventLog = (props: { readonly events: ReadonlyArray<WorkflowEvent> }) => {
  const box = useRef<HTMLDivElement>(null)
  const [shown, setShown] = useState(WINDOW)
  const atBottom = useRef(true)
  const start = Math.max(0, props.events.length - shown)
  const visible = props.events.slice(start)

  useLayoutEffect(() => {
    const element = box.current
    if (element !== null && atBottom.current) element.scrollTop = element.scrollHeight
  })

  return (
    <div
      ref={box}
      className="log"
      data-testid="event-log"
      // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling log must be reachable by keyboard to be scrolled
      tabIndex={0}
      role="log"
      aria-live="polite"
      onScroll={(event) => {
        const element = event.currentTarget
        atBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < 24
        if (element.scrollTop < 40 && start > 0) {
          const before = element.scrollHeight
          setShown((count) => count + WINDOW)
          requestAnimationFrame(() => {
            element.scrollTop += element.scrollHeight - before
          })
        }
      }}
    >
      {start > 0 ? <div className="muted">{start} older events: scroll up to show them</div> : null}
      {visible.map((event) => (
        <div key={event.seq} className="line" data-seq={event.seq}>
          <span className="seq">{event.seq}</span>
          <span className="type">{event.type}</span>
          <span className="text">{lineOf(event)}</span>
        </div>
      ))}
    </div>
  )
}

const RunDetail = (props: { readonly org: string; readonly id: string }) => {
  const [loaded, reload] = useLoad(
    () => call((client) => client.workflowRuns.get({ params: { organization_id: props.org, run_id: props.id } })),
    [props.org, props.id]
  )
  const status = loaded.data?.data.run.status
  const live = status === undefined || !TERMINAL.has(status)
  const log = useRunEvents(props.org, props.id, live)

  useEffect(() => {
    if (!live) return
    const timer = setInterval(reload, 5000)
    return () => clearInterval(timer)
  }, [live, reload])

  return (
    <section aria-labelledby="run-title">
      <h1 id="run-title">Run {props.id}</h1>
      <Loading loaded={loaded}>
        {({ data: { run, attempts } }) => (
          <>
            <dl className="facts">
              <dt>Status</dt>
              <dd>
                <Badge value={run.status} /> {run.current_phase ?? ""}
              </dd>
              <dt>Type</dt>
              <dd>{run.workflow_type}</dd>
              <dt>Pull request</dt>
              <dd>{run.pull_request_number === null ? "—" : `#${run.pull_request_number}`}</dd>
              <dt>Model</dt>
              <dd>
                {run.provider ?? "—"} {run.model ?? ""}
              </dd>
              <dt>Head</dt>
              <dd>
                <code>{run.head_sha?.slice(0, 12) ?? "—"}</code>
              </dd>
              <dt>Started / finished</dt>
              <dd>
                {when(run.started_at)} / {when(run.finished_at)}
              </dd>
              <dt>Usage</dt>
              <dd>
                {Object.keys(run.usage).length === 0
                  ? "—"
                  : Object.entries(run.usage)
                      .map(
                        ([key, value]) => `${key}: ${typeof value === "object" ? JSON.stringify(value) : String(value)}`
                      )
                      .join(", ")}
              </dd>
            </dl>
            {run.error_code === null ? null : (
              <p className="error" role="alert">
                {run.error_code}: {run.error_message}
              </p>
            )}
            <h2>Attempts</h2>
            {attempts.length === 0 ? (
              <p className="muted">No attempt has started yet: the run waits for a free slot in its lane.</p>
            ) : (
              <table className="list">
                <thead>
                  <tr>
                    <th>#</th>
                    <th>Started</th>
                    <th>Finished</th>
                    <th>Exit</th>
                    <th>Sandbox</th>
                    <th>Worker</th>
                  </tr>
                </thead>
                <tbody>
                  {attempts.map((attempt) => (
                    <tr key={attempt.id}>
                      <td>{attempt.attempt}</td>
                      <td>{when(attempt.started_at)}</td>
                      <td>{when(attempt.finished_at)}</td>
                      <td>
                        {attempt.exit_reason ?? "—"}
                        {attempt.retryable ? " (retryable)" : ""}
                      </td>
                      <td>{attempt.sandbox_provider ?? "—"}</td>
                      <td>{attempt.worker_id ?? "—"}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Loading>
      <h2>
        Events{" "}
        <span className="muted" data-testid="stream-state">
          {log.ended || !live ? "finished" : log.connected ? "live" : "connecting…"} · {log.events.length} events
        </span>
      </h2>
      <EventLog events={log.events} />
    </section>
  )
}

export default RunDetail

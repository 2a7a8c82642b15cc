/**
 * A run's live event log (docs/interface.md: Events 1): the SSE stream of
 * `GET .../workflow-runs/{run_id}/events/stream`, each event's `id:` its sequence. The browser's
 * EventSource resumes with `Last-Event-ID` when the connection drops; when the server ends a
 * stream with `event: reconnect` (every 55 s) the log reopens at once with `?after=` the last
 * sequence it holds; after the run's last event the server says `end` and the log stops
 * following. Events are kept by sequence, so a replay after a reconnect adds no line twice and a
 * gap cannot open: the server replays everything after the sequence asked for.
 */
import { WorkflowEvent } from "@bosun/domain"
import { Schema } from "effect"
import { useEffect, useRef, useState } from "react"

const decodeEvent = Schema.decodeUnknownOption(Schema.fromJsonString(WorkflowEvent))

export interface RunLog {
  readonly events: ReadonlyArray<WorkflowEvent>
  readonly connected: boolean
  /** How many times the stream was reopened after the server's `reconnect`. */
  readonly reconnects: number
  /** The server sent the run's last event: nothing more will come. */
  readonly ended: boolean
}

/**
 * The run's events, followed while the page is open. `live` says whether the run can still
 * produce events: a finished run's stream is read once and not reopened after `reconnect`.
 */
export const useRunEvents = (org: string, runId: string, live: boolean): RunLog => {
  const [log, setLog] = useState<RunLog>({ events: [], connected: false, reconnects: 0, ended: false })
  const lastSeq = useRef(0)
  const following = useRef(live)
  following.current = live

  useEffect(() => {
    lastSeq.current = 0
    setLog({ events: [], connected: false, reconnects: 0, ended: false })
    let source: EventSource | undefined
    let closed = false
    const base = `/api/v1/organizations/${encodeURIComponent(org)}/workflow-runs/${encodeURIComponent(runId)}/events/stream`
    const open = () => {
      source = new EventSource(`${base}?after=${lastSeq.current}`)
      source.onopen = () => setLog((current) => ({ ...current, connected: true }))
      source.onerror = () => setLog((current) => ({ ...current, connected: false }))
      source.onmessage = (message) => {
        const decoded = decodeEvent(message.data)
        if (decoded._tag === "None" || decoded.value.seq <= lastSeq.current) return
        const event = decoded.value
        lastSeq.current = event.seq
        setLog((current) => ({ ...current, events: [...current.events, event] }))
      }
      source.addEventListener("end", () => {
        source?.close()
        setLog((current) => ({ ...current, connected: false, ended: true }))
      })
      source.addEventListener("reconnect", () => {
        source?.close()
        setLog((current) => ({ ...current, connected: false }))
        if (closed || !following.current) return
        setLog((current) => ({ ...current, reconnects: current.reconnects + 1 }))
        open()
      })
    }
    open()
    return () => {
      closed = true
      source?.close()
    }
  }, [org, runId])

  return log
}

/**
 * One attempt's event log (docs/interface.md: Events 2): an append-only NDJSON file of `RunEvent`s
 * numbered from 1 without gaps, and the listeners that follow it live. `append` writes the line to
 * the file before any listener sees the event, so a tail that reconnects with `after=N` replays
 * from the file exactly what it missed.
 *
 * Writes are synchronous on an open descriptor: one `write(2)` per event keeps the order the
 * sequence numbers promise without a writer queue, and the file outlives every HTTP connection.
 */
import * as fs from "node:fs"
import type { RunEvent } from "@bosun/domain"

export type RunEventListener = (event: RunEvent) => void

export class RunLog {
  readonly file: string
  private fd: number | undefined
  private seq: number
  private readonly listeners = new Set<RunEventListener>()

  private constructor(file: string, lastSeq: number) {
    this.file = file
    this.seq = lastSeq
    this.fd = fs.openSync(file, "a")
  }

  /**
   * Opens (or creates) the log at `file`, continuing its numbering. A last line cut short by a
   * crash mid-write is dropped first, so the next event starts on a line of its own.
   */
  static open(file: string): RunLog {
    if (!fs.existsSync(file)) return new RunLog(file, 0)
    const text = fs.readFileSync(file, "utf8")
    if (text !== "" && !text.endsWith("\n"))
      fs.truncateSync(file, Buffer.byteLength(text.slice(0, text.lastIndexOf("\n") + 1)))
    return new RunLog(file, lastSeqOf(file))
  }

  get lastSeq(): number {
    return this.seq
  }

  append(type: string, data: unknown): RunEvent {
    if (this.fd === undefined) throw new Error(`the log ${this.file} is closed`)
    const event: RunEvent = { seq: this.seq + 1, at: new Date().toISOString(), type, data }
    fs.writeSync(this.fd, `${JSON.stringify(event)}\n`)
    this.seq = event.seq
    for (const listener of this.listeners) listener(event)
    return event
  }

  /** Follows new events until the returned function is called. */
  subscribe(listener: RunEventListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** No more events: the file stays for replay. */
  close(): void {
    if (this.fd !== undefined) fs.closeSync(this.fd)
    this.fd = undefined
  }
}

/** The events of a log file with `seq > after`, in order; a line still being written is left out. */
export const readEvents = (file: string, after: number): Array<RunEvent> => {
  if (!fs.existsSync(file)) return []
  const lines = fs.readFileSync(file, "utf8").split("\n")
  // Whatever follows the last newline is empty, or a line not yet (or never) finished.
  lines.pop()
  const events: Array<RunEvent> = []
  for (const line of lines) {
    if (line === "") continue
    const event = JSON.parse(line) as RunEvent
    if (event.seq > after) events.push(event)
  }
  return events
}

const lastSeqOf = (file: string): number => {
  const events = readEvents(file, 0)
  return events.length === 0 ? 0 : (events[events.length - 1]?.seq ?? 0)
}

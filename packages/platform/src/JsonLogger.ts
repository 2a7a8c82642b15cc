/**
 * One JSON object per line for every log record (docs/interface.md: Events 6, Authentication 8):
 * `{"time","level","msg", ...annotations}`. Annotations are flattened to the top level so the
 * `http_request` line carries `request_id`, `route`, `status`... as plain fields.
 *
 * The logger writes strings to a sink; production uses stdout, tests capture the lines. It never
 * sees request bodies or headers: callers annotate only what Events 6 allows.
 */

import * as fs from "node:fs"
import { Cause, Context, Layer, Logger, Redacted, References } from "effect"
import { RequestContext } from "./RequestContext.ts"

export type LogSink = (line: string) => void

/**
 * Stdout, written once per event-loop turn instead of once per line: under load a write syscall
 * per request line cost about a third of the server's CPU. Lines still pending when the process
 * exits are flushed synchronously, so none is lost on a normal exit.
 */
const makeStdoutSink = (): LogSink => {
  let pending: Array<string> = []
  let scheduled = false
  const flush = () => {
    scheduled = false
    if (pending.length === 0) return
    const chunk = `${pending.join("\n")}\n`
    pending = []
    process.stdout.write(chunk)
  }
  process.once("exit", () => {
    if (pending.length > 0) fs.writeSync(1, `${pending.join("\n")}\n`)
    pending = []
  })
  return (line) => {
    pending.push(line)
    if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
}

const RESERVED = new Set(["time", "level", "msg"])

const jsonReplacer = (_key: string, value: unknown): unknown => {
  if (typeof value === "bigint") return value.toString()
  if (Redacted.isRedacted(value)) return "<redacted>"
  if (value instanceof Error) return { name: value.name, message: value.message }
  return value
}

const messageText = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts.map((part) => (typeof part === "string" ? part : JSON.stringify(part, jsonReplacer))).join(" ")
}

export const makeJsonLogger = (sink: LogSink): Logger.Logger<unknown, void> =>
  Logger.make(({ cause, date, fiber, logLevel, message }) => {
    const record: Record<string, unknown> = {
      time: date.toISOString(),
      level: logLevel.toLowerCase(),
      msg: messageText(message)
    }
    // Inside a request every record carries its request id (docs/interface.md: Events 7, correlation ids).
    const request = Context.getOrUndefined(fiber.context, RequestContext)
    if (request !== undefined) record.request_id = request.requestId
    for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) {
      if (!RESERVED.has(key)) record[key] = value
    }
    if (cause.reasons.length > 0 && record.stack === undefined) record.cause = Cause.pretty(cause)
    sink(JSON.stringify(record, jsonReplacer))
  })

/**
 * Direct access to the same output for the one record written per request (`http_request`):
 * going through the Effect logger there cost a fifth of the server's throughput.
 */
export class LogOutput extends Context.Service<
  LogOutput,
  {
    /**
     * Writes `{"time","level","msg", ...fields}` as one line. Fields must be plain JSON values
     * (strings, numbers, booleans, null): they are serialised without the logger's replacer,
     * which alone cost a third of this line's price.
     */
    readonly write: (level: "info" | "error", msg: string, fields: Readonly<Record<string, unknown>>) => void
  }
>()("bosun/server/observability/LogOutput") {}

/**
 * The current time as ISO 8601, formatted at most once per millisecond: under load many lines
 * share a millisecond, and `toISOString` was a visible share of the per-request cost.
 */
let lastMillis = -1
let lastIso = ""
const isoNow = (): string => {
  const now = Date.now()
  if (now !== lastMillis) {
    lastMillis = now
    lastIso = new Date(now).toISOString()
  }
  return lastIso
}

/** The JSON logger and `LogOutput`, both writing to `sink` (stdout by default). */
export const layerJsonLogger = (sink?: LogSink): Layer.Layer<LogOutput> => {
  const out = sink ?? makeStdoutSink()
  return Layer.merge(
    Logger.layer([makeJsonLogger(out)]),
    Layer.succeed(
      LogOutput,
      LogOutput.of({
        write: (level, msg, fields) => {
          const head = `{"time":"${isoNow()}","level":"${level}","msg":${JSON.stringify(msg)}`
          const rest = JSON.stringify(fields)
          out(rest === "{}" ? `${head}}` : `${head},${rest.slice(1)}`)
        }
      })
    )
  )
}

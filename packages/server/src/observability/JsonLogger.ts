/**
 * One JSON object per line for every log record (spec: Events 6, Authentication 8):
 * `{"time","level","msg", ...annotations}`. Annotations are flattened to the top level so the
 * `http_request` line carries `request_id`, `route`, `status`... as plain fields.
 *
 * The logger writes strings to a sink; production uses stdout, tests capture the lines. It never
 * sees request bodies or headers: callers annotate only what the spec allows.
 */
import { Cause, type Layer, Logger, Redacted, References } from "effect"

export type LogSink = (line: string) => void

const stdoutSink: LogSink = (line) => {
  process.stdout.write(`${line}\n`)
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
    for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) {
      if (!RESERVED.has(key)) record[key] = value
    }
    if (cause.reasons.length > 0 && record.stack === undefined) record.cause = Cause.pretty(cause)
    sink(JSON.stringify(record, jsonReplacer))
  })

/** Replaces the default logger with the JSON one writing to `sink` (stdout by default). */
export const layerJsonLogger = (sink: LogSink = stdoutSink): Layer.Layer<never> => Logger.layer([makeJsonLogger(sink)])

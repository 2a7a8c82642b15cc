/**
 * Captures the JSON log lines the server writes, with the same logger production uses, so tests
 * can assert on exactly what would reach stdout.
 */
import { type LogOutput, layerJsonLogger } from "@bosun/platform/JsonLogger"
import { Context, Effect, Layer } from "effect"

export class LogCapture extends Context.Service<
  LogCapture,
  {
    readonly lines: ReadonlyArray<string>
    readonly records: Effect.Effect<ReadonlyArray<Record<string, unknown>>>
    readonly clear: Effect.Effect<void>
  }
>()("bosun/testing/LogCapture") {
  /** Provides `LogCapture` and routes every log record into it. */
  static readonly layer: Layer.Layer<LogCapture | LogOutput> = Layer.unwrap(
    Effect.sync(() => {
      const lines: Array<string> = []
      const capture = LogCapture.of({
        lines,
        records: Effect.sync(() => lines.map((line) => JSON.parse(line) as Record<string, unknown>)),
        clear: Effect.sync(() => {
          lines.length = 0
        })
      })
      return Layer.merge(
        Layer.succeed(LogCapture, capture),
        layerJsonLogger((line) => {
          lines.push(line)
        })
      )
    })
  )
}

/**
 * The Bosun agent runtime process (`npm run runtime`). A start-up problem (a missing token, a
 * port in use) ends it with one line naming the problem and exit code 1. SIGINT/SIGTERM stop
 * it: the HTTP server closes and running agents are stopped; their runs are reported as cut off
 * by a restart when the runtime next starts.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Config, Effect, Exit, Layer, Logger } from "effect"
import { RuntimeServerLive } from "./RuntimeServer.ts"

const describe = (cause: Cause.Cause<unknown>): string => {
  const failure = cause.reasons.find(Cause.isFailReason)
  const error: unknown = failure ? failure.error : cause.reasons.find(Cause.isDieReason)?.defect
  if (error instanceof Config.ConfigError) return `invalid configuration: ${error.cause.message.split("\n")[0]}`
  if (typeof error === "object" && error !== null && "message" in error)
    return String(error.message).split("\n")[0] ?? ""
  return Cause.pretty(cause).split("\n")[0] ?? "start-up failed"
}

Layer.launch(RuntimeServerLive).pipe(
  Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.void
      : Effect.sync(() => {
          process.stderr.write(`bosun-runtime: ${describe(cause)}\n`)
          process.exitCode = 1
        })
  ),
  // One JSON object per line, like the control plane's logs; no header values or bodies are logged.
  Effect.provide(Logger.layer([Logger.consoleJson])),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    teardown: (exit, onExit) =>
      onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? Number(process.exitCode ?? 0) : 1)
  })
)

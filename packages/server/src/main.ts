/**
 * The `bosun` server process (`npm start`). Start-up problems — a malformed setting, a missing
 * key, a port in use, an embedded Postgres that will not start — end the process with one line
 * naming the problem and exit code 1, never a stack trace. SIGINT/SIGTERM stop it gracefully:
 * the HTTP server closes, then the pool, then the embedded Postgres.
 */

import { layerJsonLogger } from "@bosun/platform/JsonLogger"
import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer } from "effect"
import { ServerLive } from "./app/Server.ts"
import { describeStartupFailure } from "./platform/config/StartupFailure.ts"

Layer.launch(ServerLive).pipe(
  Effect.catchCause((cause) =>
    Cause.hasInterruptsOnly(cause)
      ? Effect.void
      : Effect.sync(() => {
          process.stderr.write(`bosun: ${describeStartupFailure(cause)}\n`)
          process.exitCode = 1
        })
  ),
  Effect.provide(layerJsonLogger()),
  NodeRuntime.runMain({
    disableErrorReporting: true,
    // A stop signal interrupts the server; having shut down cleanly is a success (exit 0).
    teardown: (exit, onExit) =>
      onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? Number(process.exitCode ?? 0) : 1)
  })
)

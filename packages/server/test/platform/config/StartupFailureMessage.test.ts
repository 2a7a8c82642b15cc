/**
 * The one start-up line carries the reason the HTTP server or the cluster runner's socket could not
 * listen, not an empty message (the runner socket's own is only "Open").
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause } from "effect"
import { ServeError } from "effect/http/HttpServerError"
import { SocketServerError, SocketServerOpenError } from "effect/socket/SocketServer"
import { describeStartupFailure } from "../../../src/platform/config/StartupFailure.ts"

describe("describeStartupFailure", () => {
  it("names the listen error of a port already in use", () => {
    const cause = Object.assign(new Error("listen EADDRINUSE: address already in use 127.0.0.1:8080"), {
      code: "EADDRINUSE"
    })
    assert.strictEqual(
      describeStartupFailure(Cause.fail(new ServeError({ cause }))),
      "cannot start the HTTP server: listen EADDRINUSE: address already in use 127.0.0.1:8080"
    )
  })

  it("says unknown when the serve error carries no reason", () => {
    assert.strictEqual(
      describeStartupFailure(Cause.fail(new ServeError({ cause: undefined }))),
      "cannot start the HTTP server: unknown"
    )
  })

  it("names the listen error of a runner port already in use", () => {
    const cause = Object.assign(new Error("listen EADDRINUSE: address already in use 127.0.0.1:34431"), {
      code: "EADDRINUSE"
    })
    const error = new SocketServerError({ reason: new SocketServerOpenError({ cause }) })
    assert.strictEqual(error.reason.message, "Open")
    assert.strictEqual(
      describeStartupFailure(Cause.fail(error)),
      "cannot open the cluster runner's socket (BOSUN_RUNNER_PORT): listen EADDRINUSE: address already in use 127.0.0.1:34431"
    )
  })
})

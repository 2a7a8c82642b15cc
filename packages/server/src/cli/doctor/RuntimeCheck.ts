/**
 * `bosun doctor`, the agent-runtime check: with `BOSUN_RUNTIME_URL`, the runtime's health through
 * the runtime client (no connection retries), its protocol version under the rule every sandbox
 * provider applies (`isCompatibleRuntimeProtocol`: same major), and the token, by asking for the
 * result of a run that does not exist (404 with the token accepted, 401 without; it starts
 * nothing). Without it the server launches the embedded runtime from its own code, which always
 * matches, so there is nothing to check.
 */
import { RuntimeClient, type RuntimeError } from "@bosun/actors/runtime/RuntimeClient"
import { isCompatibleRuntimeProtocol, RUNTIME_PROTOCOL_VERSION } from "@bosun/domain"
import { Effect, Option, type Redacted } from "effect"
import type { AppSettings } from "../../platform/config/AppConfig.ts"
import {
  CheckFailed,
  type CheckResult,
  connectionProblem,
  displayUrl,
  PROBE_TIMEOUT,
  runCheck,
  skipped
} from "./CheckResult.ts"

export const RUNTIME = "Agent runtime"

/** An attempt id no control plane uses (ids are `runId:attempt`): asking for it only proves the token. */
const PROBE_ATTEMPT = "bosun-doctor-probe"

const unreachable = (shown: string) => (error: RuntimeError) => {
  const code = /could not be reached \(([^)]+)\)/.exec(error.message)?.[1]
  if (error.status === null && code !== undefined) {
    return new CheckFailed({
      message: `cannot reach ${shown}: ${connectionProblem(code) ?? code}`,
      fix: "start the runtime there (infra/runtime.Dockerfile, or `npm run runtime`), or correct BOSUN_RUNTIME_URL"
    })
  }
  return new CheckFailed({
    message: `${shown} answered GET /healthz with ${error.status === null ? "something that is not a Bosun runtime's health" : `HTTP ${error.status}`}`,
    fix: "point BOSUN_RUNTIME_URL at the Bosun runtime itself, and read the runtime's log"
  })
}

const probe = Effect.fn("Doctor.runtime")(function* (external: {
  readonly url: URL
  readonly token: Redacted.Redacted<string>
}) {
  const shown = displayUrl(external.url)
  const connection = (yield* RuntimeClient).connect({ baseUrl: external.url, token: external.token }, { retryTimes: 0 })
  const health = yield* connection.health.pipe(Effect.mapError(unreachable(shown)))
  if (!isCompatibleRuntimeProtocol(health.protocol_version)) {
    return yield* new CheckFailed({
      message: `${shown} speaks runtime protocol ${health.protocol_version} and this Bosun speaks ${RUNTIME_PROTOCOL_VERSION}: the major versions differ, so every attempt would fail with sandbox_refused`,
      fix: "deploy the runtime built from this Bosun version (infra/runtime.Dockerfile); docs/upgrade.md says in which order"
    })
  }
  yield* connection.result(PROBE_ATTEMPT).pipe(
    Effect.asVoid,
    Effect.catchIf(
      (error) => error.reason === "NotFound",
      () => Effect.void
    ),
    Effect.mapError((error) =>
      error.reason === "Unauthorized"
        ? new CheckFailed({
            message: `${shown} refused BOSUN_RUNTIME_TOKEN (HTTP ${error.status})`,
            fix: "set BOSUN_RUNTIME_TOKEN to the token the runtime was started with"
          })
        : new CheckFailed({
            message: `${shown} answered a protocol request with ${error.message}`,
            fix: "read the runtime's log; check that its version matches this Bosun"
          })
    )
  )
  return `${shown} answers with protocol ${health.protocol_version} (this Bosun speaks ${RUNTIME_PROTOCOL_VERSION}) and accepts the token; ${health.active_runs} of ${health.max_runs} runs active`
})

/** The runtime line: skipped for the embedded runtime, else the probe within `PROBE_TIMEOUT`. */
export const checkRuntime = (settings: AppSettings): Effect.Effect<CheckResult, never, RuntimeClient> =>
  Option.match(settings.runtime.external, {
    onNone: () =>
      Effect.succeed(
        skipped(
          RUNTIME,
          "no external runtime configured (BOSUN_RUNTIME_URL unset): the server launches the embedded one from its own code, which always speaks its protocol"
        )
      ),
    onSome: (external) =>
      runCheck(RUNTIME, probe(external), {
        timeout: PROBE_TIMEOUT,
        onTimeout: "check BOSUN_RUNTIME_URL and that no firewall drops the connection"
      })
  })

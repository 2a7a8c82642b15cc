/**
 * One line for whatever stopped start-up. Configuration errors name the variable and what is
 * expected of it (never its value, which may be a secret); known start-up errors carry their
 * own message; anything else is reported by its first line only.
 */
import { Cause, Config } from "effect"
import { issueLines } from "../http/SchemaIssues.ts"

const describeConfigError = (error: Config.ConfigError): string => {
  const cause = error.cause
  if (cause._tag === "SchemaError") {
    const lines = issueLines(cause.issue)
    return `invalid configuration: ${lines.map((l) => `${l.path.join(".") || "(root)"}: ${l.message}`).join("; ")}`
  }
  return `invalid configuration: ${cause.message}`
}

/** Multi-line tool output folded onto one line, its tail kept (where the reason is). */
const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " | ").slice(-600)

const firstLine = (text: string) => text.split("\n")[0] ?? text

/**
 * A ServeError or a SocketServerError carries its reason (e.g. `listen EADDRINUSE …`) in its
 * cause, not its message.
 */
const serveReason = (error: object): string => {
  const cause = "cause" in error ? error.cause : undefined
  if (cause instanceof Error && cause.message !== "") return cause.message
  return "message" in error && typeof error.message === "string" && error.message !== "" ? error.message : "unknown"
}

export const describeStartupFailure = (cause: Cause.Cause<unknown>): string => {
  const failure = cause.reasons.find(Cause.isFailReason)
  const error: unknown = failure ? failure.error : cause.reasons.find(Cause.isDieReason)?.defect
  if (error instanceof Config.ConfigError) return describeConfigError(error)
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const tagged = error as { readonly _tag: string; readonly message?: unknown; readonly reason?: unknown }
    if (tagged._tag === "ServeError") return `cannot start the HTTP server: ${firstLine(serveReason(error))}`
    // The cluster's runner socket (BOSUN_RUNNER_PORT): its own message is only "Open".
    if (tagged._tag === "SocketServerError") {
      return `cannot open the cluster runner's socket (BOSUN_RUNNER_PORT): ${firstLine(serveReason(error))}`
    }
    if (tagged._tag === "EmbeddedPostgresError") return `embedded Postgres: ${oneLine(String(tagged.message))}`
    if (tagged._tag === "SqlError") return `database: ${firstLine(String(tagged.message))}`
    if (typeof tagged.message === "string") return firstLine(tagged.message)
  }
  if (error instanceof Error) return firstLine(error.message)
  return firstLine(Cause.pretty(cause))
}

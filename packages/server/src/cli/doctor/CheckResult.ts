/**
 * What one `bosun doctor` check found, and the line it prints: `ok`, `FAIL` with what is wrong and
 * what to do about it, or `skipped` with why; the timeout every check runs under. Also what every
 * check's wording needs: a URL shown without its password, and the root cause of a library's error
 * (its code and first line), so a line says "connection refused", not a wrapper's "Failed to connect".
 */
import { Data, Duration, Effect } from "effect"

/** How long a probe of another service (Redis, S3, GitHub, the runtime) may take. */
export const PROBE_TIMEOUT = Duration.seconds(5)

export type CheckStatus = "ok" | "FAIL" | "skipped"

export interface CheckResult {
  readonly name: string
  readonly status: CheckStatus
  /** Plain words: what was found (ok), what is wrong (FAIL), or why it was not checked (skipped). */
  readonly message: string
  /** What to do about a failure. */
  readonly fix?: string | undefined
}

/** A check found something wrong; `message` and `fix` are printed as they are. */
export class CheckFailed extends Data.TaggedError("CheckFailed")<{
  readonly message: string
  readonly fix: string
}> {}

export const ok = (name: string, message: string): CheckResult => ({ name, status: "ok", message })

export const skipped = (name: string, message: string): CheckResult => ({ name, status: "skipped", message })

export const failed = (name: string, error: CheckFailed): CheckResult => ({
  name,
  status: "FAIL",
  message: error.message,
  fix: error.fix
})

/**
 * Runs a check bounded by `timeout`: its success message is an `ok` line, `CheckFailed` a `FAIL`
 * line, running out of time a `FAIL` that says so (nothing a check does is retried past it), and
 * a defect a `FAIL` with its first line.
 */
export const runCheck = <R>(
  name: string,
  check: Effect.Effect<string, CheckFailed, R>,
  options: { readonly timeout: Duration.Duration; readonly onTimeout: string }
): Effect.Effect<CheckResult, never, R> =>
  check.pipe(
    Effect.timeoutOrElse({
      duration: options.timeout,
      orElse: () =>
        Effect.fail(
          new CheckFailed({
            message: `no answer within ${seconds(options.timeout)}`,
            fix: options.onTimeout
          })
        )
    }),
    Effect.map((message) => ok(name, message)),
    Effect.catchTag("CheckFailed", (error) => Effect.succeed(failed(name, error))),
    Effect.catchDefect((defect) =>
      Effect.succeed(
        failed(
          name,
          new CheckFailed({
            message: `the check itself failed: ${firstLine(describeCause(defect))}`,
            fix: "report this as a Bosun bug, with this line"
          })
        )
      )
    )
  )

/** `5 seconds`: how a timeout reads in a line. */
export const seconds = (duration: Duration.Duration) => {
  const n = Duration.toSeconds(duration)
  return `${n} second${n === 1 ? "" : "s"}`
}

const firstLine = (text: string) => text.split("\n")[0] ?? text

/** The deepest error under `error` (following `cause` and sql's `reason`): where a library's wrappers start. */
export const rootCause = (error: unknown): unknown => {
  let current = error
  for (let depth = 0; depth < 10; depth++) {
    if (typeof current !== "object" || current === null) return current
    const next =
      "cause" in current && current.cause !== undefined
        ? current.cause
        : "reason" in current && typeof current.reason === "object"
          ? current.reason
          : undefined
    if (next === undefined) return current
    current = next
  }
  return current
}

/** The `code` of the root cause (`ECONNREFUSED`, a Postgres SQLSTATE such as `28P01`), if any. */
export const rootCode = (error: unknown): string | undefined => {
  const root = rootCause(error)
  return typeof root === "object" && root !== null && "code" in root && typeof root.code === "string"
    ? root.code
    : undefined
}

/** The root cause's message, on one line. */
export const describeCause = (error: unknown): string => {
  const root = rootCause(error)
  const text = root instanceof Error ? root.message : String(root)
  return firstLine(text)
}

/** A connection failure in plain words, by its code; undefined for codes that are not about the connection. */
export const connectionProblem = (code: string | undefined): string | undefined => {
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused: nothing listens there"
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "the host name does not resolve"
    case "ETIMEDOUT":
    case "ECONNRESET":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return `the network did not carry the connection (${code})`
    default:
      return undefined
  }
}

/**
 * Query parameters a client takes a secret from: `?password=` (node-postgres, ioredis),
 * `sslpassword`, tokens and keys. Their values are as secret as the URL's password.
 */
export const isSecretParameter = (name: string) => /pass|secret|token|key/i.test(name)

/** A URL as it may be printed: its password and the values of secret query parameters replaced by `***`. */
export const displayUrl = (url: string | URL): string => {
  const parsed = typeof url === "string" ? URL.parse(url) : url
  if (parsed === null) return "(an unparseable URL)"
  const copy = new URL(parsed.href)
  if (copy.password !== "") copy.password = "***"
  for (const name of new Set(copy.searchParams.keys())) {
    if (isSecretParameter(name)) copy.searchParams.set(name, "***")
  }
  return copy.href
}

/** The printed line of a result. */
export const renderLine = (result: CheckResult): string =>
  `${result.status.padEnd(7)} ${result.name}: ${result.message}${result.fix === undefined ? "" : `. Fix: ${result.fix}`}`

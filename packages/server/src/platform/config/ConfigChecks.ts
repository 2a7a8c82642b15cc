/**
 * Checks shared by the start-up configuration modules (`AppConfig`, `SandboxConfig`): each fails
 * with a `ConfigError` whose message names the variable and says what is expected — never a
 * value that may be a secret.
 */
import { isCredentialedUrl } from "@bosun/domain"
import { Config, ConfigProvider, Effect } from "effect"

/** A configuration error naming the variable; `StartupFailure` prints it as one line. */
export const configProblem = (message: string) => new Config.ConfigError(new ConfigProvider.SourceError({ message }))

/**
 * An outside API that receives a credential: https, or plain http only on a loopback host (a
 * local stand-in). Refusing anything else here makes it one line at start-up instead of a key
 * sent in the clear on every request.
 */
export const credentialedUrl = (name: string) => (url: URL) =>
  isCredentialedUrl(url)
    ? Effect.succeed(url)
    : Effect.fail(configProblem(`${name}: must be an https:// URL (plain http:// only on a loopback host)`))

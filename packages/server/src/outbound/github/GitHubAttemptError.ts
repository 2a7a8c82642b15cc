/**
 * A GitHub failure as a step's failure: a code naming what GitHub said, its own message and
 * status, and whether another attempt may succeed (GitHub unreachable, failing or rate limiting:
 * yes; refusing, not finding, not installed: no, the step fails at once).
 */
import { AttemptError } from "@bosun/actors/attempt/AttemptPorts"
import { type GitHubAppError, retryableGithubError } from "./GitHubClient.ts"

const CODE: Record<GitHubAppError["reason"], string> = {
  NotConfigured: "github_not_configured",
  NotInstalled: "github_not_installed",
  NotFound: "github_not_found",
  Refused: "github_refused",
  RateLimited: "github_rate_limited",
  Unavailable: "github_unavailable"
}

export const githubAttemptError = (error: GitHubAppError) =>
  new AttemptError({
    code: CODE[error.reason],
    message: error.message,
    retryable: retryableGithubError(error),
    provider: "github",
    status: error.status
  })

/**
 * What a pull request is told when its review failed for good: one check run whose title names the
 * failure and whose summary says exactly what failed — the step, the error's code and message, the
 * model provider and, when the provider answered with one, its HTTP status — never a generic
 * "something went wrong". The dashboard shows the same code and message on the run. It also names
 * the run's one "Bosun review" check run and builds the `github.check_run` row of each of its
 * states.
 */
import type { FailureReport } from "@bosun/actors/attempt/AttemptPorts"
import type { CheckRun } from "../../outbound/github/GithubEffects.ts"

export const REVIEW_CHECK_NAME = "Bosun review"

/**
 * The external id of a run's check run: one check run per run, created `in_progress` when the
 * review starts and moved to its conclusion.
 */
export const reviewCheckId = (runId: string) => `bosun-review:${runId}`

/** The run's check run in one state, as the `github.check_run` row that moves it there. */
export const reviewCheckRun = (
  target: {
    readonly organizationId: string
    readonly owner: string
    readonly name: string
    readonly headSha: string
    readonly runId: string
  },
  /** Names the state's row: its idempotency key is `github.check_run:{key}`. */
  key: string,
  check: { readonly conclusion?: CheckRun["conclusion"]; readonly title: string; readonly summary: string }
): CheckRun => ({
  organization_id: target.organizationId,
  owner: target.owner,
  name: target.name,
  head_sha: target.headSha,
  idempotency_key: `github.check_run:${key}`,
  external_id: reviewCheckId(target.runId),
  check_name: REVIEW_CHECK_NAME,
  ...(check.conclusion === undefined ? {} : { conclusion: check.conclusion }),
  title: check.title,
  summary: check.summary
})

/** The HTTP status a provider's error message carries (`APIError (HTTP 429): ...`), if any. */
export const httpStatusOf = (message: string): number | null => {
  const found = /\bHTTP (\d{3})\b/.exec(message) ?? /\bstatus(?: code)?:? (\d{3})\b/i.exec(message)
  return found?.[1] === undefined ? null : Number(found[1])
}

const STEP_WORDS: Readonly<Record<FailureReport["step"], string>> = {
  prepare: "preparing the review (reading the pull request, the policy and the agent connection)",
  "acquire-sandbox": "acquiring a sandbox",
  execute: "running the agent",
  publish: "publishing the review",
  "finish-attempt": "recording the attempt",
  "release-sandbox": "releasing the sandbox",
  "notify-scheduler": "notifying the scheduler"
}

export const failureCheck = (
  report: FailureReport,
  appSlug: string
): { readonly title: string; readonly summary: string } => {
  const status = httpStatusOf(report.error.message)
  const agent =
    report.provider === null
      ? "not chosen yet"
      : `${report.provider}${report.model === null ? "" : ` (model ${report.model})`}`
  const attempts = report.attempts === 1 ? "1 attempt" : `${report.attempts} attempts`
  return {
    title: `Review failed while ${STEP_WORDS[report.step].split(" (")[0]}: ${report.error.code}${status === null ? "" : ` (HTTP ${status})`}`,
    summary: [
      `Bosun could not review this commit: it failed at the **${report.step}** step, ${STEP_WORDS[report.step]}, after ${attempts}.`,
      "",
      `- Error: \`${report.error.code}\` — ${report.error.message}`,
      `- Agent: ${agent}`,
      ...(status === null ? [] : [`- Provider HTTP status: ${status}`]),
      `- Run: \`${report.run.runId}\``,
      "",
      `Push again or comment \`@${appSlug} review\` to retry.`
    ].join("\n")
  }
}

/**
 * The check run of a review the agent made but GitHub would not take: what GitHub said, in its
 * own words, and how to post it again.
 */
export const deliveryFailureCheck = (input: {
  readonly runId: string
  readonly error: { readonly reason: string; readonly message: string; readonly status?: number | undefined }
}): { readonly title: string; readonly summary: string } => {
  const status = input.error.status
  return {
    title: `Review failed while publishing the review: GitHub ${input.error.reason === "Unavailable" ? "unavailable" : "refused it"}${status === undefined || status === 200 ? "" : ` (HTTP ${status})`}`,
    summary: [
      "Bosun reviewed this commit but could not post the review: it failed at the **publish** step, posting the review to GitHub.",
      "",
      `- Error: ${input.error.message}`,
      ...(status === undefined ? [] : [`- GitHub HTTP status: ${status}`]),
      `- Run: \`${input.runId}\``,
      "",
      "The agent's review is kept: an operator posts it with `bosun queues dead-letters replay --queue bosun-effects` once GitHub accepts it; the agent does not run again."
    ].join("\n")
  }
}

/** The check run while the review runs. */
export const inProgressCheck = (headSha: string) => ({
  title: "Reviewing",
  summary: `Bosun is reviewing \`${headSha.slice(0, 12)}\`.`
})

/** The check run of a review a newer push replaced before it was posted. */
export const supersededCheck = (headSha: string, newHeadSha: string) => ({
  title: "Superseded by a newer push",
  summary: `Not posted: \`${newHeadSha.slice(0, 12)}\` replaced \`${headSha.slice(0, 12)}\` as the pull request's head while this review ran; the review of the new head replaces this one.`
})

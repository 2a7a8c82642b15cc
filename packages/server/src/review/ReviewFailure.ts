/**
 * What a pull request is told when its review failed for good (issue 8, "Honest failure"): one
 * check run whose title names the failure and whose summary says exactly what failed — the step,
 * the error's code and message, the model provider and, when the provider answered with one, its
 * HTTP status — never a generic "something went wrong". The dashboard shows the same code and
 * message on the run.
 */
import type { FailureReport } from "@bosun/actors/attempt/AttemptPorts"

export const REVIEW_CHECK_NAME = "Bosun review"

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
  const provider =
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
      `- Model provider: ${provider}`,
      ...(status === null ? [] : [`- Provider HTTP status: ${status}`]),
      `- Run: \`${report.run.runId}\``,
      "",
      `Push again or comment \`@${appSlug} review\` to retry.`
    ].join("\n")
  }
}

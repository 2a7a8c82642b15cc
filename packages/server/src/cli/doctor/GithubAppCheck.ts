/**
 * `bosun doctor`, the GitHub App check: for every App registered in the database, a JWT round
 * trip — the App's sealed private key signs a JWT (`GitHubApp`, as for every installation token)
 * and `GET /app` at `BOSUN_GITHUB_API_URL` must accept it. One line per App, named by its App id
 * and organization, so a rejected key points at the organization whose App to set again.
 */
import { Duration, Effect, Option } from "effect"
import { GitHubApp } from "../../outbound/github/GitHubApp.ts"
import type { GitHubAppError } from "../../outbound/github/GitHubClient.ts"
import { type GithubAppSummary, GithubAppsRepo } from "../../outbound/github/GithubAppsRepo.ts"
import { CheckFailed, type CheckResult, failed, PROBE_TIMEOUT, runCheck, skipped } from "./CheckResult.ts"
import { presentTables } from "./DatabaseCheck.ts"

export const GITHUB_APPS = "GitHub Apps"

const setAgain = (organizationId: string) => `PUT /api/v1/organizations/${organizationId}/github-app`

const explain = (app: GithubAppSummary, apiUrl: string) => (error: GitHubAppError) => {
  if (error.reason === "NotConfigured") {
    return new CheckFailed({
      message: "its stored private key cannot sign a JWT (it is not an RSA private key in PEM)",
      fix: `set the App again with the .pem GitHub generated for it: ${setAgain(app.organizationId)}`
    })
  }
  if (error.status === 401) {
    return new CheckFailed({
      message: `GitHub refused the App's JWT (401): the stored private key is not App ${app.githubAppId}'s, or it was revoked`,
      fix: `generate a private key in the App's settings on GitHub and set it with ${setAgain(app.organizationId)}; also check this machine's clock (a JWT is valid for minutes)`
    })
  }
  if (error.status === 404) {
    return new CheckFailed({
      message: `${apiUrl} does not know App ${app.githubAppId} (404)`,
      fix: "check BOSUN_GITHUB_API_URL (GitHub Enterprise Server: https://HOST/api/v3) and the App id set for the organization"
    })
  }
  if (error.status === undefined) {
    return new CheckFailed({
      message: `${error.message} at ${apiUrl}`,
      fix: "check BOSUN_GITHUB_API_URL and that this machine reaches it (proxy, firewall, DNS)"
    })
  }
  return new CheckFailed({
    message: `${error.message} at ${apiUrl}`,
    fix: "retry later; GitHub (or the GitHub Enterprise server) is failing"
  })
}

const roundTrip = Effect.fn("Doctor.githubApp")(function* (app: GithubAppSummary, apiUrl: string) {
  const repo = yield* GithubAppsRepo
  const github = yield* GitHubApp
  // Opening first tells "the key ring lost these credentials" apart from "GitHub refused the key".
  yield* repo.find(app.organizationId).pipe(
    Effect.mapError(
      (error) =>
        new CheckFailed({
          message: `its sealed credentials do not open: ${error.message}`,
          fix: "restore the key they were sealed under (see the Key ring line), or set the App again with its credentials"
        })
    )
  )
  const answer = yield* github.app(app.organizationId).pipe(Effect.mapError(explain(app, apiUrl)))
  return `GitHub accepted the App's JWT: GET /app answered as ${answer.slug} (App ${answer.id})`
})

/** One line per registered App (or a skipped line when there is none), each within `PROBE_TIMEOUT`. */
export const checkGithubApps = Effect.fn("Doctor.githubApps")(function* (apiUrl: URL) {
  // The listing is bounded like every other check: a query queued behind a lock (a migration's
  // ALTER TABLE waiting on a long transaction) must be a FAIL line, not a doctor that never prints.
  const listed = yield* Effect.gen(function* () {
    if (!(yield* presentTables(["github_apps"])).has("github_apps")) return Option.none()
    return Option.some(yield* (yield* GithubAppsRepo).summaries)
  }).pipe(Effect.timeoutOption(PROBE_TIMEOUT))
  if (Option.isNone(listed)) {
    return [
      failed(
        GITHUB_APPS,
        new CheckFailed({
          message: `the registered Apps could not be listed within ${Duration.toSeconds(PROBE_TIMEOUT)} s`,
          fix: "the database answers too slowly: check its load and locks (pg_stat_activity)"
        })
      )
    ] satisfies ReadonlyArray<CheckResult>
  }
  if (Option.isNone(listed.value)) {
    return [
      skipped(GITHUB_APPS, "the github_apps table does not exist yet (see the Migrations line)")
    ] satisfies ReadonlyArray<CheckResult>
  }
  const apps = listed.value.value
  if (apps.length === 0) {
    return [
      skipped(
        GITHUB_APPS,
        "none registered yet (PUT /api/v1/organizations/{organization_id}/github-app registers an organization's App)"
      )
    ] satisfies ReadonlyArray<CheckResult>
  }
  const shown = apiUrl.href.replace(/\/$/, "")
  return yield* Effect.forEach(
    apps,
    (app) =>
      runCheck(`GitHub App ${app.githubAppId} of organization ${app.organizationId}`, roundTrip(app, shown), {
        timeout: PROBE_TIMEOUT,
        onTimeout: `check that ${shown} (BOSUN_GITHUB_API_URL) is reachable from this machine`
      }),
    { concurrency: 4 }
  )
})

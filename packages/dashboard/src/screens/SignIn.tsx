/**
 * Sign-in (docs/interface.md: Authentication 1): GitHub's OAuth web flow through the organization's
 * GitHub App. Before offering the button it asks the login endpoint whether an App is configured at
 * all (503 `github_app_unconfigured`), so a first run shows what the operator must do instead of a
 * button that fails. The probe follows no redirect: a configured App answers 302 to GitHub.
 */
import { useEffect, useState } from "react"
import { failureOfResponse, noAnswer } from "../api/failure.ts"
import { SETUP_STEP_IDS, SetupSteps } from "../setup/SetupSteps.tsx"

/** Before anyone can sign in no step is done, and the first is what this section explains. */
const FIRST_RUN_STEPS = SETUP_STEP_IDS.map((id) => ({
  id,
  done: false,
  detail: id === "github_app" ? "the steps above" : ""
}))

type Probe =
  | { readonly status: "checking" }
  | { readonly status: "ready" }
  | { readonly status: "unconfigured" | "several" | "failed"; readonly message: string }

const LOGIN = "/api/v1/auth/github/login"

const probe = async (organization: string | null): Promise<Probe> => {
  const url = organization === null ? LOGIN : `${LOGIN}?organization_id=${encodeURIComponent(organization)}`
  const response = await fetch(url, { redirect: "manual" })
  if (response.type === "opaqueredirect" || response.status === 302) return { status: "ready" }
  const error = failureOfResponse(response.status, await response.json().catch(() => null))
  if (error.code === "github_app_unconfigured") return { status: "unconfigured", message: error.message }
  if (error.code === "organization_required") return { status: "several", message: error.message }
  return { status: "failed", message: error.message }
}

export const SignIn = () => {
  const [organization, setOrganization] = useState("")
  const [state, setState] = useState<Probe>({ status: "checking" })
  const chosen = organization.trim() === "" ? null : organization.trim()

  useEffect(() => {
    let live = true
    probe(chosen).then(
      (found) => live && setState(found),
      () => live && setState({ status: "failed", message: noAnswer().message })
    )
    return () => {
      live = false
    }
  }, [chosen])

  const loginUrl = chosen === null ? LOGIN : `${LOGIN}?organization_id=${encodeURIComponent(chosen)}`
  return (
    <main className="sign-in">
      <h1>Bosun</h1>
      {state.status === "checking" ? (
        <p className="progress" aria-busy="true">
          Checking how to sign in…
        </p>
      ) : null}
      {state.status === "ready" ? (
        <a className="button primary" href={loginUrl}>
          Sign in with GitHub
        </a>
      ) : null}
      {state.status === "several" ? (
        <>
          <p>Several organizations have a GitHub App. Name yours to sign in through its App.</p>
          <label>
            Organization id <input value={organization} onChange={(event) => setOrganization(event.target.value)} />
          </label>
        </>
      ) : null}
      {state.status === "failed" ? (
        <p className="error" role="alert">
          {state.message}
        </p>
      ) : null}
      {state.status === "unconfigured" ? (
        <section className="first-run">
          <h2>First run: connect a GitHub App</h2>
          <p>{state.message}.</p>
          <ol>
            <li>
              Create a GitHub App for your organization with the callback URL{" "}
              <code>{`${window.location.origin}/api/v1/auth/github/callback`}</code> and the webhook URL{" "}
              <code>{`${window.location.origin}/api/v1/github/webhooks`}</code>.
            </li>
            <li>
              Give Bosun its credentials with the bootstrap token:{" "}
              <code>
                PUT /api/v1/organizations/&lt;organization&gt;/github-app {"{"}client_id, client_secret, github_app_id,
                github_app_slug, private_key, webhook_secret{"}"}
              </code>
              .
            </li>
            <li>
              Until then an operator can open a session from the server's shell:{" "}
              <code>npm run bosun -- sessions create --org &lt;organization&gt; --login &lt;you&gt; --role ADMIN</code>{" "}
              prints the <code>bosun_session</code> cookie to set for this site.
            </li>
          </ol>
          <h3>Getting started</h3>
          <p>
            The whole way to a first review. Once you are signed in, Organization settings shows this checklist with
            each step turning green as it is done.
          </p>
          <SetupSteps steps={FIRST_RUN_STEPS} />
        </section>
      ) : null}
    </main>
  )
}

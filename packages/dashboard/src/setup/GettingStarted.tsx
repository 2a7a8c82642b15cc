/**
 * The organization's Getting started checklist (`GET .../setup`): shown until every step is
 * done, each step green once it is, with a link to where the next ones are done. `version`
 * reloads it after an action on the page that may have completed a step.
 */
import type { SetupStepId } from "@bosun/domain"
import { call } from "../api/client.ts"
import { useLoad } from "../api/useLoad.ts"
import { orgPath } from "../routes.ts"
import { ErrorNote, Link } from "../ui.tsx"
import { SetupSteps } from "./SetupSteps.tsx"

const whereIn = (org: string) => (id: SetupStepId) => {
  switch (id) {
    case "github_app":
      return <span className="muted">(an operator does this once for the instance)</span>
    case "app_installed":
      return <span className="muted">(on GitHub, by an owner of the organization)</span>
    case "agent_credentials":
    case "test_turn":
      return <Link href={orgPath(org, "agent")}>Agent connection</Link>
    case "model_chosen":
      return <Link href={orgPath(org, "settings")}>Organization settings</Link>
  }
}

export const GettingStarted = (props: { readonly org: string; readonly version?: number }) => {
  const [loaded] = useLoad(
    () => call((client) => client.agentConnection.setup({ params: { organization_id: props.org } })),
    [props.org, props.version ?? 0]
  )
  const checklist = loaded.data?.data
  if (checklist?.complete === true) return null
  return (
    <section className="getting-started card" aria-labelledby="getting-started-title">
      <h2 id="getting-started-title">Getting started</h2>
      {loaded.status === "failed" ? <ErrorNote message={`The checklist could not be loaded: ${loaded.error}`} /> : null}
      {checklist === undefined ? null : (
        <>
          <p className="muted">
            {checklist.steps.filter((step) => step.done).length} of {checklist.steps.length} done. This list goes away
            once every step is.
          </p>
          <SetupSteps steps={checklist.steps} where={whereIn(props.org)} />
        </>
      )}
    </section>
  )
}

/**
 * The dashboard's shell (docs/interface.md: What the service does 2): who is signed in (`GET /me`),
 * the organization switcher over their memberships, the navigation, and the screen the path
 * names. Only the pull-request list is in the first bundle; every other screen loads on demand.
 * A path naming an organization the user is not a member of shows nothing of it: the API would
 * answer 404 anyway, and the shell does not even ask.
 */
import { type Role, roleAtLeast } from "@bosun/domain/Identity"
import { lazy, Suspense, useEffect } from "react"
import { call, isUnauthorized, preloadClient } from "./api/client.ts"
import { earlyMe } from "./api/earlyAnswers.ts"
import { useLoad } from "./api/useLoad.ts"
import { homeOrganization } from "./firstScreen.ts"
import { navigate, orgPath, parseRoute, type Route } from "./routes.ts"
import { PullRequests } from "./screens/PullRequests.tsx"
import { SignIn } from "./screens/SignIn.tsx"
import { Empty, ErrorNote, Link } from "./ui.tsx"
import { useLocation } from "./useLocation.ts"

const Runs = lazy(() => import("./screens/Runs.tsx"))
const RunDetail = lazy(() => import("./screens/RunDetail.tsx"))
const Repositories = lazy(() => import("./screens/Repositories.tsx"))
const RepositoryDetail = lazy(() => import("./screens/RepositoryDetail.tsx"))
const AgentConnection = lazy(() => import("./screens/AgentConnection.tsx"))
const Memories = lazy(() => import("./screens/Memories.tsx"))
const WorkItems = lazy(() => import("./screens/WorkItems.tsx"))
const WorkItemDetail = lazy(() => import("./screens/WorkItemDetail.tsx"))
const DeepScans = lazy(() => import("./screens/DeepScans.tsx"))
const DeepScanDetail = lazy(() => import("./screens/DeepScanDetail.tsx"))
const SlackChannels = lazy(() => import("./screens/SlackChannels.tsx"))
const ConnectedApps = lazy(() => import("./screens/ConnectedApps.tsx"))
const OrganizationSettings = lazy(() => import("./screens/OrganizationSettings.tsx"))

const sections = [
  ["pull-requests", "Pull requests"],
  ["runs", "Runs"],
  ["repositories", "Repositories"],
  ["work-items", "Work items"],
  ["deep-scans", "Deep scans"],
  ["memories", "Memories"],
  ["agent", "Agent connection"],
  ["slack", "Slack channels"],
  ["apps", "Connected apps"],
  ["settings", "Organization settings"]
] as const

const Screen = (props: { readonly route: Route; readonly search: string; readonly role: Role }) => {
  const { route } = props
  // What the caller may change: screens show writes only to those the API lets make them.
  const admin = roleAtLeast(props.role, "ADMIN")
  switch (route.screen) {
    case "home":
    case "notFound":
      return <Empty>This page does not exist. Pick a section above.</Empty>
    case "pullRequests":
      return <PullRequests org={route.org} search={props.search} />
    case "runs":
      return <Runs org={route.org} search={props.search} />
    case "run":
      return <RunDetail org={route.org} id={route.id} />
    case "repositories":
      return <Repositories org={route.org} />
    case "repository":
      return <RepositoryDetail org={route.org} id={route.id} admin={admin} />
    case "agent":
      return <AgentConnection org={route.org} admin={admin} />
    case "memories":
      return <Memories org={route.org} />
    case "workItems":
      return <WorkItems org={route.org} />
    case "workItem":
      return <WorkItemDetail org={route.org} id={route.id} />
    case "deepScans":
      return <DeepScans org={route.org} />
    case "deepScan":
      return <DeepScanDetail org={route.org} id={route.id} />
    case "slack":
      return <SlackChannels org={route.org} />
    case "apps":
      return <ConnectedApps org={route.org} />
    case "settings":
      return <OrganizationSettings org={route.org} admin={admin} />
  }
}

const sectionOf = (pathname: string) => pathname.split("/")[3] ?? "pull-requests"

export const App = () => {
  const location = useLocation()
  const [me] = useLoad(() => earlyMe() ?? call((client) => client.identity.me()), [])
  const memberships = me.status === "ready" ? me.data.data.organizations : []
  const home = homeOrganization(memberships)
  const parsed = parseRoute(location.pathname)
  // `/` shows the first organization's pull requests at once and only the address changes (no
  // history entry, no second render): the list is the first screen's budget (README).
  const route: Route = parsed.screen === "home" && home !== undefined ? { screen: "pullRequests", org: home } : parsed

  // The client and the whole contract are not in the first bundle: fetch them once it is up.
  useEffect(() => {
    if (me.status !== "loading") preloadClient()
  }, [me.status])

  useEffect(() => {
    if (parsed.screen === "home" && home !== undefined) {
      window.history.replaceState(null, "", orgPath(home, "pull-requests"))
    }
  }, [parsed.screen, home])

  if (me.status === "loading") {
    return (
      <p className="progress" aria-busy="true">
        Loading…
      </p>
    )
  }
  if (me.status === "failed") {
    return isUnauthorized(me.cause) ? <SignIn /> : <ErrorNote message={me.error} />
  }
  const user = me.data.data
  const org = "org" in route ? route.org : home
  const membership = memberships.find((candidate) => candidate.id === org)
  const section = sectionOf(location.pathname)

  return (
    <div className="shell">
      <header>
        <strong className="brand">Bosun</strong>
        <label className="switcher">
          <span className="visually-hidden">Organization</span>
          <select
            value={membership?.id ?? ""}
            onChange={(event) => navigate(orgPath(event.target.value, section))}
            aria-label="Organization"
          >
            {membership === undefined ? <option value="">Choose an organization</option> : null}
            {memberships.map((candidate) => (
              <option key={candidate.id} value={candidate.id}>
                {candidate.name} ({candidate.role})
              </option>
            ))}
          </select>
        </label>
        <span className="who">{user.user.login}</span>
        <button
          type="button"
          className="plain"
          onClick={() => void call((client) => client.identity.logout()).finally(() => window.location.assign("/"))}
        >
          Sign out
        </button>
      </header>
      {membership === undefined ? (
        <main>
          <Empty>
            {memberships.length === 0
              ? "You are not a member of any organization yet. Ask an admin to install the GitHub App on your organization, then sign in again."
              : "You are not a member of this organization. Choose one of yours above."}
          </Empty>
        </main>
      ) : (
        <>
          <nav aria-label="Sections">
            {sections.map(([path, label]) => (
              <Link key={path} href={orgPath(membership.id, path)} className={path === section ? "current" : undefined}>
                {label}
              </Link>
            ))}
          </nav>
          <main>
            <Suspense
              fallback={
                <p className="progress" aria-busy="true">
                  Loading…
                </p>
              }
            >
              <Screen route={route} search={location.search} role={membership.role} />
            </Suspense>
          </main>
        </>
      )}
    </div>
  )
}

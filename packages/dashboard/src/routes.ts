/**
 * The dashboard's routes: paths the browser can bookmark and reload (the server answers every
 * non-API GET with the app), parsed here rather than by a router library to keep the first
 * screen small. Every organization screen lives under `/orgs/{organization_id}`.
 */
export type Route =
  | { readonly screen: "home" }
  | { readonly screen: "pullRequests"; readonly org: string }
  | { readonly screen: "runs"; readonly org: string }
  | { readonly screen: "run"; readonly org: string; readonly id: string }
  | { readonly screen: "repositories"; readonly org: string }
  | { readonly screen: "repository"; readonly org: string; readonly id: string }
  | { readonly screen: "agent"; readonly org: string }
  | { readonly screen: "memories"; readonly org: string }
  | { readonly screen: "workItems"; readonly org: string }
  | { readonly screen: "workItem"; readonly org: string; readonly id: string }
  | { readonly screen: "deepScans"; readonly org: string }
  | { readonly screen: "deepScan"; readonly org: string; readonly id: string }
  | { readonly screen: "slack"; readonly org: string }
  | { readonly screen: "apps"; readonly org: string }
  | { readonly screen: "settings"; readonly org: string }
  | { readonly screen: "notFound" }

const lists = {
  "pull-requests": "pullRequests",
  runs: "runs",
  repositories: "repositories",
  agent: "agent",
  memories: "memories",
  "work-items": "workItems",
  "deep-scans": "deepScans",
  slack: "slack",
  apps: "apps",
  settings: "settings"
} as const

const details = {
  runs: "run",
  repositories: "repository",
  "work-items": "workItem",
  "deep-scans": "deepScan"
} as const

export const parseRoute = (pathname: string): Route => {
  const parts = pathname
    .split("/")
    .filter((part) => part.length > 0)
    .map(decodeURIComponent)
  if (parts.length === 0) return { screen: "home" }
  const [root, org, section, id] = parts
  if (root !== "orgs" || org === undefined) return { screen: "notFound" }
  if (section === undefined) return { screen: "pullRequests", org }
  if (id === undefined && Object.hasOwn(lists, section)) return { screen: lists[section as keyof typeof lists], org }
  if (id !== undefined && parts.length === 4 && Object.hasOwn(details, section)) {
    return { screen: details[section as keyof typeof details], org, id }
  }
  return { screen: "notFound" }
}

export const orgPath = (org: string, ...rest: ReadonlyArray<string>) =>
  `/${["orgs", org, ...rest].map(encodeURIComponent).join("/")}`

export const navigate = (href: string) => {
  if (href === window.location.pathname + window.location.search) return
  window.history.pushState(null, "", href)
  window.dispatchEvent(new PopStateEvent("popstate"))
}

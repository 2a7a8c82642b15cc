/**
 * What the first screen lists, decided from the path and `/me` alone (budget: bench/README.md "Dashboard
 * budget"): the app's own redirect from `/` and `early.ts`, which asks for the list before the
 * app has loaded, both take it from here, so the early request is the one the app then makes.
 * Only an organization `/me` names is ever chosen: nothing is asked about another one.
 */
import { parseRoute } from "./routes.ts"

/** Rows per page of the pull-request list. */
export const PULL_REQUEST_PAGE_SIZE = 50

/** `GET /me`'s path, as `HttpApiClient` builds it from the contract. */
export const ME_PATH = "/api/v1/me"

/** The path of an organization's unfiltered first page of pull requests, as `HttpApiClient` builds it. */
export const firstListPath = (organization: string) =>
  `/api/v1/organizations/${encodeURIComponent(organization)}/pull-requests?page_size=${PULL_REQUEST_PAGE_SIZE}`

/** The organization `/` opens: the caller's first membership. */
export const homeOrganization = (organizations: ReadonlyArray<{ readonly id: string }>): string | undefined =>
  organizations[0]?.id

/**
 * The organization whose first page of pull requests (no filters, no cursor) the screen at this
 * location shows, when it shows one.
 */
export const firstListOrganization = (
  pathname: string,
  search: string,
  organizations: ReadonlyArray<{ readonly id: string }>
): string | undefined => {
  const route = parseRoute(pathname)
  if (route.screen === "home") return homeOrganization(organizations)
  if (route.screen !== "pullRequests" || search !== "") return undefined
  return organizations.some((organization) => organization.id === route.org) ? route.org : undefined
}

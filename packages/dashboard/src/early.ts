/**
 * The first screen's requests, run by a script `vite.config.ts` inlines into `index.html` so
 * that they travel while the app's JavaScript downloads, compiles and evaluates (budget: bench/README.md
 * "Dashboard budget"): `GET /me` at once, and as soon as it answers, the first page of the
 * pull-request list the first screen shows — for an organization `/me` names, never another.
 * The app reads these responses with the contract's Schemas (`api/earlyAnswers.ts`); this script
 * only reads which organizations to choose from, typed by the contract's encoded `/me`.
 */
import type { Me } from "@bosun/domain/Identity"
import { requestEarly } from "./api/earlyResponses.ts"
import { firstListOrganization, firstListPath, ME_PATH } from "./firstScreen.ts"

const { pathname, search } = window.location

requestEarly(ME_PATH)
  .then((response) => (response.ok ? (response.clone().json() as Promise<{ data: typeof Me.Encoded }>) : undefined))
  .then((body) => {
    const organization =
      body === undefined ? undefined : firstListOrganization(pathname, search, body.data.organizations)
    if (organization !== undefined) requestEarly(firstListPath(organization))
  })
  .catch(() => undefined)

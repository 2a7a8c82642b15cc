/**
 * The dashboard's one way to the API: `call` runs a request with the typed client
 * derived from the domain's `BosunApi` (`httpApiClient.ts`), and turns its failure into an
 * `ApiFailure` carrying the API's own `{error:{code,message}}`, which screens show as is.
 *
 * The client and the whole contract load with the first call, not with the first screen: the
 * first screen reads its two answers (`/me`, the first page of pull requests) with the
 * contract's Schemas alone (`earlyAnswers.ts`), and the shell preloads the client once that
 * screen is up (budget: bench/README.md "Dashboard budget").
 */
import type { Effect } from "effect"
import type { Client } from "./httpApiClient.ts"

export { ApiFailure, isNotFound, isUnauthorized, messageOf } from "./failure.ts"
export type { Client } from "./httpApiClient.ts"

const loadClient = () => import("./httpApiClient.ts")

/** Runs one API call; rejects with an `ApiFailure`. */
export const call = async <A, E>(request: (client: Client) => Effect.Effect<A, E>): Promise<A> =>
  (await loadClient()).run(request)

/**
 * Loads the client once the browser is idle (after the first screen has rendered), so that the
 * first call after it does not wait for the client, and the first screen does not share the
 * main thread with it.
 */
export const preloadClient = (): void => {
  // Safari has no `requestIdleCallback`; there a short timeout leaves the first screen its frame.
  if (typeof window.requestIdleCallback === "function") requestIdleCallback(() => void loadClient(), { timeout: 5000 })
  else setTimeout(() => void loadClient(), 200)
}

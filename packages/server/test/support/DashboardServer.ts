/**
 * What the dashboard's browser tests share: the test server's settings for them, the
 * API read-back that checks what a screen did, and waiting on a count of elements.
 */

import { freePort } from "@bosun/platform/EmbeddedPostgres"
import { eventually } from "@bosun/testing"
import { assert } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { Locator } from "playwright-core"
import { builtDashboard, step } from "./Browser.ts"
import { request, testSettings } from "./TestServer.ts"

/**
 * Settings for a test server serving the dashboard built for this run: on a known port, so the
 * base URL is the browser's origin (writes from another origin are 403), and with no lane
 * running anything, so the runs the screens start stay where the tests can see them.
 */
export const dashboardServerSettings = Effect.gen(function* () {
  const dashboardDir = yield* builtDashboard
  const port = yield* freePort
  const { cluster } = testSettings()
  return {
    port,
    baseUrl: new URL(`http://127.0.0.1:${port}`),
    dashboardDir,
    cluster: { ...cluster, scheduler: { ...cluster.scheduler, lanes: { AGENT: 0, REVIEW: 0 } } }
  }
})

/** `data` of a successful answer (status under 300) of `/api/v1/organizations/{path}`. */
export const organizationApi = <A = unknown>(cookie: string, path: string, init: RequestInit = {}) =>
  Effect.map(
    request(`/api/v1/organizations/${path}`, { ...init, headers: { cookie, "content-type": "application/json" } }),
    (response) => {
      assert.isBelow(response.status, 300, response.text)
      return (response.json as { data: A }).data
    }
  )

/** Waits (up to 20 s) until the number of elements `locator` matches satisfies `done`. */
export const countReaches = (locator: Locator, done: (count: number) => boolean) =>
  Effect.orDie(
    eventually(
      step(() => locator.count()),
      done,
      Duration.seconds(20)
    )
  )

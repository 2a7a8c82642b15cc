/**
 * A run of an organization with a running first attempt, and a writer of its events the way the
 * attempt's execute step writes them (rows committed by `flushEvents`, then published to the
 * run's RunEvents entity): for tests of the live run stream, over HTTP or in the dashboard.
 */
import type { AttemptRun } from "@bosun/actors/attempt/AttemptPorts"
import { flushEvents } from "@bosun/actors/attempt/AttemptRecords"
import { RunEvents } from "@bosun/actors/events/RunEvents"
import type { RunEvent } from "@bosun/domain"
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { signIn } from "./Identity.ts"
import { insertRun } from "./RunRows.ts"

export const runWithWriter = (org: string, data: (n: number) => unknown = (n) => ({ n })) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const member = yield* signIn(`${org}-member`, [[org, "MEMBER"]])
    const created = yield* insertRun(org, { workflowType: "test_stream", repositoryId: null })
    yield* sql`INSERT INTO workflow_attempts (id, run_id, attempt, status, started_at, heartbeat_at)
               VALUES (${`${created.id}:1`}, ${created.id}, 1, 'RUNNING', now(), now())`
    const run: AttemptRun = {
      organizationId: org,
      runId: created.id,
      attempt: 1,
      attemptId: `${created.id}:1`,
      workflowType: "test_stream",
      repositoryId: null,
      headSha: null,
      baseSha: null,
      pullRequestNumber: null,
      inputSnapshot: {}
    }
    const publisher = (yield* RunEvents.client)(created.id)
    let runtimeSeq = 0
    /**
     * Commits `count` runtime events, then publishes them: what the execute step does. Unpublished,
     * they are what a RunEvents entity that restarted on another runner finds: rows, no ring.
     */
    const emit = (count: number, publish = true) =>
      Effect.gen(function* () {
        const events: Array<RunEvent> = Array.from({ length: count }, (_, i) => ({
          seq: runtimeSeq + i + 1,
          at: new Date().toISOString(),
          type: "agent.event",
          data: data(runtimeSeq + i + 1)
        }))
        const written = yield* flushEvents(run, runtimeSeq, events)
        assert.isDefined(written)
        runtimeSeq += count
        if (publish) yield* publisher.Publish({ events: written ?? [] })
      })
    return { member, runId: created.id, emit }
  })

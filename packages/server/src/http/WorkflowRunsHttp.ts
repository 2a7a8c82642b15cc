/**
 * `GET .../workflow-runs/{run_id}` (spec: Organization endpoints): the run and its attempts;
 * `GET .../workflow-runs?repository_id&pull_request_number&page_size` (issue 5): the runs newest
 * first, the filters combined, `page_size` 1..100 (default 25); and the live run stream
 * `GET .../workflow-runs/{run_id}/events/stream` (spec: Events 1), served from the run's RunEvents
 * entity wherever in the cluster it lives: `id:` is the event's sequence, `Last-Event-ID` wins
 * over `?after=` (a reconnecting EventSource sends the one and repeats the other), and after
 * `BOSUN_SSE_STREAM_DURATION` (55 s) the stream ends with `event: reconnect`. Without
 * `Accept: text/event-stream` but with `?after=`, the answer is the next page of events as JSON.
 * Members only.
 *
 * The stream comes from this process's RunStreamHub: one RunEvents subscription per run however
 * many connections follow it, each flush's events rendered to SSE text once and written to every
 * connection as the same bytes.
 */
import { readEvents } from "@bosun/actors/events/RunEvents"
import { BosunApi, DEFAULT_PAGE_SIZE, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option, Stream } from "effect"
import { Sse } from "effect/encoding"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../config/AppConfig.ts"
import { WorkflowRunsRepo } from "../persistence/WorkflowRunsRepo.ts"
import { RunStreamHub } from "../streams/RunStreamHub.ts"
import { group } from "./ApiGroup.ts"
import { OrgAccess } from "./OrgAccess.ts"

/** The most events one polling answer carries. */
const EVENTS_PAGE = 500

export const WorkflowRunsHttp = group(
  BosunApi,
  "workflowRuns",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const runs = yield* WorkflowRunsRepo
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const hub = yield* RunStreamHub
    const utf8 = new TextEncoder()
    const reconnect = utf8.encode(Sse.encoder.write({ _tag: "Event", id: undefined, event: "reconnect", data: "" }))
    return handlers
      .handle("list", ({ params, query }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const data = yield* runs.list(params.organization_id, {
            repositoryId: query.repository_id,
            pullRequestNumber: query.pull_request_number,
            limit: query.page_size ?? DEFAULT_PAGE_SIZE
          })
          return { data }
        })
      )
      .handle("get", ({ params }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const found = yield* runs.find(params.organization_id, params.run_id)
          if (Option.isNone(found)) {
            return yield* NotFound.fromCode(ErrorCodes.notFound, "No workflow run has this id in this organization")
          }
          return { data: { attempts: found.value.attempts, run: found.value.run } }
        })
      )
      .handle("events", ({ params, query, headers }) =>
        Effect.gen(function* () {
          yield* access.member(params.organization_id)
          const found = yield* runs.find(params.organization_id, params.run_id)
          if (Option.isNone(found)) {
            return yield* NotFound.fromCode(ErrorCodes.notFound, "No workflow run has this id in this organization")
          }
          const after = headers["last-event-id"] ?? query.after ?? 0
          const request = yield* HttpServerRequest.HttpServerRequest
          const wantsSse = (request.headers.accept ?? "").includes("text/event-stream")
          if (!wantsSse && query.after !== undefined) {
            const data = yield* Effect.provideService(
              readEvents(params.organization_id, params.run_id, after, undefined, EVENTS_PAGE),
              SqlClient.SqlClient,
              sql
            )
            return { data, meta: { last_seq: data[data.length - 1]?.seq ?? after } }
          }
          const body = hub
            .stream(params.organization_id, params.run_id, after)
            .pipe(Stream.interruptWhen(Effect.sleep(config.sseStreamDuration)), Stream.concat(Stream.make(reconnect)))
          return HttpServerResponse.stream(body, {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache" }
          })
        })
      )
  })
)

/**
 * `GET .../workflow-runs/{run_id}` (docs/interface.md: Organization endpoints): the run and its
 * attempts; `GET .../workflow-runs?repository_id&pull_request_number&page_size`: the runs newest
 * first, the filters combined, `page_size` 1..100 (default 25); and the live run stream
 * `GET .../workflow-runs/{run_id}/events/stream` (docs/interface.md: Events 1), served from the
 * run's RunEvents entity wherever in the cluster it lives: `id:` is the event's sequence,
 * `Last-Event-ID` wins over `?after=` (a reconnecting EventSource sends the one and repeats the
 * other). The stream opens with a comment at once (status and headers go out before any event
 * exists), writes a keep-alive comment every `BOSUN_SSE_KEEPALIVE_INTERVAL` (15 s) and, after
 * `BOSUN_SSE_STREAM_DURATION` (55 s), ends with `event: reconnect`. After the run's last event
 * (`run.ended`) it ends with `event: end`; asked again for a run that has ended, with nothing
 * after `Last-Event-ID`, it answers 204, which tells an EventSource to stop reconnecting. Without
 * `Accept: text/event-stream` but with `?after=`, the answer is the next page of events as JSON.
 * Members only.
 *
 * The stream comes from this process's RunStreamHub: one RunEvents subscription per run however
 * many connections follow it, each flush's events rendered to SSE text once and written to every
 * connection as the same bytes.
 */
import { readEvents } from "@bosun/actors/events/RunEvents"
import { BosunApi, DEFAULT_PAGE_SIZE, ErrorCodes, NotFound, type WorkflowRunStatus } from "@bosun/domain"
import { Effect, Option, Stream } from "effect"
import { Sse } from "effect/encoding"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { AppConfig } from "../../platform/config/AppConfig.ts"
import { group } from "../../platform/http/ApiGroup.ts"
import { OrgAccess } from "../identity/index.ts"
import { RunStreamHub } from "./RunStreamHub.ts"
import { WorkflowRunsRepo } from "./WorkflowRunsRepo.ts"

/** The most events one polling answer carries. */
const EVENTS_PAGE = 500

const ENDED: ReadonlySet<typeof WorkflowRunStatus.Type> = new Set(["SUCCEEDED", "FAILED", "CANCELLED"])

const utf8 = new TextEncoder()
const frame = (event: string) => utf8.encode(Sse.encoder.write({ _tag: "Event", id: undefined, event, data: "" }))
const RECONNECT = frame("reconnect")
const END = frame("end")
const OPENED = utf8.encode(": stream open\n\n")
const KEEP_ALIVE = utf8.encode(": keep-alive\n\n")

export const WorkflowRunsHttp = group(
  BosunApi,
  "workflowRuns",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const runs = yield* WorkflowRunsRepo
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const hub = yield* RunStreamHub
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
          const ended = ENDED.has(found.value.run.status)
          if (ended) {
            const next = yield* Effect.provideService(
              readEvents(params.organization_id, params.run_id, after, undefined, 1),
              SqlClient.SqlClient,
              sql
            )
            if (next.length === 0) return HttpServerResponse.empty({ status: 204 })
          }
          // Whether the stream reached the run's end: then it says `end`, not `reconnect`.
          let reachedEnd = ended
          const events = (
            ended
              ? hub.stored(params.organization_id, params.run_id, after)
              : hub.stream(params.organization_id, params.run_id, after)
          ).pipe(
            Stream.map((chunk) => {
              if (chunk.ended) reachedEnd = true
              return chunk.bytes
            }),
            Stream.concat(Stream.suspend(() => (reachedEnd ? Stream.make(END) : Stream.empty)))
          )
          const body = Stream.concat(
            Stream.make(OPENED),
            events.pipe(
              Stream.merge(Stream.tick(config.sseKeepAliveInterval).pipe(Stream.drop(1), Stream.as(KEEP_ALIVE)), {
                haltStrategy: "left"
              }),
              Stream.interruptWhen(Effect.sleep(config.sseStreamDuration)),
              Stream.concat(Stream.suspend(() => (reachedEnd ? Stream.empty : Stream.make(RECONNECT))))
            )
          )
          return HttpServerResponse.stream(body, {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache" }
          })
        })
      )
  })
)

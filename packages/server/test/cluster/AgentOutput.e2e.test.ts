/**
 * Hostile agent output end to end: custom agents on the real runtime print a raw NUL, escaped NULs
 * and lone surrogates in JSON, invalid UTF-8, a megabyte line and a 90 KB line of 3-byte characters
 * split across pipe reads; each run still succeeds, stores every event the runtime logged with its
 * neighbours, escaped or cut as Postgres needs, and serves the same events over HTTP polling.
 */

import { createServer } from "node:http"
import * as path from "node:path"
import type { WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import { MAX_EVENT_BYTES, TRUNCATION_MARKER_PREFIX, truncationMarker } from "@bosun/actors/events/StorableEvent"
import { wakeScheduler } from "@bosun/actors/scheduler/SchedulerEntity"
import { RUN_ENDED, type RunEvent, type RunRequest } from "@bosun/domain"
import { WorkflowEventsPage } from "@bosun/domain/api/WorkflowRunsApi"
import { readEvents } from "@bosun/runtime/RunLog"
import { eventually } from "@bosun/testing"
import {
  freePort,
  makeFixtures,
  type RuntimeProcess,
  runRequest,
  startRuntime,
  TOKEN
} from "@bosun/testing/RuntimeProcess"
import { NodeHttpServer } from "@effect/platform-node"
import { afterAll, assert, beforeAll, layer } from "@effect/vitest"
import { Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { layerWorkflowTypes } from "../../src/app/cluster/WorkflowTypesLive.ts"
import { ApiRoutes } from "../../src/app/HttpApp.ts"
import { AppProvidersLive, HttpLive } from "../../src/app/Server.ts"
import { ClusterProviderClientsLive } from "../../src/outbound/OutboundLive.ts"
import { layerPostgres } from "../../src/platform/storage/QueuePostgres.ts"
import { OutboxLive } from "../../src/platform/storage/StorageLive.ts"
import { signIn } from "../support/Identity.ts"
import { enqueueRun } from "../support/RunQueueCalls.ts"
import { layerTestCluster } from "../support/TestCluster.ts"
import { request, testSettings } from "../support/TestServer.ts"

const fixtures = makeFixtures()
const dataDir = path.join(fixtures.root, "data")
let runtime: RuntimeProcess

/** 30,000 euro signs: 90,000 bytes of 3-byte characters (E2 82 AC), more than one 64 KiB pipe read. */
const euros = "€".repeat(30_000)
/** A megabyte of one line. */
const MEGABYTE = 1_048_576
const invalidBytes = Buffer.from([...Buffer.from("bad "), 0xff, 0xfe, ...Buffer.from(" bytes")])

/** A profile printing `hostile` (shell) between a plain "before" and "after" line. */
const between = (name: string, hostile: string) =>
  fixtures.script(`${name}.sh`, `printf 'before\\n'\n${hostile}\nprintf 'after\\n'`)

beforeAll(async () => {
  runtime = await startRuntime({
    BOSUN_RUNTIME_DATA_DIR: dataDir,
    BOSUN_RUNTIME_HEARTBEAT: "200 millis",
    BOSUN_RUNTIME_AGENTS: JSON.stringify({
      raw_nul: { command: [between("raw_nul", "printf 'nul \\000 here\\n'")] },
      json_nul: { command: [between("json_nul", `printf '%s\\n' '{"type":"note","text":"a\\u0000b"}'`)] },
      json_surrogate: { command: [between("json_surrogate", `printf '%s\\n' '{"type":"note","text":"x\\ud800y"}'`)] },
      invalid_utf8: { command: [between("invalid_utf8", "printf 'bad \\377\\376 bytes\\n'")] },
      megabyte: { command: [between("megabyte", `head -c ${MEGABYTE} /dev/zero | tr '\\0' 'a'; echo`)] },
      // One line in three writes 200 ms apart, cut after the first byte of a character (40,000 =
      // 3 × 13,333 + 1) and after the second (60,002 = 3 × 20,000 + 2): each cut is a pipe read's end.
      euros: {
        command: [
          between(
            "euros",
            `"$NODE" -e 'const line = Buffer.from(String.fromCodePoint(0x20ac).repeat(30000) + "\\n");
const parts = [line.subarray(0, 40000), line.subarray(40000, 60002), line.subarray(60002)];
const next = () => { const part = parts.shift(); if (part !== undefined) process.stdout.write(part, () => setTimeout(next, 200)); };
next();'`
          )
        ],
        env: { NODE: process.execPath }
      }
    })
  })
})
afterAll(async () => {
  await runtime?.stop()
})

/** The test's workflow type: runs the CUSTOM profile its input names; publishes nothing. */
const testType: WorkflowType = {
  lane: "AGENT",
  outputs: [],
  prepare: (run) =>
    Effect.succeed({
      request: runRequest(fixtures, {
        run_id: run.runId,
        attempt_id: run.attemptId,
        agent: { kind: "CUSTOM", profile: String(run.inputSnapshot.profile) }
      }) as unknown as RunRequest,
      sandbox: { provider: "EXTERNAL_RUNTIME", instanceClass: "standard-2", egressTier: "STRICT" },
      grants: [],
      model: "fake/model",
      provider: "fake"
    }),
  publish: () => Effect.void
}

/** The test cluster on the real runtime, with the production HTTP API in front of it on a free port. */
const clusterWithHttp = Layer.unwrap(
  Effect.map(Effect.promise(freePort), (runnerPort) =>
    HttpLive(ApiRoutes).pipe(
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(ClusterProviderClientsLive),
      Layer.provideMerge(AppProvidersLive),
      Layer.provideMerge(OutboxLive.pipe(Layer.provideMerge(layerPostgres(testSettings().queues)))),
      Layer.provideMerge(
        layerTestCluster({
          workflowTypes: layerWorkflowTypes(Effect.succeed({ test_hostile: testType })),
          runtime: { url: runtime.base, token: TOKEN },
          runnerPort
        })
      )
    )
  )
)

interface StoredEvent {
  readonly seq: number
  readonly attempt: number
  readonly type: string
  readonly data: unknown
}

const ORG = "agent-output"

/** The events the runtime logged for the attempt, read as the runtime reads its own log. */
const runtimeLog = (attemptId: string): Array<RunEvent> =>
  readEvents(path.join(dataDir, "runs", attemptId, "events.ndjson"), 0)

const isOutput = (type: string) => type === "agent.output" || type === "agent.event"

/**
 * Runs `profile` to its end and checks what every case must hold: SUCCEEDED in one attempt; its
 * events numbered 1..n, `run.ended` (SUCCEEDED) last; each event the runtime logged stored once in
 * its order with its type; the agent's output exactly before, the hostile line, after; every event
 * but the hostile one stored as logged; HTTP polling answering the stored events. Answers the
 * hostile event as stored and as logged.
 */
const runCase = (profile: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const member = yield* signIn(`${ORG}-member`, [[ORG, "MEMBER"]])
    const queued = yield* enqueueRun({
      organizationId: ORG,
      repositoryId: null,
      workflowType: "test_hostile",
      lane: "AGENT",
      inputSnapshot: { profile }
    })
    yield* wakeScheduler
    const [run] = yield* eventually(
      sql<{ status: string }>`SELECT status FROM workflow_runs WHERE id = ${queued.runId}`,
      (rows) => ["SUCCEEDED", "FAILED", "CANCELLED"].includes(rows[0]?.status ?? ""),
      Duration.seconds(90)
    )
    assert.strictEqual(run?.status, "SUCCEEDED")

    const attempts = yield* sql<{ attempt: number; status: string }>`
      SELECT attempt, status FROM workflow_attempts WHERE run_id = ${queued.runId} ORDER BY attempt`
    assert.deepStrictEqual(
      attempts.map((row) => [row.attempt, row.status]),
      [[1, "SUCCEEDED"]]
    )

    const rows = yield* sql<{ seq: string; attempt: number; type: string; data: unknown }>`
      SELECT seq, attempt, type, data FROM workflow_events WHERE run_id = ${queued.runId} ORDER BY seq`
    const stored: Array<StoredEvent> = rows.map((row) => ({
      seq: Number(row.seq),
      attempt: row.attempt,
      type: row.type,
      data: row.data
    }))
    assert.deepStrictEqual(
      stored.map((event) => event.seq),
      stored.map((_, index) => index + 1),
      "sequence numbers from 1 without a gap"
    )
    assert.isTrue(
      stored.every((event) => event.attempt === 1),
      "every event is the first attempt's"
    )
    const last = stored[stored.length - 1]
    assert.strictEqual(last?.type, RUN_ENDED)
    const ended = last?.data as { status: string; error: unknown; finished_at: string }
    assert.strictEqual(ended.status, "SUCCEEDED")
    assert.isNull(ended.error)
    assert.isFalse(Number.isNaN(Date.parse(ended.finished_at)))

    // Nothing the runtime logged is lost: one stored event per logged one, same types, same order.
    const logged = runtimeLog(`${queued.runId}:1`)
    assert.deepStrictEqual(
      logged.map((event) => event.seq),
      logged.map((_, index) => index + 1)
    )
    assert.strictEqual(stored.length, logged.length + 1)
    assert.deepStrictEqual(
      stored.slice(0, -1).map((event) => event.type),
      logged.map((event) => event.type)
    )

    // The agent's output: the neighbours around the hostile line, nothing else.
    const outputs = stored.flatMap((event, index) => (isOutput(event.type) ? [index] : []))
    assert.strictEqual(outputs.length, 3, "before, the hostile line, after")
    const [beforeAt = -1, hostileAt = -1, afterAt = -1] = outputs
    assert.deepStrictEqual(stored[beforeAt]?.data, { line: "before" })
    assert.deepStrictEqual(stored[afterAt]?.data, { line: "after" })
    assert.strictEqual(stored[beforeAt]?.type, "agent.output")
    assert.strictEqual(stored[afterAt]?.type, "agent.output")
    for (const [index, event] of logged.entries()) {
      if (index !== hostileAt) assert.deepStrictEqual(stored[index]?.data, event.data, `event ${index + 1} as logged`)
    }

    // The polling endpoint answers the stored events, field by field.
    const polled = yield* request(`/api/v1/organizations/${ORG}/workflow-runs/${queued.runId}/events/stream?after=0`, {
      headers: { cookie: member.cookie }
    })
    assert.strictEqual(polled.status, 200, polled.text)
    const page = Schema.decodeUnknownSync(WorkflowEventsPage)(polled.json)
    assert.deepStrictEqual(
      page.data.map((event) => ({ seq: event.seq, attempt: event.attempt, type: event.type, data: event.data })),
      stored
    )
    assert.strictEqual(page.meta.last_seq, stored.length)

    return {
      stored: { type: stored[hostileAt]?.type, data: stored[hostileAt]?.data },
      logged: { type: logged[hostileAt]?.type, data: logged[hostileAt]?.data }
    }
  })

const lineOf = (data: unknown) => (data as { readonly line: string }).line

layer(clusterWithHttp, { excludeTestServices: true })("hostile agent output, end to end", (it) => {
  it.effect(
    "a raw NUL byte in a text line is stored as the six characters \\u0000, its neighbours kept",
    () =>
      Effect.gen(function* () {
        const { stored, logged } = yield* runCase("raw_nul")
        assert.strictEqual(logged.type, "agent.output")
        assert.strictEqual(lineOf(logged.data), "nul \u0000 here")
        assert.strictEqual(stored.type, "agent.output")
        assert.strictEqual(lineOf(stored.data), "nul \\u0000 here")
      }),
    120_000
  )

  it.effect(
    "an escaped NUL in a JSON event's string is stored as the six characters \\u0000",
    () =>
      Effect.gen(function* () {
        const { stored, logged } = yield* runCase("json_nul")
        assert.strictEqual(logged.type, "agent.event")
        assert.deepStrictEqual(logged.data, { type: "note", text: "a\u0000b" })
        assert.strictEqual(stored.type, "agent.event")
        assert.deepStrictEqual(stored.data, { type: "note", text: "a\\u0000b" })
      }),
    120_000
  )

  it.effect(
    "a lone surrogate in a JSON event's string is stored as the six characters \\ud800",
    () =>
      Effect.gen(function* () {
        const { stored, logged } = yield* runCase("json_surrogate")
        assert.strictEqual(logged.type, "agent.event")
        assert.deepStrictEqual(logged.data, { type: "note", text: "x\ud800y" })
        assert.strictEqual(stored.type, "agent.event")
        assert.deepStrictEqual(stored.data, { type: "note", text: "x\\ud800y" })
      }),
    120_000
  )

  it.effect(
    "invalid UTF-8 bytes are stored as U+FFFD, as the WHATWG decoder replaces them",
    () =>
      Effect.gen(function* () {
        const { stored, logged } = yield* runCase("invalid_utf8")
        const expected = new TextDecoder().decode(invalidBytes)
        assert.strictEqual(expected, "bad \uFFFD\uFFFD bytes")
        assert.strictEqual(lineOf(logged.data), expected)
        assert.strictEqual(stored.type, "agent.output")
        assert.strictEqual(lineOf(stored.data), expected)
      }),
    120_000
  )

  it.effect(
    "a 1 MB line is stored cut to MAX_EVENT_BYTES with the truncation marker; the runtime's log keeps all of it",
    () =>
      Effect.gen(function* () {
        const { stored, logged } = yield* runCase("megabyte")
        const full = lineOf(logged.data)
        assert.strictEqual(full.length, MEGABYTE)
        assert.isTrue(/^a+$/.test(full), "the logged line is all 'a'")
        const eventBytes = Buffer.byteLength(JSON.stringify(logged.data), "utf8")
        assert.strictEqual(eventBytes, MEGABYTE + '{"line":""}'.length)

        assert.strictEqual(stored.type, "agent.output")
        assert.deepStrictEqual(Object.keys(stored.data as object), ["line"])
        const cut = lineOf(stored.data)
        assert.isAtMost(Buffer.byteLength(JSON.stringify(stored.data), "utf8"), MAX_EVENT_BYTES)
        assert.isTrue(cut.startsWith("aaaa"))
        const marker = truncationMarker(eventBytes)
        assert.isTrue(marker.startsWith(TRUNCATION_MARKER_PREFIX))
        assert.isTrue(cut.endsWith(marker), `ends with the marker: …${cut.slice(-200)}`)
        const kept = cut.slice(0, -marker.length)
        assert.isTrue(/^a+$/.test(kept), "what is kept of the line is its beginning")
        assert.isAbove(kept.length, MAX_EVENT_BYTES - 1024, "the cut keeps nearly the whole budget")
      }),
    120_000
  )

  it.effect(
    "a 90 KB line of 3-byte characters split across pipe reads is stored whole: no U+FFFD, no marker",
    () =>
      Effect.gen(function* () {
        const { stored, logged } = yield* runCase("euros")
        assert.strictEqual(lineOf(logged.data), euros)
        assert.strictEqual(stored.type, "agent.output")
        const line = lineOf(stored.data)
        assert.strictEqual(line.indexOf("\uFFFD"), -1, "the first U+FFFD")
        assert.notInclude(line, TRUNCATION_MARKER_PREFIX)
        assert.strictEqual(line.length, 30_000)
        assert.strictEqual(Buffer.byteLength(line, "utf8"), 90_000)
        assert.strictEqual(line, euros)
      }),
    120_000
  )
})

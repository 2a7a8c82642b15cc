/**
 * The runtime client against the real runtime process (undici, with the protocol header, retries on
 * connect errors and a tail resumable by `after=`): typed answers and errors, a tail that survives
 * connections cut every few kilobytes with no gap and no duplicate, and a start that waits out a
 * runtime still coming up.
 */
import * as net from "node:net"
import * as path from "node:path"
import {
  freePort,
  makeFixtures,
  type RuntimeProcess,
  runRequest,
  startRuntime,
  TOKEN
} from "@bosun/testing/RuntimeProcess"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Fiber, Redacted, Stream } from "effect"
import { RuntimeClient } from "../src/runtime/RuntimeClient.ts"

const fixtures = makeFixtures()
const profiles = {
  counter: {
    command: [
      fixtures.script(
        "counter.sh",
        `i=1
while [ $i -le 500 ]; do
  echo "{\\"type\\":\\"tick\\",\\"n\\":$i,\\"pad\\":\\"................................................\\"}"
  if [ $((i % 50)) -eq 0 ]; then sleep 0.02; fi
  i=$((i + 1))
done`
      )
    ]
  },
  napper: { command: [fixtures.script("napper.sh", "sleep 30")] }
}
const settings = { BOSUN_RUNTIME_AGENTS: JSON.stringify(profiles), BOSUN_RUNTIME_HEARTBEAT: "200 millis" }

/** A TCP relay to `port` that cuts every connection after `limit` bytes from the server. */
const cuttingProxy = async (port: number, limit: number) => {
  let connections = 0
  const server = net.createServer((client) => {
    connections++
    const upstream = net.connect(port, "127.0.0.1")
    let passed = 0
    client.pipe(upstream)
    upstream.on("data", (chunk: Buffer) => {
      passed += chunk.length
      client.write(chunk)
      if (passed > limit) {
        client.destroy()
        upstream.destroy()
      }
    })
    const close = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on("error", close)
    upstream.on("error", close)
    upstream.on("end", () => client.end())
  })
  const proxyPort = await freePort()
  await new Promise<void>((resolve) => server.listen(proxyPort, "127.0.0.1", resolve))
  return { url: new URL(`http://127.0.0.1:${proxyPort}`), close: () => server.close(), connections: () => connections }
}

const withRuntime = <A, E>(use: (runtime: RuntimeProcess) => Effect.Effect<A, E, RuntimeClient>) =>
  Effect.acquireUseRelease(
    Effect.promise(() =>
      startRuntime({ ...settings, BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, `data-${Math.random()}`) })
    ),
    use,
    (runtime) => Effect.promise(() => runtime.stop())
  ).pipe(Effect.provide(RuntimeClient.layer))

const endpoint = (base: string | URL, token = TOKEN) => ({
  baseUrl: new URL(String(base)),
  token: Redacted.make(token)
})

describe("runtime client", () => {
  it.live("starts, reads back, cancels and reports the runtime's refusals as typed reasons", () =>
    withRuntime((runtime) =>
      Effect.gen(function* () {
        const client = (yield* RuntimeClient).connect(endpoint(runtime.base))
        const health = yield* client.health
        assert.strictEqual(health.protocol_version, "1.1")
        const request = runRequest(fixtures, {
          run_id: "c-1",
          attempt_id: "c-1:1",
          agent: { kind: "CUSTOM", profile: "napper" }
        }) as unknown as Parameters<typeof client.start>[0]
        const started = yield* client.start(request)
        assert.isTrue(started.created)
        assert.strictEqual(started.state.status, "RUNNING")
        const again = yield* client.start(request)
        assert.isFalse(again.created)
        const conflict = yield* Effect.flip(client.start({ ...request, prompt: "other" }))
        assert.deepStrictEqual([conflict.reason, conflict.status], ["Conflict", 409])
        assert.include(conflict.message, "run_conflict")
        const running = yield* client.result("c-1:1")
        assert.strictEqual(running.status, "RUNNING")
        const cancelled = yield* client.cancel("c-1:1")
        assert.strictEqual(cancelled.status, "CANCELLED")
        const missing = yield* Effect.flip(client.result("never:1"))
        assert.deepStrictEqual([missing.reason, missing.status], ["NotFound", 404])
        const invalid = yield* Effect.flip(client.start({ ...request, attempt_id: "c-2:1", time_limit_seconds: 0 }))
        assert.strictEqual(invalid.reason, "Invalid")

        const stranger = (yield* RuntimeClient).connect(endpoint(runtime.base, `${TOKEN}-wrong`))
        const refused = yield* Effect.flip(stranger.result("c-1:1"))
        assert.deepStrictEqual([refused.reason, refused.status], ["Unauthorized", 401])
        assert.notInclude(refused.message, TOKEN)
      })
    )
  )

  it.live("follows a tail through connections cut every 4 KB, with no gap and no duplicate, to run.finished", () =>
    withRuntime((runtime) =>
      Effect.gen(function* () {
        const proxy = yield* Effect.acquireRelease(
          Effect.promise(() => cuttingProxy(Number(new URL(runtime.base).port), 4096)),
          (p) => Effect.sync(p.close)
        )
        const direct = (yield* RuntimeClient).connect(endpoint(runtime.base))
        const request = runRequest(fixtures, {
          run_id: "t-1",
          attempt_id: "t-1:1",
          agent: { kind: "CUSTOM", profile: "counter" }
        }) as unknown as Parameters<typeof direct.start>[0]
        yield* direct.start(request)
        const cut = (yield* RuntimeClient).connect(endpoint(proxy.url), { retryBase: Duration.millis(20) })
        const lines = yield* Stream.runCollect(cut.events("t-1:1", 0))
        const seqs = lines.flatMap((line) => ("seq" in line ? [line.seq] : []))
        const final = yield* direct.result("t-1:1")
        assert.strictEqual(final.status, "SUCCEEDED")
        assert.deepStrictEqual(
          seqs,
          Array.from({ length: final.last_seq }, (_, index) => index + 1)
        )
        assert.strictEqual(lines.filter((line) => line.type === "agent.event").length, 500)
        // ~75 KB of events through connections cut after the chunk that passes 4 KB (a replay
        // sends chunks of up to 64 KB): the tail had to resume several times.
        assert.isAbove(proxy.connections(), 2)
        // From the middle, too: only what follows.
        const rest = yield* Stream.runCollect(cut.events("t-1:1", final.last_seq - 3))
        assert.deepStrictEqual(
          rest.flatMap((line) => ("seq" in line ? [line.seq] : [])),
          [final.last_seq - 2, final.last_seq - 1, final.last_seq]
        )
      }).pipe(Effect.scoped)
    )
  )

  it.live("retries a start while the runtime is still coming up, and gives up on one that never does", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(freePort)
      const client = (yield* RuntimeClient).connect(endpoint(`http://127.0.0.1:${port}`), {
        retryBase: Duration.millis(100),
        retryTimes: 8
      })
      const request = runRequest(fixtures, {
        run_id: "late-1",
        attempt_id: "late-1:1",
        agent: { kind: "CUSTOM", profile: "napper" }
      }) as unknown as Parameters<typeof client.start>[0]
      // The runtime comes up 300 ms after the first attempt to reach it.
      const runtime = yield* Effect.promise(
        () =>
          new Promise<RuntimeProcess>((resolve, reject) =>
            setTimeout(
              () =>
                startRuntime({
                  ...settings,
                  BOSUN_RUNTIME_PORT: String(port),
                  BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "late-data")
                }).then(resolve, reject),
              300
            )
          )
      ).pipe(Effect.forkScoped)
      const started = yield* client.start(request)
      assert.isTrue(started.created)
      const process = yield* Fiber.join(runtime)
      yield* Effect.promise(() => process.stop())

      const nowhere = (yield* RuntimeClient).connect(endpoint(`http://127.0.0.1:${yield* Effect.promise(freePort)}`), {
        retryBase: Duration.millis(10),
        retryTimes: 2
      })
      const unreachable = yield* Effect.flip(nowhere.health)
      assert.deepStrictEqual([unreachable.reason, unreachable.status], ["Unavailable", null])
      assert.include(unreachable.message, "ECONNREFUSED")
    }).pipe(Effect.scoped, Effect.provide(RuntimeClient.layer))
  )
})

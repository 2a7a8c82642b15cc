/**
 * The runtime process as one Layer: configuration, the toolchain probe, who agents run as
 * (`AgentUsers`: a user of their own per attempt as root, else a warning), the runs (recovering
 * what a previous process left), and the protocol routes on a Node HTTP server at
 * `BOSUN_RUNTIME_HOST:BOSUN_RUNTIME_PORT`. `main.ts` launches it; tests start it as a process.
 */
import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { NetAddress } from "effect/net"
import { AgentUsers } from "./AgentUsers.ts"
import { Runs } from "./Runs.ts"
import { RuntimeConfig } from "./RuntimeConfig.ts"
import { RuntimeRoutes } from "./RuntimeHttp.ts"
import { Toolchain } from "./Toolchain.ts"

const NodeServerLive = Layer.unwrap(
  Effect.map(RuntimeConfig, (config) => NodeHttpServer.layer(createServer, { port: config.port, host: config.host }))
)

const Announce = Layer.effectDiscard(
  Effect.gen(function* () {
    const server = yield* HttpServer.HttpServer
    const address =
      server.address._tag === "UnixPathAddress" ? server.address.path : NetAddress.formatInet(server.address)
    yield* Effect.logInfo("bosun_runtime_listening").pipe(Effect.annotateLogs({ address }))
  })
)

/**
 * Supervised: the parent holds our stdin; when it closes (the parent exited, however it died),
 * stop as on SIGTERM, so running agents are stopped and recovered by the next start.
 */
const StopWithSupervisor = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* RuntimeConfig
    if (!config.supervised) return
    const stop = () => {
      process.kill(process.pid, "SIGTERM")
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        process.stdin.once("end", stop)
        process.stdin.once("close", stop)
        process.stdin.resume()
      }),
      () =>
        Effect.sync(() => {
          process.stdin.off("end", stop)
          process.stdin.off("close", stop)
          process.stdin.pause()
          process.stdin.unref()
        })
    )
  })
)

export const RuntimeServerLive = Layer.merge(Announce, StopWithSupervisor).pipe(
  Layer.provideMerge(HttpRouter.serve(RuntimeRoutes, { disableListenLog: true })),
  Layer.provide(NodeServerLive),
  Layer.provide(Runs.layer.pipe(Layer.provideMerge(Toolchain.layer), Layer.provide(AgentUsers.layer))),
  Layer.provideMerge(RuntimeConfig.layer)
)

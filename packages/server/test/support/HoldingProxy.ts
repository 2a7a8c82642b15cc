/**
 * A reverse proxy in front of a real service (the runtime, for the durability tests) that can hold
 * chosen requests: a held request is not forwarded until the test lets it go, so a test can kill a
 * server at an exact point of a step (say, after the run's end was committed and before the step's
 * result was kept) instead of hoping a timer lands in a window of a few milliseconds.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { Deferred, Effect } from "effect"

export interface HoldingProxy {
  readonly base: string
  /**
   * Holds the next request `matches` accepts: the returned effect completes once one arrived; the
   * request then waits until `release` (and is forwarded) or until the caller's socket is gone.
   */
  readonly holdNext: (matches: (method: string, path: string) => boolean) => Effect.Effect<void>
  readonly release: Effect.Effect<void>
}

export const startHoldingProxy = (target: string) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const upstream = new URL(target)
      let rule:
        | { readonly matches: (method: string, path: string) => boolean; readonly seen: Deferred.Deferred<void> }
        | undefined
      let released = Deferred.makeUnsafe<void>()
      const forward = (request: http.IncomingMessage, response: http.ServerResponse) => {
        const outbound = http.request(
          {
            host: upstream.hostname,
            port: upstream.port,
            method: request.method,
            path: request.url,
            headers: request.headers
          },
          (answer) => {
            response.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(response)
          }
        )
        outbound.on("error", () => response.destroy())
        response.on("close", () => outbound.destroy())
        request.pipe(outbound)
      }
      const server = http.createServer((request, response) => {
        const current = rule
        if (current?.matches(request.method ?? "GET", request.url ?? "/")) {
          rule = undefined
          const gate = released
          Deferred.doneUnsafe(current.seen, Effect.void)
          Effect.runFork(
            Effect.andThen(
              Deferred.await(gate),
              Effect.sync(() => forward(request, response))
            )
          )
          return
        }
        forward(request, response)
      })
      yield* Effect.callback<void>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.void))
      })
      const port = (server.address() as AddressInfo).port
      const proxy: HoldingProxy = {
        base: `http://127.0.0.1:${port}`,
        holdNext: (matches) =>
          Effect.suspend(() => {
            const seen = Deferred.makeUnsafe<void>()
            rule = { matches, seen }
            return Deferred.await(seen)
          }),
        release: Effect.sync(() => {
          Deferred.doneUnsafe(released, Effect.void)
          released = Deferred.makeUnsafe<void>()
        })
      }
      return { server, proxy }
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ proxy }) => proxy))

/**
 * `group`: `HttpApiBuilder.group` whose routes keep only the API middleware as their context.
 *
 * Why: `HttpApiBuilder.group` captures the whole context it is built in and merges it into every
 * request's context (`Context.merge` copies both maps). Built beside every service of the server,
 * that copy was a tenth of the CPU of a simple `GET /api/v1/...` (measured with `node --cpu-prof`
 * under `npm run bench:http`). Bosun's handlers take their services once, when the group is built,
 * and keep them in closures; at request time they need only what the middleware provides (the
 * signed-in user) and the request itself. So the build function runs with the full context, and
 * the routes with a context of the three middleware implementations.
 *
 * The contract for handlers that follows: read services in the group's build function, never in
 * a handler's body (a request-time lookup of a service would find nothing and die; the
 * integration tests call every endpoint, so such a slip shows at once).
 */
import { BootstrapAuth, RequestValidation, SessionAuth } from "@bosun/domain"
import { Context, Effect, Layer, Scope } from "effect"
import { HttpApiBuilder } from "effect/http-api"

/** The middleware the `BosunApi` endpoints declare: all a route needs from its group's context. */
const keepForRoutes = Context.pick(RequestValidation, BootstrapAuth, SessionAuth, Scope.Scope)

/**
 * Runs `effect` with exactly `context`, nothing inherited. The types cannot check that `context`
 * holds what `effect` needs, hence the cast; the integration tests, which call every endpoint, do.
 */
export const runIn = <A, E, R>(effect: Effect.Effect<A, E, R>, context: Context.Context<never>): Effect.Effect<A, E> =>
  Effect.updateContext(effect, () => context as Context.Context<unknown> as Context.Context<R>)

export const group: typeof HttpApiBuilder.group = (api, groupIdentifier, build) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const full = yield* Effect.context<never>()
      const layer = HttpApiBuilder.group(api, groupIdentifier, (handlers) => {
        const result = build(handlers)
        return (Effect.isEffect(result) ? Effect.provideContext(result, full) : result) as typeof result
      })
      return yield* runIn(Layer.build(layer), keepForRoutes(full))
    })
  ) as ReturnType<typeof HttpApiBuilder.group>

/**
 * The HTTP application: the `BosunApi` routes with their handlers, the validation middleware, and
 * the request pipeline in front of everything, served with the router limits path ids need.
 *
 * `serve` takes the route layer as an argument so integration tests can add routes of their own
 * (a route that dies, a group with path parameters) to exactly the stack production serves.
 */
import { BosunApi, RunnerApi } from "@bosun/domain"
import { LogOutput } from "@bosun/platform/JsonLogger"
import { Context, Effect, Layer, References, Scope, Tracer } from "effect"
import { HttpRouter, HttpServer, UrlParams } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AgentConnectionsHttpLive } from "../features/agentConnections/AgentConnectionsSlice.ts"
import { ConnectedAppsHttpLive } from "../features/connectedApps/ConnectedAppsSlice.ts"
import { ContextSuggestionsHttpLive } from "../features/contextSuggestions/ContextSuggestionsSlice.ts"
import { DeepScansHttpLive } from "../features/deepScans/DeepScansSlice.ts"
import { AuthMiddlewareLive, IdentityHttpLive } from "../features/identity/IdentitySlice.ts"
import { MemoriesHttpLive } from "../features/memories/MemoriesSlice.ts"
import { RepositoriesHttpLive } from "../features/repositories/RepositoriesSlice.ts"
import { RunsHttpLive } from "../features/runs/RunsSlice.ts"
import { SecretsHttpLive } from "../features/secrets/SecretsSlice.ts"
import { WorkItemsHttpLive } from "../features/workItems/WorkItemsSlice.ts"
import { GithubWebhooksRoute, WebhooksHttpLive } from "../inbound/InboundLive.ts"
import { runIn } from "../platform/http/ApiGroup.ts"
import { RequestPipelineLayer } from "../platform/http/RequestPipeline.ts"
import { RequestValidationLayer } from "../platform/http/Validation.ts"
import { DashboardRoute } from "./DashboardHttp.ts"
import { HealthHttp, RunnerHealthHttp } from "./HealthHttp.ts"
import { InstanceHttp } from "./InstanceHttp.ts"

/** Every `BosunApi` route with its handlers; needs the services the handlers use. */
const BosunApiRoutes = HttpApiBuilder.layer(BosunApi, { openapiPath: "/api/v1/openapi.json" }).pipe(
  Layer.provide([
    HealthHttp,
    InstanceHttp,
    IdentityHttpLive,
    ConnectedAppsHttpLive,
    SecretsHttpLive,
    RepositoriesHttpLive,
    WorkItemsHttpLive,
    MemoriesHttpLive,
    RunsHttpLive,
    AgentConnectionsHttpLive,
    ContextSuggestionsHttpLive,
    DeepScansHttpLive,
    WebhooksHttpLive
  ]),
  Layer.provide([RequestValidationLayer, AuthMiddlewareLive])
)

/**
 * Every route: the `BosunApi` contract's; GitHub's webhook, which docs/interface.md does not
 * list and so is a plain router route (it verifies its signature over the raw body, as the Linear
 * webhook's raw handler does); and the dashboard, on every other GET.
 */
export const ApiRoutes = Layer.mergeAll(BosunApiRoutes, GithubWebhooksRoute, DashboardRoute)

/** A runner-only process's routes (docs/operations.md: Roles): the health endpoints and nothing else. */
export const RunnerRoutes = HttpApiBuilder.layer(RunnerApi).pipe(Layer.provide(RunnerHealthHttp))

/**
 * The router. Path parameters may be up to 1024 characters at the router so that the 1..128
 * rule (docs/interface.md: Endpoints) is Schema's to enforce (a 400, not a router 404).
 */
const RouterLive = HttpRouter.layer.pipe(
  Layer.provide(Layer.succeed(HttpRouter.RouterConfig)({ maxParamLength: 1024 }))
)

/**
 * What a request fiber starts with besides its request: the scope, the log and trace settings,
 * and the log output. The routes and the pipeline are built in the full context and keep their
 * services in closures; see `ApiGroup.ts` for why the request context is kept this small.
 */
const keepForRequests = Context.pick(
  Scope.Scope,
  LogOutput,
  References.CurrentLoggers,
  References.MinimumLogLevel,
  References.CurrentLogAnnotations,
  References.LogToStderr,
  References.TracerEnabled,
  Tracer.Tracer,
  Tracer.MinimumTraceLevel
)

/**
 * Query parameters whose values a request span must not carry to the trace backend: the OAuth
 * callbacks' `code` and `state` (a code is exchanged for a user's token), and any token, secret or
 * signature, besides Effect's defaults (cloud signatures). The span keeps the name with `REDACTED`.
 */
const REDACTED_QUERY_NAMES: ReadonlyArray<string | RegExp> = [
  ...UrlParams.CurrentRedactedNames.defaultValue(),
  "code",
  "state",
  /token/i,
  /secret/i,
  /signature/i,
  /password/i
]

/**
 * Serves `routes` behind the request pipeline, like `HttpRouter.serve` without its logger (the
 * pipeline writes the access log) but with request fibers that start from `keepForRequests`
 * rather than from every service of the process.
 */
export const serve = <A, E, R>(routes: Layer.Layer<A, E, R>) =>
  Layer.effectContext(
    Effect.gen(function* () {
      const app = yield* Layer.build(Layer.provideMerge(Layer.mergeAll(routes, RequestPipelineLayer), RouterLive))
      const server = yield* HttpServer.HttpServer
      const handler = Context.get(app, HttpRouter.HttpRouter).asHttpEffect()
      const requestContext = Context.add(
        keepForRequests(yield* Effect.context<never>()),
        UrlParams.CurrentRedactedNames,
        REDACTED_QUERY_NAMES
      )
      yield* runIn(server.serve(handler), requestContext)
      return app
    })
  )

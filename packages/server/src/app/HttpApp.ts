/**
 * The HTTP application: the `BosunApi` routes with their handlers, the validation middleware, and
 * the request pipeline in front of everything, served with the router limits path ids need.
 *
 * `serve` takes the route layer as an argument so integration tests can add routes of their own
 * (a route that dies, a group with path parameters) to exactly the stack production serves.
 */
import { BosunApi, RunnerApi } from "@bosun/domain"
import { Context, Effect, Layer, References, Scope, Tracer } from "effect"
import { HttpRouter, HttpServer, UrlParams } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AgentConnectionHttp } from "../features/agentConnections/AgentConnectionHttp.ts"
import { ConfigurationHttp } from "../features/agentConnections/ConfigurationHttp.ts"
import { ComposioHttp } from "../features/connectedApps/ComposioHttp.ts"
import { GithubAppHttp } from "../features/connectedApps/GithubAppHttp.ts"
import { LinearHttp } from "../features/connectedApps/LinearHttp.ts"
import { SlackHttp } from "../features/connectedApps/SlackHttp.ts"
import { ContextSuggestionsHttp } from "../features/contextSuggestions/ContextSuggestionsHttp.ts"
import { DeepScansHttp } from "../features/deepScans/DeepScansHttp.ts"
import { AuthHttp } from "../features/identity/AuthHttp.ts"
import { BootstrapAuthLive } from "../features/identity/BootstrapAuth.ts"
import { IdentityHttp } from "../features/identity/IdentityHttp.ts"
import { SessionAuthLive } from "../features/identity/SessionAuth.ts"
import { MemoriesHttp } from "../features/memories/MemoriesHttp.ts"
import { PullRequestsHttp } from "../features/repositories/PullRequestsHttp.ts"
import { RepositoriesHttp } from "../features/repositories/RepositoriesHttp.ts"
import { RunStreamHub } from "../features/runs/RunStreamHub.ts"
import { WorkflowRunsHttp } from "../features/runs/WorkflowRunsHttp.ts"
import { SecretRotationsHttp } from "../features/secrets/SecretRotationsHttp.ts"
import { ChatHttp } from "../features/workItems/ChatHttp.ts"
import { WorkItemsHttp } from "../features/workItems/WorkItemsHttp.ts"
import { GithubWebhooksRoute } from "../inbound/github/GithubWebhooksHttp.ts"
import { LinearWebhooksHttp } from "../inbound/linear/LinearWebhooksHttp.ts"
import { SlackEventsHttp } from "../inbound/slack/SlackEventsHttp.ts"
import { runIn } from "../platform/http/ApiGroup.ts"
import { RequestPipelineLayer } from "../platform/http/RequestPipeline.ts"
import { RequestValidationLayer } from "../platform/http/Validation.ts"
import { LogOutput } from "../platform/observability/JsonLogger.ts"
import { DashboardRoute } from "./DashboardHttp.ts"
import { HealthHttp, RunnerHealthHttp } from "./HealthHttp.ts"
import { InstanceHttp } from "./InstanceHttp.ts"

/** Every `BosunApi` route with its handlers; needs the services the handlers use. */
const BosunApiRoutes = HttpApiBuilder.layer(BosunApi, { openapiPath: "/api/v1/openapi.json" }).pipe(
  Layer.provide([
    HealthHttp,
    InstanceHttp,
    IdentityHttp,
    AuthHttp,
    GithubAppHttp,
    SecretRotationsHttp,
    RepositoriesHttp,
    ChatHttp,
    MemoriesHttp,
    WorkflowRunsHttp.pipe(Layer.provide(RunStreamHub.layer)),
    PullRequestsHttp,
    WorkItemsHttp,
    ConfigurationHttp,
    ContextSuggestionsHttp,
    DeepScansHttp,
    AgentConnectionHttp,
    ComposioHttp,
    LinearHttp,
    LinearWebhooksHttp,
    SlackHttp,
    SlackEventsHttp
  ]),
  Layer.provide([RequestValidationLayer, BootstrapAuthLive, SessionAuthLive])
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

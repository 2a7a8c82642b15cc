/**
 * The HTTP application: the `BosunApi` routes with their handlers, the validation middleware, and
 * the request pipeline in front of everything, served with the router limits the spec needs.
 *
 * `serve` takes the route layer as an argument so integration tests can add routes of their own
 * (a route that dies, a group with path parameters) to exactly the stack production serves.
 */
import { BosunApi } from "@bosun/domain"
import { Layer } from "effect"
import { HttpRouter } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { AgentConnectionHttp } from "./AgentConnectionHttp.ts"
import { AuthHttp } from "./AuthHttp.ts"
import { BootstrapAuthLive } from "./BootstrapAuth.ts"
import { ChatHttp } from "./ChatHttp.ts"
import { ConfigurationHttp } from "./ConfigurationHttp.ts"
import { ContextSuggestionsHttp } from "./ContextSuggestionsHttp.ts"
import { GithubAppHttp } from "./GithubAppHttp.ts"
import { HealthHttp } from "./HealthHttp.ts"
import { IdentityHttp } from "./IdentityHttp.ts"
import { InstanceHttp } from "./InstanceHttp.ts"
import { MemoriesHttp } from "./MemoriesHttp.ts"
import { PullRequestsHttp } from "./PullRequestsHttp.ts"
import { RepositoriesHttp } from "./RepositoriesHttp.ts"
import { RequestPipelineLayer } from "./RequestPipeline.ts"
import { SecretRotationsHttp } from "./SecretRotationsHttp.ts"
import { SessionAuthLive } from "./SessionAuth.ts"
import { RequestValidationLayer } from "./Validation.ts"
import { WorkflowRunsHttp } from "./WorkflowRunsHttp.ts"
import { WorkItemsHttp } from "./WorkItemsHttp.ts"

/** Every `BosunApi` route with its handlers; needs the services the handlers use. */
export const ApiRoutes = HttpApiBuilder.layer(BosunApi, { openapiPath: "/api/v1/openapi.json" }).pipe(
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
    WorkflowRunsHttp,
    PullRequestsHttp,
    WorkItemsHttp,
    ConfigurationHttp,
    ContextSuggestionsHttp,
    AgentConnectionHttp
  ]),
  Layer.provide([RequestValidationLayer, BootstrapAuthLive, SessionAuthLive])
)

/**
 * Serves `routes` behind the request pipeline. Path parameters may be up to 1024 characters at the
 * router so that the spec's 1..128 rule is Schema's to enforce (a 400, not a router 404).
 */
export const serve = <A, E, R>(routes: Layer.Layer<A, E, R>) =>
  HttpRouter.serve(Layer.mergeAll(routes, RequestPipelineLayer), {
    routerConfig: { maxParamLength: 1024 },
    disableLogger: true,
    disableListenLog: true
  })

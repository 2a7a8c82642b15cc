/**
 * The whole HTTP contract of Bosun: every group the server serves and the dashboard calls.
 */
import { HttpApi } from "effect/http-api"
import { AgentConnectionApi } from "./AgentConnectionApi.ts"
import { AuthApi } from "./AuthApi.ts"
import { ChatApi } from "./ChatApi.ts"
import { ComposioApi } from "./ComposioApi.ts"
import { ConfigurationApi } from "./ConfigurationApi.ts"
import { ContextSuggestionsApi } from "./ContextSuggestionsApi.ts"
import { DeepScansApi } from "./DeepScansApi.ts"
import { GithubAppApi } from "./GithubAppApi.ts"
import { HealthApi } from "./HealthApi.ts"
import { IdentityApi } from "./IdentityApi.ts"
import { InstanceApi } from "./InstanceApi.ts"
import { LinearApi, LinearWebhookApi } from "./LinearApi.ts"
import { MemoriesApi } from "./MemoriesApi.ts"
import { RequestValidation } from "./Middleware.ts"
import { PullRequestsApi } from "./PullRequestsApi.ts"
import { RepositoriesApi } from "./RepositoriesApi.ts"
import { SecretRotationsApi } from "./SecretRotationsApi.ts"
import { SlackApi, SlackEventsApi } from "./SlackApi.ts"
import { WorkflowRunsApi } from "./WorkflowRunsApi.ts"
import { WorkItemsApi } from "./WorkItemsApi.ts"

export class BosunApi extends HttpApi.make("bosun")
  .add(HealthApi)
  .add(InstanceApi)
  .add(IdentityApi)
  .add(AuthApi)
  .add(RepositoriesApi)
  .add(ChatApi)
  .add(MemoriesApi)
  .add(WorkflowRunsApi)
  .add(PullRequestsApi)
  .add(WorkItemsApi)
  .add(ConfigurationApi)
  .add(ContextSuggestionsApi)
  .add(DeepScansApi)
  .add(AgentConnectionApi)
  .add(ComposioApi)
  .add(GithubAppApi)
  .add(LinearApi)
  .add(LinearWebhookApi)
  .add(SlackApi)
  .add(SlackEventsApi)
  .add(SecretRotationsApi)
  .middleware(RequestValidation) {}

/**
 * What a runner-only process serves (docs/operations.md: Roles): the health endpoints its orchestrator probes,
 * nothing else — API traffic goes to `api` or `all` processes.
 */
export class RunnerApi extends HttpApi.make("bosun-runner").add(HealthApi) {}

/**
 * The Bosun server process as one Layer, in the role its configuration names (docs/operations.md: Roles):
 * configuration, instance secrets, the agent runtime
 * (external, or the embedded one launched beside the server), the database (external or
 * embedded), the Migrator with its boot-time run, the storage roles (blob store, cache, queues,
 * outbox relay), the application services (sealing, repositories, sessions, the GitHub OAuth
 * client, the secret-rotation worker), the HTTP application on a Node server, and `/metrics` on
 * its own port when configured.
 * `main.ts` launches it; integration tests build the same layer with their own database, port and
 * extra routes.
 */

import * as fs from "node:fs/promises"
import { createServer } from "node:http"
import * as path from "node:path"
import type { WorkflowTypes } from "@bosun/actors/attempt/AttemptPorts"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { NetAddress } from "effect/net"
import { AgentConnectionsRepo } from "../features/agentConnections/AgentConnectionsRepo.ts"
import { ConfigurationRepo } from "../features/agentConnections/ConfigurationRepo.ts"
import { ConfigurationWriter } from "../features/agentConnections/ConfigurationWriter.ts"
import { UsageSourceLive } from "../features/agentConnections/ProviderUsage.ts"
import { ContextSuggestionsRepo } from "../features/contextSuggestions/ContextSuggestionsRepo.ts"
import { DeepScanFindingsRepo } from "../features/deepScans/DeepScanFindingsRepo.ts"
import { DeepScanCronLive } from "../features/deepScans/DeepScanSchedules.ts"
import { DeepScanSchedulesRepo } from "../features/deepScans/DeepScanSchedulesRepo.ts"
import { DeepScansRepo } from "../features/deepScans/DeepScansRepo.ts"
import { OrgAccess } from "../features/identity/OrgAccess.ts"
import { OrganizationsRepo } from "../features/identity/OrganizationsRepo.ts"
import { SessionsRepo } from "../features/identity/SessionsRepo.ts"
import { UsersRepo } from "../features/identity/UsersRepo.ts"
import { MemoriesRepo } from "../features/memories/MemoriesRepo.ts"
import { PullRequestsRepo } from "../features/repositories/PullRequestsRepo.ts"
import { RepositoriesRepo } from "../features/repositories/RepositoriesRepo.ts"
import { ReviewFindingsRepo } from "../features/reviews/ReviewFindingsRepo.ts"
import { RunCountsLive, WorkflowRunsRepo } from "../features/runs/WorkflowRunsRepo.ts"
import { OrganizationSecretsRepo } from "../features/secrets/OrganizationSecretsRepo.ts"
import { SecretRotation } from "../features/secrets/SecretRotation.ts"
import { SecretRotationRepo } from "../features/secrets/SecretRotationRepo.ts"
import { ChatChannelsRepo } from "../features/workItems/ChatChannelsRepo.ts"
import { WorkItemsRepo } from "../features/workItems/WorkItemsRepo.ts"
import { GithubDeliveriesRepo } from "../inbound/github/GithubDeliveriesRepo.ts"
import { LinearDeliveriesRepo } from "../inbound/linear/LinearDeliveriesRepo.ts"
import { SlackDeliveriesRepo } from "../inbound/slack/SlackDeliveriesRepo.ts"
import { Composio } from "../outbound/composio/Composio.ts"
import { ComposioConnectionsRepo } from "../outbound/composio/ComposioConnectionsRepo.ts"
import { ProviderEffectsRepo } from "../outbound/effects/ProviderEffectsRepo.ts"
import { GitHubApp } from "../outbound/github/GitHubApp.ts"
import { GitHubBranches } from "../outbound/github/GitHubBranches.ts"
import { GitHubOAuth } from "../outbound/github/GitHubOAuth.ts"
import { GitHubPulls } from "../outbound/github/GitHubPulls.ts"
import { GithubAppsRepo } from "../outbound/github/GithubAppsRepo.ts"
import { LinearConnectionsRepo } from "../outbound/linear/LinearConnectionsRepo.ts"
import { LinearTokens } from "../outbound/linear/LinearTokens.ts"
import { LinearTracker } from "../outbound/linear/LinearTracker.ts"
import { SlackChat } from "../outbound/slack/SlackChat.ts"
import { SlackConnectionsRepo } from "../outbound/slack/SlackConnectionsRepo.ts"
import { AppConfig, type Role } from "../platform/config/AppConfig.ts"
import { InstanceSecrets } from "../platform/config/InstanceSecrets.ts"
import { Secrets } from "../platform/crypto/Secrets.ts"
import { AuditLog } from "../platform/db/AuditLog.ts"
import { DatabaseLive } from "../platform/db/Database.ts"
import { Migrator } from "../platform/db/Migrator.ts"
import { MetricsServerLive } from "../platform/observability/MetricsServer.ts"
import { TracingLive } from "../platform/observability/Tracing.ts"
import { AgentRuntime } from "../platform/runtime/AgentRuntime.ts"
import { StorageLive } from "../platform/storage/StorageLive.ts"
import { layerClusterRunner } from "./cluster/ClusterLive.ts"
import { WorkflowTypesLive } from "./cluster/WorkflowTypesLive.ts"
import { EffectsConsumerLive } from "./EffectsConsumer.ts"
import { ApiRoutes, RunnerRoutes, serve } from "./HttpApp.ts"
import { InboxConsumerLive } from "./InboxConsumer.ts"

/** The HTTP server on `BOSUN_HOST:BOSUN_PORT`. */
export const NodeServerLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    return NodeHttpServer.layer(createServer, { port: config.port, host: config.host })
  })
)

/**
 * The sealing service over this instance's key ring, the repositories, and the secret-rotation
 * service with (or, for read-only CLI commands, without) its worker, which starts once the
 * migrations are applied; needs AppConfig, InstanceSecrets, the Migrator and a SqlClient. The
 * server and the `bosun` CLI share it.
 */
/** Sessions with the configured idle timeout and maximum age. */
const SessionsLive = Layer.unwrap(Effect.map(AppConfig, (config) => SessionsRepo.layer(config.sessions)))

export const appServices = (options: { readonly rotationWorker: boolean }) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const migrator = yield* Migrator
      return SecretRotation.layer({
        ...config.secretRotation,
        ready: migrator.awaitReady,
        worker: options.rotationWorker
      })
    })
  ).pipe(
    Layer.provideMerge(OrgAccess.layer),
    Layer.provideMerge(Layer.merge(ContextSuggestionsRepo.layer, ConfigurationWriter.layer)),
    Layer.provideMerge(
      Layer.mergeAll(
        OrganizationsRepo.layer,
        GithubAppsRepo.layer,
        GithubDeliveriesRepo.layer,
        LinearConnectionsRepo.layer,
        LinearDeliveriesRepo.layer,
        SlackConnectionsRepo.layer,
        SlackDeliveriesRepo.layer,
        OrganizationSecretsRepo.layer,
        SecretRotationRepo.layer,
        UsersRepo.layer,
        AuditLog.layer,
        SessionsLive,
        GitHubOAuth.layer,
        RepositoriesRepo.layer,
        ChatChannelsRepo.layer,
        MemoriesRepo.layer,
        RunCountsLive.pipe(Layer.provideMerge(WorkflowRunsRepo.layer)),
        PullRequestsRepo.layer,
        ReviewFindingsRepo.layer,
        ProviderEffectsRepo.layer,
        WorkItemsRepo.layer,
        ConfigurationRepo.layer,
        AgentConnectionsRepo.layer,
        ComposioConnectionsRepo.layer,
        DeepScansRepo.layer,
        DeepScanFindingsRepo.layer,
        DeepScanSchedulesRepo.layer,
        Composio.layer
      )
    ),
    Layer.provideMerge(Secrets.layer)
  )

export const AppServicesLive = appServices({ rotationWorker: true })

/** The clients that act as the organization's GitHub App; they need the cache besides the services. */
export const AppProvidersLive = Layer.mergeAll(
  Layer.merge(GitHubPulls.layer, GitHubBranches.layer).pipe(Layer.provideMerge(GitHubApp.layer)),
  SlackChat.layer,
  UsageSourceLive
)

/**
 * The clients whose calls take a cluster-wide lock, built on the runner: Linear's, whose token
 * refresh holds the Mutex `tracker-token:{org}`.
 */
export const ClusterProvidersLive = LinearTracker.layer.pipe(Layer.provideMerge(LinearTokens.layer))

/** Serves `routes` (production: `ApiRoutes`); needs the Migrator, AppConfig, SqlClient and an HttpServer. */
export const HttpLive = <A, E, R>(routes: Layer.Layer<A, E, R>) => serve(routes)

/** One structured line once listening, and on the embedded default's first start, the one-time hints. */
const Announce = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const secrets = yield* InstanceSecrets
    const server = yield* HttpServer.HttpServer
    const runtime = yield* AgentRuntime
    const address =
      server.address._tag === "UnixPathAddress" ? server.address.path : NetAddress.formatInet(server.address)
    yield* Effect.logInfo("bosun_listening").pipe(
      Effect.annotateLogs({
        address,
        role: config.role,
        base_url: config.baseUrl.href,
        metrics_address: Option.match(config.metrics, {
          onNone: () => null,
          onSome: ({ host, port }) => `${host}:${port}`
        }),
        embedded: Option.isSome(secrets.embedded),
        runtime_url: runtime.endpoint.baseUrl.origin,
        runtime_embedded: runtime.embedded
      })
    )
    if (Option.isSome(secrets.embedded)) {
      // Shown once, to the operator's terminal, by the first start that got this far (a marker
      // records it, so a first start that failed before listening does not use up the showing);
      // never logged. A token the operator set themselves is not echoed.
      const embedded = secrets.embedded.value
      const marker = path.join(config.dataDir, ".first-start-shown")
      const shown = yield* Effect.promise(() =>
        fs.access(marker).then(
          () => true,
          () => false
        )
      )
      if (!shown) {
        const token = embedded.generatedBootstrapToken
          ? Option.match(secrets.bootstrapToken, { onNone: () => "(unset)", onSome: Redacted.value })
          : "(the value of BOSUN_BOOTSTRAP_TOKEN)"
        process.stderr.write(
          [
            "",
            "Bosun is running on its embedded defaults.",
            `  Dashboard:       ${config.baseUrl.href}`,
            `  Bootstrap token: ${token}`,
            `  (kept in ${embedded.secretsFile}, mode 0600; this is the only time it is printed)`,
            ""
          ].join("\n")
        )
        yield* Effect.promise(() => fs.writeFile(marker, `${new Date().toISOString()}\n`, { mode: 0o600 }))
      }
    }
  })
)

/** The background work of a runner: the inbox and effects consumers, and the deep-scan cron. */
const BackgroundWorkersLive = Layer.mergeAll(InboxConsumerLive, EffectsConsumerLive, DeepScanCronLive)

/**
 * One role's server (docs/operations.md: Roles). `all` and `runner` run the consumers, the cron and the
 * secret-rotation worker; `api` runs none of them and joins the cluster as a client (its
 * `ClusterSettings.clientOnly`), so it hosts no entity and starts no singleton. A `runner` serves
 * only the health endpoints on its HTTP port.
 */
const serverOfRole = <E, R>(role: Role, workflowTypes: Layer.Layer<WorkflowTypes, E, R>) =>
  Announce.pipe(
    // The server starts listening only once everything its routes use is built: a request that
    // arrived before the routes were installed would never be answered.
    Layer.provideMerge(HttpLive(role === "runner" ? RunnerRoutes : ApiRoutes).pipe(Layer.provideMerge(NodeServerLive))),
    Layer.provideMerge(Layer.merge(MetricsServerLive, role === "api" ? Layer.empty : BackgroundWorkersLive)),
    Layer.provideMerge(ClusterProvidersLive),
    Layer.provideMerge(layerClusterRunner(workflowTypes)),
    Layer.provideMerge(AppProvidersLive),
    Layer.provideMerge(appServices({ rotationWorker: role !== "api" })),
    Layer.provideMerge(StorageLive),
    Layer.provideMerge(AgentRuntime.layer),
    Layer.provideMerge(Migrator.layer),
    Layer.provide(DatabaseLive),
    Layer.provideMerge(InstanceSecrets.layer)
  )

/** The whole server with these workflow types (production: `WorkflowTypesLive`), in the configured role. */
export const makeServerLive = <E, R>(workflowTypes: Layer.Layer<WorkflowTypes, E, R>) =>
  Layer.unwrap(
    Effect.map(AppConfig, (config) => serverOfRole(config.role, workflowTypes).pipe(Layer.provide(TracingLive)))
  ).pipe(Layer.provideMerge(AppConfig.layer))

export const ServerLive = makeServerLive(WorkflowTypesLive)

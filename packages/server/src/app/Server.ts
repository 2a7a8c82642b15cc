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
import { RunQueue } from "@bosun/actors/jobs/RunQueue"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServer } from "effect/http"
import { NetAddress } from "effect/net"
import { AgentConnectionsLive } from "../features/agentConnections/AgentConnectionsSlice.ts"
import { UsageSourceLive } from "../features/agentConnections/ProviderUsage.ts"
import { ContextSuggestionsLive } from "../features/contextSuggestions/ContextSuggestionsSlice.ts"
import { DeepScanCronLive, DeepScansLive } from "../features/deepScans/DeepScansSlice.ts"
import { IdentityLive } from "../features/identity/IdentitySlice.ts"
import { MemoriesLive } from "../features/memories/MemoriesSlice.ts"
import { RepositoriesLive } from "../features/repositories/RepositoriesSlice.ts"
import { ReviewsLive } from "../features/reviews/ReviewsSlice.ts"
import { RunsLive } from "../features/runs/RunsSlice.ts"
import { secretsLive } from "../features/secrets/SecretsSlice.ts"
import { WorkItemsLive } from "../features/workItems/WorkItemsSlice.ts"
import { DeliveriesLive } from "../inbound/InboundLive.ts"
import { ClusterProviderClientsLive, ConnectionsLive, ProviderClientsLive } from "../outbound/OutboundLive.ts"
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
import { ApiRoutes, RunnerRoutes, serve } from "./HttpApp.ts"
import { EffectsWorkerLive, InboxWorkerLive } from "./OutboxWorkers.ts"

/** The HTTP server on `BOSUN_HOST:BOSUN_PORT`. */
export const NodeServerLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    return NodeHttpServer.layer(createServer, { port: config.port, host: config.host })
  })
)

/**
 * The features' services over the outbound connections and the recorded deliveries, with the
 * sealing service and the actors' run queue beneath; needs AppConfig, InstanceSecrets, the
 * Migrator and a SqlClient. Each slice's layer is built after the slices it uses. The
 * secret-rotation worker runs with `rotationWorker` (not for read-only CLI commands). The server
 * and the `bosun` CLI share it.
 */
export const appServices = (options: { readonly rotationWorker: boolean }) =>
  Layer.merge(DeepScansLive, ContextSuggestionsLive).pipe(
    Layer.provideMerge(AgentConnectionsLive),
    Layer.provideMerge(WorkItemsLive),
    Layer.provideMerge(
      Layer.mergeAll(IdentityLive, RepositoriesLive, RunsLive, MemoriesLive, ReviewsLive, secretsLive(options))
    ),
    Layer.provideMerge(Layer.mergeAll(ConnectionsLive, DeliveriesLive, AuditLog.layer)),
    Layer.provideMerge(Layer.merge(Secrets.layer, RunQueue.layer))
  )

export const AppServicesLive = appServices({ rotationWorker: true })

/** The provider clients and the agents' usage source; they need the cache besides the services. */
export const AppProvidersLive = Layer.merge(ProviderClientsLive, UsageSourceLive)

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
const BackgroundWorkersLive = Layer.mergeAll(InboxWorkerLive, EffectsWorkerLive, DeepScanCronLive)

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
    Layer.provideMerge(ClusterProviderClientsLive),
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

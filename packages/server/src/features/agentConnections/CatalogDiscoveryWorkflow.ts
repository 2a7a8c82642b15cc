/**
 * The catalog_discovery workflow type (docs/interface.md: Resources "Agent connection", `catalog`
 * and its discovery record): when an agent connection's credentials change, a run asks the agent
 * CLI the scope is configured with, in a sandbox of the configured provider, which providers and
 * models it offers with those credentials (the runtime's CATALOG task), and records the catalog.
 *
 * - prepare: the discovery's scope must still have credentials; the request carries them
 *   (INLINE providers) or, on PLATFORM_CONTAINER, placeholders (listing models calls no provider,
 *   so nothing needs injecting and no credential enters the pod); the configuration it runs with
 *   is fingerprinted onto the discovery (agent, model, sandbox provider).
 * - publish: `outputs/catalog.json` decoded with the domain schema, written to the discovery —
 *   idempotent by run, so a publish cut off and run again records it once.
 * A failed or cancelled run needs no step of its own: the discovery reads its status from the run.
 */
import { createHash } from "node:crypto"
import { AttemptError, type WorkflowType } from "@bosun/actors/attempt/AttemptPorts"
import {
  CATALOG_OUTPUT_PATH,
  CatalogOutput,
  canonicalJson,
  type RepositoryConfiguration,
  type RunRequest
} from "@bosun/domain"
import { Effect, Option, Schema } from "effect"
import { AgentConnectionsRepo, CATALOG_DISCOVERY, type ProviderCredentials } from "./AgentConnectionsRepo.ts"
import { ConfigurationRepo } from "./ConfigurationRepo.ts"

const decodeOutput = Schema.decodeUnknownEffect(Schema.fromJsonString(CatalogOutput))

/** What of the configuration decides the catalog; a change of it asks for a new discovery. */
export const configurationFingerprint = (configuration: RepositoryConfiguration) =>
  `sha256:${createHash("sha256")
    .update(
      canonicalJson({
        agent_provider: configuration.agent_provider,
        model: configuration.model,
        sandbox_provider: configuration.sandbox_provider
      })
    )
    .digest("hex")
    .slice(0, 16)}`

const SECRET_FIELDS = new Set(["key", "access", "refresh", "token"])

/**
 * The credentials with every secret value replaced — the auth fields and every header value a
 * provider definition carries (an API key may travel as a header): what a pod without injection
 * may see.
 */
const placeholders = (credentials: ProviderCredentials, attemptId: string): ProviderCredentials => {
  const placeholder = `bosun-inject-${attemptId}-agent`
  const masked = (field: string, value: unknown): unknown =>
    SECRET_FIELDS.has(field)
      ? placeholder
      : field === "headers" && typeof value === "object" && value !== null
        ? Object.fromEntries(Object.keys(value).map((name) => [name, placeholder]))
        : value
  return Object.fromEntries(
    Object.entries(credentials).map(([provider, entry]) => [
      provider,
      Object.fromEntries(Object.entries(entry).map(([field, value]) => [field, masked(field, value)]))
    ])
  )
}

const fail = (code: string, message: string, retryable = false) => new AttemptError({ code, message, retryable })

export const catalogDiscoveryWorkflow = Effect.gen(function* () {
  const connections = yield* AgentConnectionsRepo
  const configurations = yield* ConfigurationRepo

  const discoveryOf = (organizationId: string, input: Readonly<Record<string, unknown>>) =>
    Effect.gen(function* () {
      const discoveryId = typeof input.discovery_id === "string" ? input.discovery_id : ""
      const found = yield* connections.discovery(organizationId, discoveryId)
      if (Option.isNone(found)) {
        return yield* fail("discovery_missing", `The run names no catalog discovery of this organization`)
      }
      return found.value
    })

  const type: WorkflowType = {
    lane: "AGENT",
    outputs: [CATALOG_OUTPUT_PATH],
    prepare: (run) =>
      Effect.gen(function* () {
        const discovery = yield* discoveryOf(run.organizationId, run.inputSnapshot)
        const scope = yield* connections.credentials(run.organizationId, discovery.repositoryId)
        if (Option.isNone(scope)) {
          return yield* fail(
            "agent_connection_missing",
            "The agent connection this discovery was queued for has no credentials any more"
          )
        }
        const configuration = yield* configurations.effective(run.organizationId, discovery.repositoryId)
        yield* connections.recordConfiguration(
          run.organizationId,
          discovery.id,
          configurationFingerprint(configuration)
        )
        const provider = configuration.sandbox_provider
        const request: RunRequest = {
          run_id: run.runId,
          attempt_id: run.attemptId,
          agent: { kind: configuration.agent_provider },
          task: "CATALOG",
          // The configured model, when there is one, is declared to its provider as a run would.
          // A listing calls no model, so without one the field (the protocol requires it) names the task.
          model: configuration.model === "" ? "catalog/listing" : configuration.model,
          prompt: "List the providers and models this agent offers with these credentials.",
          repositories: [],
          mcp_servers: [],
          skills: [],
          egress_tier: "STRICT",
          time_limit_seconds: 120,
          credential_mode: "INLINE",
          provider_credentials:
            provider === "PLATFORM_CONTAINER"
              ? placeholders(scope.value.credentials, run.attemptId)
              : scope.value.credentials
        }
        return {
          request,
          sandbox: { provider, instanceClass: "standard-2" as const, egressTier: "STRICT" as const },
          grants: [],
          model: configuration.model === "" ? null : configuration.model,
          provider: configuration.agent_provider
        }
      }),
    publish: ({ run, file }) =>
      Effect.gen(function* () {
        const discovery = yield* discoveryOf(run.organizationId, run.inputSnapshot)
        const bytes = yield* file(CATALOG_OUTPUT_PATH)
        const output = yield* decodeOutput(new TextDecoder().decode(bytes)).pipe(
          Effect.mapError((error) =>
            fail("catalog_unreadable", `The agent's catalog is not a catalog: ${error.message.split("\n")[0]}`)
          )
        )
        yield* connections.recordCatalog(run.organizationId, discovery.id, run.runId, output)
      })
  }
  return { [CATALOG_DISCOVERY]: type }
})

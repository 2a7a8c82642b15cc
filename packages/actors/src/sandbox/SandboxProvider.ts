/**
 * The sandbox-provider port (docs/interface.md: Design rules): where an attempt's agent runs.
 * Every provider ends in a runtime reached at some URL with some token (`RuntimeEndpoint`), which
 * the execute step drives with the runtime client; providers differ in how that runtime comes to
 * exist and which credential mode it needs.
 *
 * | provider | what `acquire` does | credential mode |
 * | --- | --- | --- |
 * | EXTERNAL_RUNTIME | nothing: the operator's runtime (or the local one `npm start` launches) at a configured URL | INLINE |
 * | HOSTED_SANDBOX | creates a sandbox running the runtime image through a hosted-sandbox API | INLINE |
 * | PLATFORM_CONTAINER | creates a Pod per attempt in Kubernetes | INJECTED |
 *
 * `acquire` is idempotent by attempt id (a retried step finds the sandbox it made), `release`
 * by sandbox id (releasing twice, or a sandbox already gone, succeeds).
 */
import { Context, Data, type Effect } from "effect"
import type { RuntimeEndpoint } from "../runtime/RuntimeClient.ts"
import type { InjectionGrant } from "./InjectionProxy.ts"

export type SandboxProviderName = "EXTERNAL_RUNTIME" | "HOSTED_SANDBOX" | "PLATFORM_CONTAINER"
export type InstanceClass = "standard-2" | "standard-4"

export class SandboxError extends Data.TaggedError("SandboxError")<{
  /** Unavailable: try again later; Refused: the provider will not do it (quota, bad spec); NotFound: no such sandbox. */
  readonly reason: "Unavailable" | "Refused" | "NotFound"
  readonly message: string
}> {}

export interface SandboxSpec {
  readonly organizationId: string
  readonly runId: string
  readonly attemptId: string
  readonly instanceClass: InstanceClass
  readonly egressTier: "STRICT" | "BUILD" | "DEEP_SCAN"
  /** The agent the attempt runs: AGENT_ONE cannot run on PLATFORM_CONTAINER (docs/interface.md: Errors 6). */
  readonly agent: "OPENCODE" | "AGENT_ONE" | "CUSTOM"
  /**
   * INJECTED mode only: the placeholders the run request carries and the real values the egress
   * proxy may put in their place, per host. INLINE providers ignore them.
   */
  readonly grants: ReadonlyArray<InjectionGrant>
}

export interface Sandbox {
  readonly id: string
  readonly provider: SandboxProviderName
  readonly endpoint: RuntimeEndpoint
  readonly credentialMode: "INLINE" | "INJECTED"
}

export interface SandboxProviderShape {
  readonly name: SandboxProviderName
  readonly acquire: (spec: SandboxSpec) => Effect.Effect<Sandbox, SandboxError>
  /** By id alone: a step that releases after a restart knows no more than what it recorded. */
  readonly release: (sandbox: Pick<Sandbox, "id" | "provider">) => Effect.Effect<void, SandboxError>
}

export class SandboxProvider extends Context.Service<SandboxProvider, SandboxProviderShape>()(
  "bosun/actors/SandboxProvider"
) {}

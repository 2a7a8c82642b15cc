/**
 * The workflow types this server runs (`WorkflowTypes` port of `RunAttemptWorkflow`): per
 * `workflow_type`, how an attempt's run request is prepared and how its result is published.
 * A run of a type not listed fails its attempt with `unknown_workflow_type`, not retried.
 */
import { type WorkflowType, WorkflowTypes } from "@bosun/actors/attempt/AttemptPorts"
import { Effect, Layer } from "effect"
import { catalogDiscoveryWorkflow } from "../../features/agentConnections/CatalogDiscoveryWorkflow.ts"
import { deepScanWorkflow } from "../../features/deepScans/DeepScanWorkflow.ts"
import { memoryDistillWorkflow } from "../../features/memories/MemoryDistillWorkflow.ts"
import { reviewWorkflow } from "../../features/reviews/ReviewWorkflow.ts"
import { workItemImplementWorkflow } from "../../features/workItems/WorkItemImplementWorkflow.ts"
import { workItemIntakeWorkflow } from "../../features/workItems/WorkItemIntakeWorkflow.ts"

const registry = (types: Readonly<Record<string, WorkflowType>>) =>
  WorkflowTypes.of({ get: (workflowType) => (Object.hasOwn(types, workflowType) ? types[workflowType] : undefined) })

/** Production's workflow types, built with the services they need (repositories, clients). */
export const productionWorkflowTypes = Effect.map(
  Effect.all([
    catalogDiscoveryWorkflow,
    reviewWorkflow,
    workItemIntakeWorkflow,
    workItemImplementWorkflow,
    deepScanWorkflow,
    memoryDistillWorkflow
  ]),
  ([catalog, review, intake, implement, deepScan, distill]) => ({
    ...catalog,
    ...review,
    ...intake,
    ...implement,
    ...deepScan,
    ...distill
  })
)

/** The given types (built with what they need), registered; tests add theirs to production's this way. */
export const layerWorkflowTypes = <E, R>(types: Effect.Effect<Readonly<Record<string, WorkflowType>>, E, R>) =>
  Layer.effect(WorkflowTypes, Effect.map(types, registry))

export const WorkflowTypesLive = layerWorkflowTypes(productionWorkflowTypes)

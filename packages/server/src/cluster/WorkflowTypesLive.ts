/**
 * The workflow types this server runs (`WorkflowTypes` port of `RunAttemptWorkflow`): per
 * `workflow_type`, how an attempt's run request is prepared and how its result is published.
 * A run of a type not listed fails its attempt with `unknown_workflow_type`, not retried.
 */
import { type WorkflowType, WorkflowTypes } from "@bosun/actors/attempt/AttemptPorts"
import { Effect, Layer } from "effect"

const registry = (types: Readonly<Record<string, WorkflowType>>) =>
  WorkflowTypes.of({ get: (workflowType) => (Object.hasOwn(types, workflowType) ? types[workflowType] : undefined) })

/** The types, built with the services they need (repositories, clients). */
export const layerWorkflowTypes = <E, R>(types: Effect.Effect<Readonly<Record<string, WorkflowType>>, E, R>) =>
  Layer.effect(WorkflowTypes, Effect.map(types, registry))

/** Production's workflow types. */
export const WorkflowTypesLive = Layer.succeed(WorkflowTypes, registry({}))

/**
 * The workflow types this server runs (`WorkflowTypes` port of `RunAttemptWorkflow`): per
 * `workflow_type`, how an attempt's run request is prepared and how its result is published.
 * A run of a type not listed here fails its attempt with `unknown_workflow_type`, not retried.
 */
import { type WorkflowType, WorkflowTypes } from "@bosun/actors/attempt/AttemptPorts"
import { Layer } from "effect"

export const layerWorkflowTypes = (types: Readonly<Record<string, WorkflowType>>) =>
  Layer.succeed(
    WorkflowTypes,
    WorkflowTypes.of({ get: (workflowType) => (Object.hasOwn(types, workflowType) ? types[workflowType] : undefined) })
  )

/**
 * The runs slice as layers: reading runs (and the runs gauge's counts) and its HTTP group with
 * the live run stream. Runs are written by the actors, not here.
 */
import { Layer } from "effect"
import { RunStreamHub } from "./RunStreamHub.ts"
import { WorkflowRunsHttp } from "./WorkflowRunsHttp.ts"
import { RunCountsLive, WorkflowRunsRepo } from "./WorkflowRunsRepo.ts"

export const RunsLive = RunCountsLive.pipe(Layer.provideMerge(WorkflowRunsRepo.layer))

export const RunsHttpLive = WorkflowRunsHttp.pipe(Layer.provide(RunStreamHub.layer))

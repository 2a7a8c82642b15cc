/**
 * `GET .../workflow-runs/{run_id}` (spec: Organization endpoints): the run and its attempts.
 */
import { BosunApi, ErrorCodes, NotFound } from "@bosun/domain"
import { Effect, Option } from "effect"
import { WorkflowRunsRepo } from "../persistence/WorkflowRunsRepo.ts"
import { group } from "./ApiGroup.ts"
import { OrgAccess } from "./OrgAccess.ts"

export const WorkflowRunsHttp = group(
  BosunApi,
  "workflowRuns",
  Effect.fn(function* (handlers) {
    const access = yield* OrgAccess
    const runs = yield* WorkflowRunsRepo
    return handlers.handle("get", ({ params }) =>
      Effect.gen(function* () {
        yield* access.member(params.organization_id)
        const found = yield* runs.find(params.organization_id, params.run_id)
        if (Option.isNone(found)) {
          return yield* NotFound.fromCode(ErrorCodes.notFound, "No workflow run has this id in this organization")
        }
        return { data: { attempts: found.value.attempts, run: found.value.run } }
      })
    )
  })
)

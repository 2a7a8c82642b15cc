/**
 * The deep-scans slice as layers: scans, their findings and schedules, the schedules' cron (a
 * runner's background work), and its HTTP group.
 */
import { Layer } from "effect"
import { DeepScanFindingsRepo } from "./DeepScanFindingsRepo.ts"
import { DeepScanSchedulesRepo } from "./DeepScanSchedulesRepo.ts"
import { DeepScansHttp } from "./DeepScansHttp.ts"
import { DeepScansRepo } from "./DeepScansRepo.ts"

export const DeepScansLive = Layer.mergeAll(
  DeepScansRepo.layer,
  DeepScanFindingsRepo.layer,
  DeepScanSchedulesRepo.layer
)

export { DeepScanCronLive } from "./DeepScanSchedules.ts"

export const DeepScansHttpLive = DeepScansHttp

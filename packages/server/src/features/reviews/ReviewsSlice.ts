/**
 * The reviews slice as layers: its findings, and the delivery of decided reviews to the
 * `bosun-effects` registry. A review's run is a workflow type (`ReviewWorkflow`), wired with the
 * others by the cluster.
 */
import { ReviewFindingsRepo } from "./ReviewFindingsRepo.ts"

export const ReviewsLive = ReviewFindingsRepo.layer

export { ReviewDeliveryHandlersLive } from "./ReviewDelivery.ts"

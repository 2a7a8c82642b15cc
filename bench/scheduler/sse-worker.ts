/**
 * A worker thread of `subscribeMany` (`SseSubscribers.ts`): opens its share of the SSE
 * subscriptions over the shared records, says so once every connection is up, and keeps reading
 * until the main thread terminates it.
 */
import { parentPort, workerData } from "node:worker_threads"
import { openShare, type WorkerInput } from "./SseSubscribers.ts"

await openShare(workerData as WorkerInput)
parentPort?.postMessage("connected")

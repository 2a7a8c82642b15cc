/**
 * The SSE subscribers of `npm run bench:scheduler`, the same for Bosun's run stream and the bare
 * baseline: one `node:http` connection each (no pooling), parsed only as far as the `id:` line,
 * recording for each sequence the wall-clock time (epoch ms, sub-millisecond) its event arrived —
 * all events of one socket read share that read's time. A subscription does not wait for the
 * response: a server may hold its headers back until the first event.
 *
 * A thousand subscribers reading the same bursts on one thread would measure that thread's queue
 * more than the server, so `subscribeMany` spreads them over worker threads
 * (`sse-worker.ts`), which record into shared memory the main thread reads.
 */
import * as http from "node:http"
import { Worker } from "node:worker_threads"

export const now = () => performance.timeOrigin + performance.now()

/** Counters per subscriber, in an Int32Array of `STATS` slots each. */
const RECEIVED = 0
const DUPLICATES = 1
const MAX_SEQ = 2
const STATUS = 3
const RECONNECTS = 4
const FAILED = 5
export const STATS = 6

/** One subscription's record: `receipts[seq]` is when `seq` arrived (0: not yet); seqs past its length are dropped. */
export class Subscriber {
  readonly receipts: Float64Array
  readonly stats: Int32Array
  private request: http.ClientRequest | undefined
  constructor(receipts: Float64Array, stats: Int32Array) {
    this.receipts = receipts
    this.stats = stats
  }
  get received() {
    return Atomics.load(this.stats, RECEIVED)
  }
  get duplicates() {
    return Atomics.load(this.stats, DUPLICATES)
  }
  get maxSeq() {
    return Atomics.load(this.stats, MAX_SEQ)
  }
  /** The response status once the headers came (0 before). */
  get status() {
    return Atomics.load(this.stats, STATUS)
  }
  /** `event: reconnect`: the server ended the stream (`BOSUN_SSE_STREAM_DURATION`). */
  get reconnects() {
    return Atomics.load(this.stats, RECONNECTS)
  }
  get failed() {
    return Atomics.load(this.stats, FAILED) !== 0
  }

  /** Opens the subscription; resolves once its TCP connection is up (or it failed). */
  open(url: string, headers: Readonly<Record<string, string>>) {
    const connected = Promise.withResolvers<void>()
    const request = http.get(url, { agent: false, headers: { accept: "text/event-stream", ...headers } })
    this.request = request
    request.once("socket", (socket) => {
      socket.setNoDelay(true)
      socket.once("connect", () => connected.resolve())
    })
    request.once("error", () => {
      Atomics.store(this.stats, FAILED, 1)
      connected.resolve()
    })
    request.once("response", (response) => {
      Atomics.store(this.stats, STATUS, response.statusCode ?? 0)
      response.setEncoding("utf8")
      let buffered = ""
      response.on("data", (chunk: string) => {
        const at = now()
        buffered += chunk
        let start = 0
        let end = buffered.indexOf("\n\n")
        while (end !== -1) {
          if (buffered.startsWith("id: ", start)) {
            this.record(Number.parseInt(buffered.slice(start + 4, buffered.indexOf("\n", start)), 10), at)
          } else if (buffered.startsWith("event: reconnect", start)) {
            Atomics.add(this.stats, RECONNECTS, 1)
          }
          start = end + 2
          end = buffered.indexOf("\n\n", start)
        }
        buffered = buffered.slice(start)
      })
    })
    return connected.promise
  }

  close() {
    this.request?.destroy()
  }

  private record(seq: number, at: number) {
    if (!(seq < this.receipts.length)) return
    if (this.receipts[seq] !== 0) {
      Atomics.add(this.stats, DUPLICATES, 1)
      return
    }
    this.receipts[seq] = at
    Atomics.add(this.stats, RECEIVED, 1)
    if (seq > Atomics.load(this.stats, MAX_SEQ)) Atomics.store(this.stats, MAX_SEQ, seq)
  }
}

/** One subscription on this thread, recording sequences below `width`. */
export const subscribe = (url: string, headers: Readonly<Record<string, string>>, width = 4096) => {
  const subscriber = new Subscriber(new Float64Array(width), new Int32Array(STATS))
  void subscriber.open(url, headers)
  return subscriber
}

export interface WorkerInput {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly width: number
  readonly receipts: SharedArrayBuffer
  readonly stats: SharedArrayBuffer
  readonly from: number
  readonly count: number
  readonly concurrency: number
}

/** Opens subscribers `from` .. `from + count` over the shared records, `concurrency` connecting at a time. */
export const openShare = async (input: WorkerInput) => {
  const subscribers = Array.from(
    { length: input.count },
    (_, i) =>
      new Subscriber(
        new Float64Array(input.receipts, (input.from + i) * input.width * 8, input.width),
        new Int32Array(input.stats, (input.from + i) * STATS * 4, STATS)
      )
  )
  let next = 0
  const worker = async () => {
    while (next < subscribers.length) {
      const subscriber = subscribers[next++]
      if (subscriber !== undefined) await subscriber.open(input.url, input.headers)
    }
  }
  await Promise.all(Array.from({ length: Math.min(input.concurrency, subscribers.length) }, worker))
  return subscribers
}

/**
 * `count` subscriptions spread over `threads` worker threads, recording sequences below `width`;
 * resolves once every connection is up. Its subscribers are read-only views; `close` ends them all.
 */
export const subscribeMany = async (
  count: number,
  url: string,
  headers: Readonly<Record<string, string>>,
  options: { readonly threads: number; readonly width: number }
) => {
  const receipts = new SharedArrayBuffer(count * options.width * 8)
  const stats = new SharedArrayBuffer(count * STATS * 4)
  const subscribers = Array.from(
    { length: count },
    (_, i) =>
      new Subscriber(
        new Float64Array(receipts, i * options.width * 8, options.width),
        new Int32Array(stats, i * STATS * 4, STATS)
      )
  )
  const threads = Math.max(1, Math.min(options.threads, count))
  const workers = Array.from({ length: threads }, (_, t) => {
    const from = Math.floor((t * count) / threads)
    const input: WorkerInput = {
      url,
      headers,
      width: options.width,
      receipts,
      stats,
      from,
      count: Math.floor(((t + 1) * count) / threads) - from,
      concurrency: Math.ceil(50 / threads)
    }
    return new Worker(new URL("./sse-worker.ts", import.meta.url), { workerData: input })
  })
  const close = () => Promise.all(workers.map((worker) => worker.terminate())).then(() => undefined)
  try {
    await Promise.all(
      workers.map(
        (worker) =>
          new Promise<void>((resolve, reject) => {
            worker.once("message", () => resolve())
            worker.once("error", reject)
            worker.once("exit", (code) => reject(new Error(`an SSE worker exited with ${code}`)))
          })
      )
    )
  } catch (error) {
    await close()
    throw error
  }
  return { subscribers, close }
}

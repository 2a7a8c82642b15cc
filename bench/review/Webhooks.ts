/**
 * GitHub webhook deliveries for `npm run bench:review`: payloads shaped like GitHub's, signed as
 * GitHub signs them (`X-Hub-Signature-256`, HMAC-SHA256 of the raw body), posted over keep-alive
 * `node:http` connections, and an open-loop sender that fires them by the clock, never waiting for
 * an answer before the next. It measures one request → response; what a delivery causes later is
 * the benchmark's business.
 */
import { createHmac } from "node:crypto"
import * as http from "node:http"

/** Epoch milliseconds with sub-millisecond resolution (monotonic within the process). */
export const now = () => performance.timeOrigin + performance.now()

export interface Delivery {
  readonly id: string
  readonly event: string
  readonly body: string
  readonly signature: string
}

export const sign = (secret: string, id: string, event: string, body: string): Delivery => ({
  id,
  event,
  body,
  signature: `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`
})

export interface Answer {
  /** 0 when the request failed without an answer. */
  readonly status: number
  readonly body: string
  /** Request issued → the answer's last byte, ms. */
  readonly ms: number
}

/** A client for one webhook URL on keep-alive connections (opened as the load needs them). */
export const webhookClient = (url: string, appId: number) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1024 })
  const target = new URL(url)
  const post = (delivery: Delivery) =>
    new Promise<Answer>((resolve) => {
      const started = now()
      const request = http.request(
        target,
        {
          method: "POST",
          agent,
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(delivery.body),
            "user-agent": "GitHub-Hookshot/bench",
            "x-github-delivery": delivery.id,
            "x-github-event": delivery.event,
            "x-github-hook-installation-target-type": "integration",
            "x-github-hook-installation-target-id": String(appId),
            "x-hub-signature-256": delivery.signature
          }
        },
        (response) => {
          let body = ""
          response.setEncoding("utf8")
          response.on("data", (chunk: string) => {
            body += chunk
          })
          response.on("end", () => resolve({ status: response.statusCode ?? 0, body, ms: now() - started }))
          response.on("error", (error) => resolve({ status: 0, body: error.message, ms: now() - started }))
        }
      )
      request.on("error", (error) => resolve({ status: 0, body: error.message, ms: now() - started }))
      request.end(delivery.body)
    })
  return { post, close: () => agent.destroy() }
}

export interface Fired<A> {
  readonly value: A
  /** How late the send was against its slot, ms (the sender's own lag). */
  readonly lateMs: number
}

/**
 * Calls `send(i)` for i in [0, count) at `start + i / rate` seconds, by the clock: a slow answer
 * delays no later send. Answers every result once all have settled, in order.
 */
export const openLoop = async <A>(count: number, rate: number, send: (index: number) => Promise<A>) => {
  const pending: Array<Promise<Fired<A>>> = []
  const start = now()
  const slot = (index: number) => start + (index * 1000) / rate
  await new Promise<void>((resolve) => {
    let next = 0
    const tick = () => {
      const at = now()
      while (next < count && slot(next) <= at) {
        const index = next++
        const lateMs = now() - slot(index)
        pending.push(send(index).then((value) => ({ value, lateMs })))
      }
      if (next >= count) return resolve()
      setTimeout(tick, Math.max(0, slot(next) - now()))
    }
    tick()
  })
  return Promise.all(pending)
}

const ACCOUNT = { id: 71_001, login: "acme", type: "Organization" } as const

/** What the payloads say about the one repository and installation of the benchmark. */
export interface World {
  readonly installationId: number
  readonly appId: number
  readonly repositoryId: number
  readonly repository: string
}

const eventRepository = (world: World) => ({
  id: world.repositoryId,
  name: world.repository.split("/")[1],
  full_name: world.repository,
  private: true,
  owner: ACCOUNT,
  default_branch: "main"
})

export const installationCreated = (world: World) =>
  JSON.stringify({
    action: "created",
    installation: { id: world.installationId, account: ACCOUNT, app_id: world.appId, target_type: "Organization" },
    repositories: [
      {
        id: world.repositoryId,
        name: world.repository.split("/")[1],
        full_name: world.repository,
        private: true
      }
    ],
    sender: { id: 1, login: "octocat" }
  })

export const pullRequestEvent = (
  world: World,
  pr: { readonly action: string; readonly number: number; readonly head: string; readonly base: string }
) =>
  JSON.stringify({
    action: pr.action,
    number: pr.number,
    ...(pr.action === "labeled" ? { label: { id: 208_045_946, name: "bench", color: "f29513" } } : {}),
    pull_request: {
      id: 6_000_000 + pr.number,
      number: pr.number,
      title: `Change ${pr.number}`,
      state: "open",
      draft: false,
      merged: false,
      changed_files: 1,
      user: { id: 4_001, login: "dev-anna", type: "User" },
      head: { sha: pr.head, ref: `feature-${pr.number}`, repo: { id: world.repositoryId } },
      base: { sha: pr.base, ref: "main", repo: { id: world.repositoryId } }
    },
    repository: eventRepository(world),
    installation: { id: world.installationId },
    sender: { id: 4_001, login: "dev-anna" }
  })

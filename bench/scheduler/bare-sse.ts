/**
 * The fan-out baseline of `npm run bench:scheduler`: a bare `node:http` SSE server on
 * 127.0.0.1:`argv[2]`, in its own process like the Bosun server. `GET /stream` holds an SSE
 * connection open; `GET /connections` answers how many are open; `POST /go` with
 * `{"batches": [{"atMs", "count"}]}` writes, `atMs` after the request, the next `count` events
 * (shaped like Bosun's run events, `id:` the sequence) to every connection in one write each —
 * the batches the Bosun run's flushes committed, at the same offsets; `GET /sent` answers, per
 * sequence, the wall-clock time (epoch ms) its batch began to be written.
 */
import * as http from "node:http"

const port = Number(process.argv[2])
const connections = new Set<http.ServerResponse>()
const sent: Array<number> = [0]
const now = () => performance.timeOrigin + performance.now()

const eventText = (seq: number, at: number) =>
  `id: ${seq}\ndata: ${JSON.stringify({
    seq,
    attempt: 1,
    type: "agent.event",
    data: { type: "tick", n: seq, t: at },
    created_at: new Date(at).toISOString()
  })}\n\n`

const go = (batches: ReadonlyArray<{ readonly atMs: number; readonly count: number }>) => {
  const start = now()
  let seq = 0
  for (const batch of batches) {
    setTimeout(
      () => {
        const at = now()
        let text = ""
        for (let i = 0; i < batch.count; i++) {
          seq++
          sent[seq] = at
          text += eventText(seq, at)
        }
        for (const response of connections) response.write(text)
      },
      Math.max(0, start + batch.atMs - now())
    )
  }
}

const server = http.createServer((request, response) => {
  if (request.url === "/stream") {
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    response.flushHeaders()
    connections.add(response)
    request.socket.setNoDelay(true)
    response.on("close", () => connections.delete(response))
    return
  }
  if (request.url === "/connections") return response.end(String(connections.size))
  if (request.url === "/sent") return response.end(JSON.stringify(sent))
  if (request.url === "/go" && request.method === "POST") {
    let body = ""
    request.on("data", (chunk: Buffer) => (body += chunk.toString()))
    request.on("end", () => {
      go((JSON.parse(body) as { batches: Array<{ atMs: number; count: number }> }).batches)
      response.end("ok")
    })
    return
  }
  response.statusCode = 404
  response.end()
})
server.maxConnections = 10_000
server.listen(port, "127.0.0.1")

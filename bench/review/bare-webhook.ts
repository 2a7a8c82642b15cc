/**
 * The webhook-ack baseline of `npm run bench:review`: a bare `node:http` server on
 * 127.0.0.1:`argv[2]`, in its own process like the Bosun server, that reads a delivery's body,
 * verifies its `X-Hub-Signature-256` against BENCH_WEBHOOK_SECRET with the library Bosun uses
 * (`@octokit/webhooks-methods`) and answers 202 with Bosun's body — no routing library, no
 * database, no queue. Any other request answers 200 (the readiness probe).
 */
import { createServer } from "node:http"
import { verify } from "@octokit/webhooks-methods"

const secret = process.env.BENCH_WEBHOOK_SECRET ?? ""
const accepted = JSON.stringify({ data: { accepted: true, duplicate: false } })
const refused = JSON.stringify({ error: { code: "unauthorized", message: "The signature does not match" } })

createServer((request, response) => {
  if (request.method !== "POST") {
    response.writeHead(200, { "content-type": "text/plain" })
    response.end("ok")
    return
  }
  const chunks: Array<Buffer> = []
  request.on("data", (chunk: Buffer) => chunks.push(chunk))
  request.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8")
    const signature = request.headers["x-hub-signature-256"]
    const checked = typeof signature === "string" ? verify(secret, body, signature).catch(() => false) : false
    void Promise.resolve(checked).then((ok) => {
      response.writeHead(ok ? 202 : 401, { "content-type": "application/json" })
      response.end(ok ? accepted : refused)
    })
  })
}).listen(Number(process.argv[2]), "127.0.0.1")

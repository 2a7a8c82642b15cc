/**
 * The baseline for `bench:http`: a bare `node:http` server answering the same two routes with
 * the same bodies and an `X-Request-ID`, and nothing else (no routing library, no validation,
 * no logging, no database). The port comes as the first argument.
 */
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"

const healthz = JSON.stringify({ status: "ok" })
const instance = JSON.stringify({ data: { name: "bosun", version: "0.1.0", api_version: "v1" } })

createServer((req, res) => {
  const body = req.url === "/healthz" ? healthz : req.url === "/api/v1/instance" ? instance : undefined
  res.writeHead(body ? 200 : 404, { "content-type": "application/json", "x-request-id": randomUUID() })
  res.end(body ?? "{}")
}).listen(Number(process.argv[2]), "127.0.0.1")

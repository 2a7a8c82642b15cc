/**
 * Git's smart HTTP protocol for the fakes (test code only): one request served by running
 * `git http-backend` as a CGI child over a bare repository, so a real `git clone`/`git fetch` sees
 * what it sees on github.com (protocol v2, gzip-compressed negotiation). Authentication and routing
 * belong to the caller; this only fetches: pushes (`git-receive-pack`) and git's old "dumb"
 * protocol are refused with 403.
 */
import { spawn } from "node:child_process"
import type { IncomingHttpHeaders, ServerResponse } from "node:http"

export interface GitSmartHttpRequest {
  readonly method: string
  /** What follows the repository in the URL: `info/refs` or `git-upload-pack`. */
  readonly service: string
  /** The query string without its `?` (`service=git-upload-pack` for the advertisement). */
  readonly query: string
  readonly headers: IncomingHttpHeaders
  /** The whole request body as received (gzip-compressed when git compressed it). */
  readonly body: Buffer
  /** Who the caller authenticated as, for the backend's logs. */
  readonly remoteUser?: string
}

const header = (value: string | ReadonlyArray<string> | undefined) =>
  typeof value === "string" ? value : value?.join(", ")

const refuse = (res: ServerResponse, status: number, message: string) => {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" })
  res.end(`${message}\n`)
}

/**
 * Serves `request` from the bare repository at `repositoryDir`, streaming the backend's answer to
 * `res`; resolves once the answer is complete.
 */
export const serveGitSmartHttp = (
  repositoryDir: string,
  request: GitSmartHttpRequest,
  res: ServerResponse
): Promise<void> => {
  const params = new URLSearchParams(request.query)
  const fetching =
    (request.method === "GET" && request.service === "info/refs" && params.get("service") === "git-upload-pack") ||
    (request.method === "POST" && request.service === "git-upload-pack")
  if (!fetching) {
    const pushing = request.service === "git-receive-pack" || params.get("service") === "git-receive-pack"
    refuse(res, 403, pushing ? "Pushing is not supported by this server." : "Only git's smart HTTP fetch is served.")
    return Promise.resolve()
  }
  return new Promise<void>((resolve) => {
    // GIT_PROJECT_ROOT is the repository itself, so PATH_INFO is just the service: no repository
    // name from the URL ever reaches the file system.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      GIT_PROJECT_ROOT: repositoryDir,
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: `/${request.service}`,
      QUERY_STRING: request.query,
      REQUEST_METHOD: request.method,
      CONTENT_TYPE: request.headers["content-type"] ?? "",
      REMOTE_USER: request.remoteUser ?? "",
      REMOTE_ADDR: "127.0.0.1"
    }
    // http-backend reads exactly CONTENT_LENGTH bytes when it is set (the body as sent, still
    // compressed) and inflates it itself when HTTP_CONTENT_ENCODING is gzip or x-gzip.
    if (request.method === "POST") env.CONTENT_LENGTH = String(request.body.length)
    const encoding = header(request.headers["content-encoding"])
    if (encoding !== undefined) env.HTTP_CONTENT_ENCODING = encoding
    // Protocol v2 is asked for in this header; http-backend passes it on to upload-pack as GIT_PROTOCOL.
    const protocol = header(request.headers["git-protocol"])
    if (protocol !== undefined) env.HTTP_GIT_PROTOCOL = protocol
    for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PROTOCOL"]) delete env[name]

    const child = spawn("git", ["http-backend"], { env, stdio: ["pipe", "pipe", "pipe"] })
    let head = Buffer.alloc(0)
    let headersSent = false
    let stderr = ""
    let finished = false
    const finish = (failure?: string) => {
      if (finished) return
      finished = true
      if (failure === undefined) res.end()
      else if (!res.headersSent) refuse(res, 500, failure)
      else res.destroy(new Error(failure))
      resolve()
    }

    /** Writes the CGI headers (up to the blank line) as the HTTP status and headers; the rest is body. */
    const sendHeaders = (block: string) => {
      let status = 200
      const headers: Record<string, string> = {}
      for (const line of block.split(/\r?\n/)) {
        const colon = line.indexOf(":")
        if (colon <= 0) continue
        const name = line.slice(0, colon).trim()
        const value = line.slice(colon + 1).trim()
        if (name.toLowerCase() === "status") status = Number.parseInt(value, 10) || 500
        else headers[name] = value
      }
      res.writeHead(status, headers)
      headersSent = true
    }

    child.stdout.on("data", (chunk: Buffer) => {
      if (headersSent) {
        res.write(chunk)
        return
      }
      head = Buffer.concat([head, chunk])
      const text = head.toString("latin1")
      const crlf = text.indexOf("\r\n\r\n")
      const lf = text.indexOf("\n\n")
      const end =
        crlf >= 0 && (lf < 0 || crlf < lf) ? { at: crlf, length: 4 } : lf >= 0 ? { at: lf, length: 2 } : undefined
      if (end === undefined) return
      sendHeaders(text.slice(0, end.at))
      const rest = head.subarray(end.at + end.length)
      if (rest.length > 0) res.write(rest)
    })
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("error", (error) => finish(`git http-backend failed: ${error.message}`))
    child.on("close", (code) =>
      finish(headersSent ? undefined : `git http-backend exited with ${code} before answering: ${stderr.trim()}`)
    )
    // The backend may answer (an error) without reading the body; a closed pipe is not our failure.
    child.stdin.on("error", () => {})
    child.stdin.end(request.method === "POST" ? request.body : undefined)
  })
}

/**
 * A local OpenAI-compatible model for agent tests (test code only) on 127.0.0.1:
 * `POST /v1/chat/completions` (OpenCode), streamed as SSE when the client asks for `stream: true`,
 * else one JSON answer; and `POST /v1/responses` (Codex, which speaks only the Responses API),
 * always streamed as Responses SSE events. A script of turns decides what the model says:
 * - a request that offers `tools` is an agent step and takes the next turn: text, tool calls
 *   (in the agent's own tool names and argument shapes, see the tests), an HTTP error (with
 *   `retry-after-ms`, which OpenCode honours), or a dropped connection; with no turn left it
 *   answers 400, so a runaway agent fails at once instead of retrying;
 * - a request without tools (OpenCode's session-title call) is answered with `title` as text;
 * - with `mcpTools`, `/mcp` is a minimal streamable-HTTP MCP server (initialize, tools/list,
 *   tools/call) so an agent's MCP configuration can be seen to work.
 * Every request is recorded (path, headers, body) so a test can assert what the agent sent: its
 * API key, the tool results of the previous step, the system prompt.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer } from "effect"

export interface FakeModelUsage {
  /** `prompt_tokens` reported for the answer. */
  readonly input: number
  /** `completion_tokens` reported for the answer. */
  readonly output: number
}

/** A tool call's arguments, or a function of the request that produces them. */
export type FakeModelArguments = Readonly<Record<string, unknown>> | ((request: FakeModelRequest) => unknown)

export interface FakeModelToolCall {
  readonly name: string
  readonly arguments: FakeModelArguments
}

export type FakeModelTurn =
  | { readonly type: "text"; readonly text: string; readonly usage?: FakeModelUsage }
  | {
      readonly type: "tools"
      readonly calls: ReadonlyArray<FakeModelToolCall>
      /** Said before the calls, in the same answer. */
      readonly text?: string
      readonly usage?: FakeModelUsage
    }
  | {
      readonly type: "error"
      readonly status: number
      readonly message: string
      /** Sent as `retry-after-ms`: how long a retrying client waits. */
      readonly retryAfterMs?: number
      /** How many agent requests in a row get this answer (default 1; `Infinity` for all). */
      readonly times?: number
    }
  | { readonly type: "hang-up"; readonly times?: number }

export interface FakeModelScript {
  readonly turns: ReadonlyArray<FakeModelTurn>
  /** The answer to requests without tools (title generation). */
  readonly title?: string
  /** Tools of the MCP server at `/mcp`; without them `/mcp` answers 404. */
  readonly mcpTools?: ReadonlyArray<{ readonly name: string; readonly description: string }>
}

export interface FakeModelRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  /** Lower-case names; repeated headers joined with ", ". */
  readonly headers: Readonly<Record<string, string>>
  /** The parsed JSON body, or the raw text when it is not JSON. */
  readonly body: unknown
  readonly kind: "agent" | "auxiliary" | "mcp" | "other"
  /** For agent requests: the index of the turn that answered. */
  readonly turn?: number
}

export interface FakeModelServerHandle {
  /** `http://127.0.0.1:<port>/v1`: the base URL an OpenAI-compatible client is given. */
  readonly url: string
  /** `http://127.0.0.1:<port>`. */
  readonly origin: string
  readonly requests: ReadonlyArray<FakeModelRequest>
  /** The agent steps (requests offering tools), in arrival order. */
  readonly agentRequests: () => ReadonlyArray<FakeModelRequest>
  /** The usage the fake reported to agent steps, summed. */
  readonly reportedUsage: () => FakeModelUsage
  readonly close: () => Promise<void>
}

const DEFAULT_USAGE: FakeModelUsage = { input: 100, output: 10 }

const record = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined

/** The items of a Responses request's `input` (messages, function calls, function call outputs). */
export const responsesInput = (request: FakeModelRequest): ReadonlyArray<Record<string, unknown>> => {
  const input = record(request.body)?.input
  if (!Array.isArray(input)) return []
  return input.flatMap((item) => {
    const value = record(item)
    return value === undefined ? [] : [value]
  })
}

/** The messages of a recorded request: chat `messages`, or the message items of a Responses `input`. */
export const chatMessages = (request: FakeModelRequest): ReadonlyArray<Record<string, unknown>> => {
  const messages = record(request.body)?.messages
  if (!Array.isArray(messages)) {
    return responsesInput(request).filter((item) => item.type === "message" || item.type === undefined)
  }
  return messages.flatMap((message) => {
    const value = record(message)
    return value === undefined ? [] : [value]
  })
}

/** The text of a message, whether its content is a string or an array of parts. */
export const messageText = (message: Record<string, unknown>): string => {
  const content = message.content
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  return content.map((part) => (typeof record(part)?.text === "string" ? String(record(part)?.text) : "")).join("")
}

/** Everything the system messages of a request say (and a Responses request's `instructions` and developer messages). */
export const systemPrompt = (request: FakeModelRequest): string => {
  const instructions = record(request.body)?.instructions
  return [
    ...(typeof instructions === "string" ? [instructions] : []),
    ...chatMessages(request)
      .filter((message) => message.role === "system" || message.role === "developer")
      .map(messageText)
  ].join("\n")
}

const describedTool = (tool: Record<string, unknown> | undefined, prefix = "") =>
  typeof tool?.name === "string"
    ? [{ name: `${prefix}${tool.name}`, description: typeof tool.description === "string" ? tool.description : "" }]
    : []

/**
 * The names of the tools a request offers, and each one's description: chat `{function: {name}}`,
 * Responses `{type: "function", name}`, and the tools of a Responses namespace as `<namespace>.<name>`.
 */
export const offeredTools = (request: FakeModelRequest): ReadonlyArray<{ name: string; description: string }> => {
  const tools = record(request.body)?.tools
  if (!Array.isArray(tools)) return []
  return tools.flatMap((entry) => {
    const tool = record(entry)
    const fn = record(tool?.function)
    if (fn !== undefined) return describedTool(fn)
    if (tool?.type === "namespace" && Array.isArray(tool.tools)) {
      return tool.tools.flatMap((inner) => describedTool(record(inner), `${String(tool.name)}.`))
    }
    return tool?.type === "function" ? describedTool(tool) : []
  })
}

/**
 * The tool results a request sends back: `{id, content}` per chat `tool` message (`tool_call_id`)
 * or Responses `function_call_output` item (`call_id`).
 */
export const toolResults = (request: FakeModelRequest): ReadonlyArray<{ id: string; content: string }> => {
  const outputs = responsesInput(request).filter((item) => item.type === "function_call_output")
  if (outputs.length > 0) {
    return outputs.map((item) => ({
      id: String(item.call_id),
      content: typeof item.output === "string" ? item.output : messageText({ content: item.output })
    }))
  }
  return chatMessages(request)
    .filter((message) => message.role === "tool")
    .map((message) => ({ id: String(message.tool_call_id), content: messageText(message) }))
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")))
    req.on("end", () => resolve(body))
  })

const parse = (text: string): unknown => {
  if (text === "") return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const headersOf = (req: IncomingMessage): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return headers
}

const json = (res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { "content-type": "application/json", ...headers })
  res.end(JSON.stringify(value))
}

/** Splits a string in two, so clients see arguments and text arrive in pieces. */
const halves = (text: string): ReadonlyArray<string> =>
  text.length < 2 ? [text] : [text.slice(0, Math.floor(text.length / 2)), text.slice(Math.floor(text.length / 2))]

interface Answer {
  readonly text: string
  readonly calls: ReadonlyArray<{ readonly id: string; readonly name: string; readonly arguments: string }>
  readonly usage: FakeModelUsage
}

const completion = (res: ServerResponse, model: string, stream: boolean, answer: Answer, id: string) => {
  const created = Math.floor(Date.now() / 1000)
  const finish = answer.calls.length > 0 ? "tool_calls" : "stop"
  const usage = {
    prompt_tokens: answer.usage.input,
    completion_tokens: answer.usage.output,
    total_tokens: answer.usage.input + answer.usage.output
  }
  if (!stream) {
    return json(res, 200, {
      id,
      object: "chat.completion",
      created,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: answer.text === "" ? null : answer.text,
            ...(answer.calls.length === 0
              ? {}
              : {
                  tool_calls: answer.calls.map((call) => ({
                    id: call.id,
                    type: "function",
                    function: { name: call.name, arguments: call.arguments }
                  }))
                })
          },
          finish_reason: finish
        }
      ],
      usage
    })
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  const send = (choices: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) =>
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices, ...extra })}\n\n`)
  const delta = (value: Record<string, unknown>, finishReason: string | null = null) =>
    send([{ index: 0, delta: value, finish_reason: finishReason }])
  delta({ role: "assistant", content: "" })
  for (const piece of answer.text === "" ? [] : answer.text.split(/(?<= )/)) delta({ content: piece })
  answer.calls.forEach((call, index) => {
    delta({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] })
    for (const piece of halves(call.arguments)) delta({ tool_calls: [{ index, function: { arguments: piece } }] })
  })
  delta({}, finish)
  send([], { usage })
  res.write("data: [DONE]\n\n")
  res.end()
}

/**
 * An answer in the Responses API's streaming form (what Codex reads): `response.created`, per
 * output item `response.output_item.added`, its text or arguments in deltas, `...done`, then
 * `response.completed` with the whole output and the usage. Text said before tool calls is a
 * message item of its own, ahead of the function calls.
 */
const responses = (res: ServerResponse, model: string, answer: Answer, id: string) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  let sequence = 0
  const send = (type: string, fields: Record<string, unknown>) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`)
  const created_at = Math.floor(Date.now() / 1000)
  const response = (status: string, output: ReadonlyArray<unknown>, extra: Record<string, unknown> = {}) => ({
    id,
    object: "response",
    created_at,
    model,
    status,
    output,
    ...extra
  })
  send("response.created", { response: response("in_progress", []) })
  const output: Array<Record<string, unknown>> = []
  if (answer.text !== "") {
    const item_id = `msg_${id}`
    const at = { item_id, output_index: output.length, content_index: 0 }
    send("response.output_item.added", {
      output_index: output.length,
      item: { type: "message", id: item_id, role: "assistant", status: "in_progress", content: [] }
    })
    send("response.content_part.added", { ...at, part: { type: "output_text", text: "", annotations: [] } })
    for (const piece of answer.text.split(/(?<= )/)) send("response.output_text.delta", { ...at, delta: piece })
    send("response.output_text.done", { ...at, text: answer.text })
    const part = { type: "output_text", text: answer.text, annotations: [] }
    send("response.content_part.done", { ...at, part })
    const item = { type: "message", id: item_id, role: "assistant", status: "completed", content: [part] }
    send("response.output_item.done", { output_index: output.length, item })
    output.push(item)
  }
  for (const call of answer.calls) {
    const item = { type: "function_call", id: `fc_${call.id}`, call_id: call.id, name: call.name }
    const at = { item_id: item.id, output_index: output.length }
    send("response.output_item.added", {
      output_index: output.length,
      item: { ...item, arguments: "", status: "in_progress" }
    })
    for (const piece of halves(call.arguments)) send("response.function_call_arguments.delta", { ...at, delta: piece })
    send("response.function_call_arguments.done", { ...at, arguments: call.arguments })
    const done = { ...item, arguments: call.arguments, status: "completed" }
    send("response.output_item.done", { output_index: output.length, item: done })
    output.push(done)
  }
  send("response.completed", {
    response: response("completed", output, {
      usage: {
        input_tokens: answer.usage.input,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: answer.usage.output,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: answer.usage.input + answer.usage.output
      }
    })
  })
  res.end()
}

/** A minimal MCP server over streamable HTTP: JSON answers, no sessions, no server-sent events. */
const mcp = (res: ServerResponse, method: string, body: unknown, tools: FakeModelScript["mcpTools"]) => {
  if (method !== "POST") return json(res, 405, { error: "only POST is served" })
  const message = record(body)
  if (message?.id === undefined) {
    res.writeHead(202)
    return res.end()
  }
  const answer = (result: unknown) => json(res, 200, { jsonrpc: "2.0", id: message.id, result })
  const params = record(message.params)
  switch (message.method) {
    case "initialize":
      return answer({
        protocolVersion: typeof params?.protocolVersion === "string" ? params.protocolVersion : "2025-06-18",
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: "fake-mcp", version: "1.0.0" }
      })
    case "ping":
      return answer({})
    case "tools/list":
      return answer({
        tools: (tools ?? []).map((tool) => ({
          name: tool.name,
          description: tool.description,
          inputSchema: { type: "object", properties: { query: { type: "string" } } }
        }))
      })
    case "tools/call":
      return answer({ content: [{ type: "text", text: `fake result of ${String(params?.name)}` }] })
    default:
      return json(res, 200, {
        jsonrpc: "2.0",
        id: message.id,
        error: { code: -32601, message: `Method not found: ${String(message.method)}` }
      })
  }
}

export const startFakeModelServer = async (script: FakeModelScript): Promise<FakeModelServerHandle> => {
  const requests: Array<FakeModelRequest> = []
  let turn = 0
  let usedOfTurn = 0
  let calls = 0
  let reported: FakeModelUsage = { input: 0, output: 0 }

  const server = createServer(async (req, res) => {
    const text = await readBody(req)
    const body = parse(text)
    const path = new URL(req.url ?? "/", "http://fake").pathname
    const base = { at: Date.now(), method: req.method ?? "", path, headers: headersOf(req), body }

    if (path === "/mcp" || path.endsWith("/mcp")) {
      requests.push({ ...base, kind: "mcp" })
      if (script.mcpTools === undefined) return json(res, 404, { error: "no MCP server here" })
      return mcp(res, base.method, body, script.mcpTools)
    }
    const api = path.endsWith("/chat/completions") ? "chat" : path.endsWith("/responses") ? "responses" : undefined
    if (req.method !== "POST" || api === undefined) {
      requests.push({ ...base, kind: "other" })
      return json(res, 404, { error: { message: `Not found: ${req.method} ${path}`, type: "not_found" } })
    }
    const payload = record(body) ?? {}
    const model = typeof payload.model === "string" ? payload.model : "fake"
    const stream = payload.stream === true
    const id = api === "chat" ? `chatcmpl-fake-${requests.length + 1}` : `resp_fake_${requests.length + 1}`
    const answerWith = (answer: Answer) =>
      api === "chat" ? completion(res, model, stream, answer, id) : responses(res, model, answer, id)
    if (!Array.isArray(payload.tools) || payload.tools.length === 0) {
      requests.push({ ...base, kind: "auxiliary" })
      return answerWith({ text: script.title ?? "Fake title", calls: [], usage: DEFAULT_USAGE })
    }

    const current = script.turns[turn]
    const request: FakeModelRequest = { ...base, kind: "agent", turn }
    requests.push(request)
    if (current === undefined) {
      return json(res, 400, {
        error: { message: "The fake model has no turn left in its script", type: "invalid_request_error" }
      })
    }
    usedOfTurn++
    const times = current.type === "error" || current.type === "hang-up" ? (current.times ?? 1) : 1
    if (usedOfTurn >= times) {
      turn++
      usedOfTurn = 0
    }
    switch (current.type) {
      case "hang-up":
        return req.socket.destroy()
      case "error":
        return json(
          res,
          current.status,
          {
            error: {
              message: current.message,
              type: current.status >= 500 ? "server_error" : "invalid_request_error",
              code: null
            }
          },
          current.retryAfterMs === undefined ? {} : { "retry-after-ms": String(current.retryAfterMs) }
        )
      case "text":
      case "tools": {
        const usage = current.usage ?? DEFAULT_USAGE
        reported = { input: reported.input + usage.input, output: reported.output + usage.output }
        const answer: Answer = {
          text: current.text ?? "",
          calls:
            current.type === "text"
              ? []
              : current.calls.map((call) => ({
                  id: `call_${++calls}`,
                  name: call.name,
                  arguments: JSON.stringify(
                    typeof call.arguments === "function" ? call.arguments(request) : call.arguments
                  )
                })),
          usage
        }
        return answerWith(answer)
      }
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  const origin = `http://127.0.0.1:${port}`
  return {
    url: `${origin}/v1`,
    origin,
    requests,
    agentRequests: () => requests.filter((request) => request.kind === "agent"),
    reportedUsage: () => reported,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** The same fake for Effect tests: started with the layer, closed with its scope. */
export class FakeModelServer extends Context.Service<FakeModelServer, FakeModelServerHandle>()(
  "bosun/testing/FakeModelServer"
) {
  static readonly layer = (script: FakeModelScript) =>
    Layer.effect(
      FakeModelServer,
      Effect.acquireRelease(
        Effect.promise(() => startFakeModelServer(script)),
        (handle) => Effect.promise(() => handle.close())
      )
    )
}

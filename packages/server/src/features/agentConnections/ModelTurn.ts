/**
 * One minimal agent turn through a runtime with given credentials and model: the agent is asked
 * to answer one word, with no repository and no tools needed. It proves what a first review
 * needs — the key is accepted, the model exists, the quota allows a call — and reports the
 * provider's own error when not. It does not test a sandbox provider: the turn runs on the
 * runtime it is given (the server's embedded or configured one, or the one `bosun doctor` starts).
 */
import { randomUUID } from "node:crypto"
import { RuntimeClient, type RuntimeEndpoint } from "@bosun/actors/runtime/RuntimeClient"
import type { AgentKind, ModelTurnResult, RunRequest, RunState } from "@bosun/domain"
import { Duration, Effect, Schedule } from "effect"
import type { ProviderCredentials } from "./AgentConnectionsRepo.ts"

export const MODEL_TURN_PROMPT = "Answer with the single word OK. Do not use any tools."

/** How long the turn may take: a model that has not answered by then is reported as not answering. */
export const MODEL_TURN_TIMEOUT = Duration.seconds(120)

export interface ModelTurnInput {
  readonly endpoint: RuntimeEndpoint
  readonly agent: AgentKind
  /** `provider/model`. */
  readonly model: string
  readonly reasoningEffort?: RunRequest["reasoning_effort"]
  readonly credentials: ProviderCredentials
}

/** A result that is not a turn at all: no model could be chosen, no credentials to use. */
export const turnRefused = (model: string, message: string): ModelTurnResult => ({
  ok: false,
  model,
  message,
  tested_at: new Date().toISOString(),
  duration_ms: 0
})

const oneLine = (text: string) => text.replace(/\s*\n\s*/g, " ").slice(0, 1000)

export const runModelTurn = Effect.fn("ModelTurn.run")(function* (input: ModelTurnInput) {
  const connection = (yield* RuntimeClient).connect(input.endpoint, { retryTimes: 2 })
  const runId = `model-turn-${randomUUID()}`
  const attemptId = `${runId}:1`
  const startedAt = Date.now()
  const finish = (ok: boolean, message: string): ModelTurnResult => ({
    ok,
    model: input.model,
    message: oneLine(message),
    tested_at: new Date().toISOString(),
    duration_ms: Date.now() - startedAt
  })
  const request: RunRequest = {
    run_id: runId,
    attempt_id: attemptId,
    agent: { kind: input.agent },
    model: input.model,
    ...(input.reasoningEffort === undefined ? {} : { reasoning_effort: input.reasoningEffort }),
    prompt: MODEL_TURN_PROMPT,
    repositories: [],
    mcp_servers: [],
    skills: [],
    egress_tier: "STRICT",
    time_limit_seconds: Duration.toSeconds(MODEL_TURN_TIMEOUT),
    credential_mode: "INLINE",
    provider_credentials: input.credentials
  }
  const ended = yield* connection.start(request).pipe(
    Effect.andThen(
      connection.result(attemptId).pipe(
        Effect.repeat({
          schedule: Schedule.spaced(Duration.millis(250)),
          until: (state) => state.status !== "RUNNING"
        })
      )
    ),
    Effect.timeoutOption(Duration.sum(MODEL_TURN_TIMEOUT, Duration.seconds(10))),
    Effect.result
  )
  if (ended._tag === "Failure") return finish(false, `the agent runtime failed the turn: ${ended.failure.message}`)
  if (ended.success._tag === "None") {
    yield* Effect.ignore(connection.cancel(attemptId))
    return finish(false, `the model did not answer within ${Duration.format(MODEL_TURN_TIMEOUT)}`)
  }
  const state: RunState = ended.success.value
  if (state.status === "SUCCEEDED") {
    const tokens = state.usage.input_tokens + state.usage.output_tokens
    return finish(true, `the model answered (${tokens} tokens)`)
  }
  return finish(
    false,
    state.error === null ? `the turn ended ${state.status}` : `${state.error.message} (${state.error.code})`
  )
})

/**
 * Custom agents: a team registers a named profile in `BOSUN_RUNTIME_AGENTS` whose
 * command speaks the runtime's JSONL event format, and runs it with `agent: {kind: "CUSTOM",
 * profile}`. The format, also in the README:
 *
 * - The command starts in the workspace root with the prompt on stdin and, in its environment,
 *   `BOSUN_RUN_ID`, `BOSUN_ATTEMPT_ID`, `BOSUN_MODEL`, `BOSUN_WORKSPACE`, `BOSUN_OUTPUT_DIR`,
 *   `BOSUN_ARTIFACTS_DIR`, `BOSUN_INSTRUCTIONS` (when the request has instructions),
 *   `BOSUN_PROVIDER_CREDENTIALS` (the request's provider credentials as JSON), `BOSUN_TASK`
 *   (`AGENT`, or `CATALOG`: then the command lists its models by writing `catalog.json`, shaped
 *   as the protocol's `CatalogOutput`, to `BOSUN_OUTPUT_DIR`), the profile's
 *   `env`, and PATH, HOME, XDG_* and TMPDIR of its own — nothing else of the runtime's.
 * - Each stdout line that is a JSON object is an event, passed on as `agent.event`; any other
 *   line becomes `agent.output` `{line}`. An event `{"type": "usage", "input_tokens": n,
 *   "output_tokens": n, "cost_usd": x}` adds to the run's usage; `{"type": "error", "code",
 *   "message"}` fails the run even if the command then exits 0.
 * - Exit code 0 is success. Files written to `BOSUN_OUTPUT_DIR` and `BOSUN_ARTIFACTS_DIR` become
 *   the run's outputs and artifacts; changes in the repositories become its diff.
 */

import { Effect } from "effect"
import type { AgentProfile } from "../RuntimeConfig.ts"
import { type AgentAdapter, baseEnvironment } from "./Agent.ts"
import { runAgentProcess } from "./AgentProcess.ts"

const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0)

export const customAgent =
  (profile: AgentProfile): AgentAdapter =>
  (context) =>
    Effect.suspend(() => {
      const usage = { input_tokens: 0, output_tokens: 0, cost_usd: null as number | null }
      let reported: { code: string; message: string } | undefined
      const [command, ...args] = profile.command
      return runAgentProcess({
        command: command ?? "false",
        args,
        cwd: context.workspace,
        env: {
          ...baseEnvironment(context),
          ...(context.request.instructions === undefined ? {} : { BOSUN_INSTRUCTIONS: context.request.instructions }),
          BOSUN_PROVIDER_CREDENTIALS: JSON.stringify(context.request.provider_credentials),
          ...profile.env
        },
        grace: context.grace,
        stdin: context.request.prompt,
        onSpawn: context.onSpawn,
        runAs: context.runAs,
        onJson: (event) => {
          if (event.type === "usage") {
            usage.input_tokens += Math.round(count(event.input_tokens))
            usage.output_tokens += Math.round(count(event.output_tokens))
            if (typeof event.cost_usd === "number") usage.cost_usd = (usage.cost_usd ?? 0) + count(event.cost_usd)
          }
          if (event.type === "error") {
            reported = {
              code: typeof event.code === "string" ? event.code : "agent_error",
              message: typeof event.message === "string" ? event.message : "The agent reported an error"
            }
          }
          context.emit("agent.event", event)
        },
        onText: (line) => context.emit("agent.output", { line })
      }).pipe(
        Effect.map((exit) => ({
          ...exit,
          usage: { input_tokens: usage.input_tokens, output_tokens: usage.output_tokens, cost_usd: usage.cost_usd },
          ...(reported === undefined ? {} : { error: reported })
        }))
      )
    })

/**
 * The runtime's settings (docs/agent-runtime.md), all from the environment:
 *
 * | variable | default | meaning |
 * | --- | --- | --- |
 * | `BOSUN_RUNTIME_HOST` | `127.0.0.1` | interface to listen on |
 * | `BOSUN_RUNTIME_PORT` | `8787` | port; `0` takes any free one (the `bosun_runtime_listening` log line names it) |
 * | `BOSUN_RUNTIME_TOKEN` | required | the bearer token every `/v1` request must carry |
 * | `BOSUN_RUNTIME_DATA_DIR` | `./.bosun-runtime` | run logs and state (`runs/`, 0700), and the workspaces unless the next setting moves them |
 * | `BOSUN_RUNTIME_WORKSPACES_DIR` | `<BOSUN_RUNTIME_DATA_DIR>/workspaces` | the attempts' workspaces; as root, every directory above it must be searchable by others (agents run as users of their own: docs/agent-isolation.md) |
 * | `BOSUN_RUNTIME_MAX_RUNS` | `4` | runs at once; one more is 429 |
 * | `BOSUN_RUNTIME_HEARTBEAT` | `5 seconds` | heartbeat period of the event tail |
 * | `BOSUN_RUNTIME_CANCEL_GRACE` | `10 seconds` | SIGTERM to SIGKILL on cancel and timeout |
 * | `BOSUN_RUNTIME_WORKSPACE_RETENTION` | `1 hour` | how long a finished run's workspace is kept |
 * | `BOSUN_RUNTIME_AGENTS` | `{}` | custom agent profiles: JSON `{name: {command: [argv...], env?: {...}}}` |
 * | `BOSUN_RUNTIME_SUPERVISED` | `false` | started by a supervising process (the server's embedded runtime): stop when stdin closes, so the runtime never outlives a parent killed without warning |
 * | `BOSUN_RUNTIME_AGENT_AUTH_ORIGINS` | OpenAI's and GitHub's sign-in origins | origins `POST /v1/tools/agent-auth/fetch` may reach (comma-separated) |
 */
import * as path from "node:path"
import { Config, ConfigProvider, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"

export interface AgentProfile {
  /** The program and its arguments; run in the workspace, speaking the JSONL event format. */
  readonly command: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
}

export interface RuntimeSettings {
  readonly host: string
  readonly port: number
  readonly token: Redacted.Redacted<string>
  readonly dataDir: string
  /** Where attempts' workspaces live (absolute). */
  readonly workspacesDir: string
  readonly maxRuns: number
  readonly heartbeat: Duration.Duration
  readonly cancelGrace: Duration.Duration
  readonly workspaceRetention: Duration.Duration
  readonly profiles: ReadonlyMap<string, AgentProfile>
  /** `scheme://host[:port]` origins the agent-auth fallback may call; nothing else. */
  readonly agentAuthOrigins: ReadonlySet<string>
  readonly supervised: boolean
}

/** Where the agent CLIs sign in: OpenAI's device-code and token endpoints, GitHub's for Copilot-style logins. */
const DEFAULT_AGENT_AUTH_ORIGINS = ["https://auth.openai.com", "https://api.openai.com", "https://github.com"]

const ProfileName = Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9_-]{0,63}$/))

const Profiles = Schema.fromJsonString(
  Schema.Record(
    ProfileName,
    Schema.Struct({
      command: Schema.Array(Schema.String.check(Schema.isMinLength(1))).check(Schema.isMinLength(1)),
      env: Schema.optional(Schema.Record(Schema.String, Schema.String))
    })
  )
)

const MaxRuns = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 256 }))

/** A token of at least 16 characters: short ones are guessable. */
const token = Config.Redacted("BOSUN_RUNTIME_TOKEN").pipe(
  Config.mapEffect((value) =>
    Redacted.value(value).length >= 16
      ? Effect.succeed(value)
      : Effect.fail(
          new Config.ConfigError(
            new ConfigProvider.SourceError({ message: "BOSUN_RUNTIME_TOKEN: must be at least 16 characters" })
          )
        )
  )
)

const duration = (name: string, fallback: Duration.Duration) => Config.Duration(name).pipe(Config.withDefault(fallback))

export const runtimeConfig: Config.Config<RuntimeSettings> = Config.all({
  host: Config.String("BOSUN_RUNTIME_HOST").pipe(Config.withDefault("127.0.0.1")),
  port: Config.schema(
    Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 0, maximum: 65535 })),
    "BOSUN_RUNTIME_PORT"
  ).pipe(Config.withDefault(8787)),
  supervised: Config.Boolean("BOSUN_RUNTIME_SUPERVISED").pipe(Config.withDefault(false)),
  token,
  dataDir: Config.NonEmptyString("BOSUN_RUNTIME_DATA_DIR").pipe(Config.withDefault("./.bosun-runtime")),
  workspacesDir: Config.option(Config.NonEmptyString("BOSUN_RUNTIME_WORKSPACES_DIR")),
  maxRuns: Config.schema(MaxRuns, "BOSUN_RUNTIME_MAX_RUNS").pipe(Config.withDefault(4)),
  heartbeat: duration("BOSUN_RUNTIME_HEARTBEAT", Duration.seconds(5)),
  cancelGrace: duration("BOSUN_RUNTIME_CANCEL_GRACE", Duration.seconds(10)),
  workspaceRetention: duration("BOSUN_RUNTIME_WORKSPACE_RETENTION", Duration.hours(1)),
  agentAuthOrigins: Config.String("BOSUN_RUNTIME_AGENT_AUTH_ORIGINS").pipe(
    Config.withDefault(DEFAULT_AGENT_AUTH_ORIGINS.join(",")),
    Config.mapEffect((text) => {
      const origins = text
        .split(",")
        .map((entry) => entry.trim())
        .filter((entry) => entry !== "")
      const bad = origins.find((origin) => !URL.canParse(origin) || new URL(origin).origin !== origin)
      return bad === undefined
        ? Effect.succeed(new Set(origins))
        : Effect.fail(
            new Config.ConfigError(
              new ConfigProvider.SourceError({
                message: `BOSUN_RUNTIME_AGENT_AUTH_ORIGINS: ${JSON.stringify(bad)} is not an origin (scheme://host[:port])`
              })
            )
          )
    })
  ),
  profiles: Config.schema(Profiles, "BOSUN_RUNTIME_AGENTS").pipe(
    Config.withDefault({}),
    Config.map(
      (profiles) =>
        new Map(
          Object.entries(profiles).map(([name, profile]) => [
            name,
            { command: profile.command, env: profile.env ?? {} }
          ])
        )
    )
  )
}).pipe(
  Config.map(
    (settings): RuntimeSettings => ({
      ...settings,
      workspacesDir: path.resolve(
        Option.getOrElse(settings.workspacesDir, () => path.join(settings.dataDir, "workspaces"))
      )
    })
  )
)

export class RuntimeConfig extends Context.Service<RuntimeConfig, RuntimeSettings>()("bosun/runtime/RuntimeConfig") {
  static readonly layer = Layer.effect(RuntimeConfig, Effect.map(runtimeConfig, RuntimeConfig.of))
}

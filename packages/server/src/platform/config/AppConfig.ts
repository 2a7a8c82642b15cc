/**
 * Every setting the server reads, through Effect `Config`, each name passed through `setting` so it
 * cannot be read without its entry in `Settings.ts` (docs/configuration-reference.md). Values are
 * validated here, once, at start-up: a malformed value fails with a `ConfigError` naming the
 * variable, which `main` prints as one line. Secrets stay `Redacted` from the moment they are read.
 */

import { fileURLToPath } from "node:url"
import type { ClusterSettings } from "@bosun/actors/cluster/ActorsLive"
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { configProblem, credentialedUrl } from "./ConfigChecks.ts"
import { type SandboxSettings, sandboxConfig } from "./SandboxConfig.ts"
import { type ServerSettingName, setting } from "./Settings.ts"

const MasterKeyPattern = /^[A-Za-z0-9+/]{43}=$/

/** Base64 of exactly 32 bytes (44 characters with its one `=` of padding). */
export const MasterKeyString = Schema.String.check(
  Schema.makeFilter((s: string) =>
    MasterKeyPattern.test(s) && Buffer.from(s, "base64").length === 32
      ? undefined
      : "must be base64 of exactly 32 bytes (44 characters ending in '='), e.g. the output of `openssl rand -base64 32`"
  )
)

/** An integer written as a string, at least 1. */
export const KeyVersionString = Schema.String.check(
  Schema.makeFilter((s: string) => (/^[1-9][0-9]{0,8}$/.test(s) ? undefined : 'must be a positive integer, e.g. "1"'))
)

/**
 * A JSON object mapping a version string to the base64 key of that older version. Every entry is
 * checked: a record schema with a refined key type would silently drop a key that does not match.
 */
export const PreviousKeysJson = Schema.String.pipe(
  Schema.decodeTo(
    Schema.fromJsonString(
      Schema.Record(Schema.String, Schema.String).check(
        Schema.makeFilter((entries: Readonly<Record<string, string>>) =>
          Object.entries(entries).flatMap(([version, key]) => {
            const problems: Array<Schema.FilterIssue> = []
            if (!/^[1-9][0-9]{0,8}$/.test(version)) {
              problems.push({ path: [version], issue: 'the version must be a positive integer, e.g. "1"' })
            }
            if (!MasterKeyPattern.test(key) || Buffer.from(key, "base64").length !== 32) {
              problems.push({ path: [version], issue: "the key must be base64 of exactly 32 bytes" })
            }
            return problems
          })
        )
      )
    )
  )
)

const PoolSize = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 1000 }))

/** Request body limit in bytes: 1 KiB .. 100 MiB. */
const BodyBytes = Schema.NumberFromString.check(
  Schema.isInt(),
  Schema.isBetween({ minimum: 1024, maximum: 104_857_600 })
)

export interface S3Settings {
  readonly bucket: string
  readonly endpoint: Option.Option<URL>
  readonly region: string
  readonly forcePathStyle: boolean
  readonly accessKeyId: Option.Option<Redacted.Redacted<string>>
  readonly secretAccessKey: Option.Option<Redacted.Redacted<string>>
}

export interface MasterKeySettings {
  readonly key: Redacted.Redacted<string>
  readonly version: number
  readonly previous: ReadonlyMap<number, Redacted.Redacted<string>>
}

/**
 * What this process does (docs/operations.md: Roles). `all` serves the API and is a cluster runner with the
 * background consumers; `api` serves the API as a cluster client that hosts no entities, so API
 * replicas scale apart from runners; `runner` is a cluster runner with the consumers, its HTTP port
 * answering only `/healthz` and `/readyz`.
 */
export const ROLES = ["all", "api", "runner"] as const
export type Role = (typeof ROLES)[number]

export interface AppSettings {
  readonly role: Role
  readonly host: string
  readonly port: number
  readonly baseUrl: URL
  readonly dataDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly databasePoolSize: number
  /** The largest request body `/api/*` reads (413 above). */
  readonly maxBodyBytes: number
  /** The body limit of the webhook routes (GitHub sends up to 25 MB). */
  readonly webhookMaxBodyBytes: number
  /**
   * How long a server keeps the opened webhook secrets of the GitHub Apps; they are read at most
   * once in that time, whatever arrives, so forged deliveries cannot make it query and unseal.
   */
  readonly webhookSecretCacheTtl: Duration.Duration
  /** A Linear delivery sent (its signed `webhookTimestamp`) further than this from now is refused. */
  readonly linearWebhookMaxAge: Duration.Duration
  readonly redisUrl: Option.Option<Redacted.Redacted<string>>
  readonly s3: Option.Option<S3Settings>
  /** PLATFORM_CONTAINER and HOSTED_SANDBOX, when configured (EXTERNAL_RUNTIME is `runtime`). */
  readonly sandboxes: SandboxSettings
  /** Absent only on the embedded default, where `LocalSecrets` supplies one. */
  readonly masterKey: Option.Option<MasterKeySettings>
  readonly bootstrapToken: Option.Option<Redacted.Redacted<string>>
  readonly migrationsDir: string
  /** The dashboard's built files (`npm run build`), served under `/`. */
  readonly dashboardDir: string
  readonly migrationGateWait: Duration.Duration
  readonly queues: {
    readonly visibilityTimeout: Duration.Duration
    readonly retryDelay: Duration.Duration
    readonly pollInterval: Duration.Duration
  }
  readonly outbox: {
    readonly relayInterval: Duration.Duration
    readonly grace: Duration.Duration
    readonly resendAfter: Duration.Duration
  }
  readonly secretRotation: {
    readonly lease: Duration.Duration
    readonly pollInterval: Duration.Duration
  }
  readonly sessions: {
    readonly idleTimeout: Duration.Duration
    readonly maxAge: Duration.Duration
  }
  /** GitHub's REST API (github.com, or a GitHub Enterprise Server's `/api/v3`). */
  readonly githubApiUrl: URL
  /** How calls to GitHub are retried and paced (GitHubClient). */
  readonly github: {
    readonly retryBase: Duration.Duration
    readonly retries: number
    readonly writeInterval: Duration.Duration
    readonly maxRateLimitWait: Duration.Duration
  }
  /** Composio's API (connected apps): https, or plain http on a loopback host only. */
  readonly composioApiUrl: URL
  /** OpenRouter's API, where the UsageCache reads an organization's key usage. */
  readonly openRouterApiUrl: URL
  /** Slack's Web API base (`…/api/`), which `@slack/web-api` calls: https, or plain http on a loopback host only. */
  readonly slackApiUrl: URL
  /** Linear's GraphQL endpoint, which `@linear/sdk` calls: https, or plain http on a loopback host only. */
  readonly linearApiUrl: URL
  /** Absent: connected apps answer 503 until the operator sets `BOSUN_COMPOSIO_API_KEY`. */
  readonly composioApiKey: Option.Option<Redacted.Redacted<string>>
  /** Where EXTERNAL_RUNTIME attempts run (docs/agent-runtime.md). */
  readonly runtime: {
    /** An operator's runtime; absent, the server launches the embedded one. */
    readonly external: Option.Option<{ readonly url: URL; readonly token: Redacted.Redacted<string> }>
    /** The embedded runtime's loopback port; 0 takes any free one. */
    readonly embeddedPort: number
    /**
     * A custom agent profile of the runtime (`BOSUN_RUNTIME_AGENTS`) that runs every review in
     * place of the configured agent provider: an operator's own review agent. Absent: the
     * repository's agent_provider (OPENCODE or AGENT_ONE) runs it.
     */
    readonly reviewAgentProfile: Option.Option<string>
  }
  /** This process as a cluster runner, the Scheduler's lanes and leases, the attempts' pacing. */
  readonly cluster: ClusterSettings
  /** Prometheus `/metrics` on its own address (`BOSUN_METRICS_PORT`); absent, no metrics server. */
  readonly metrics: Option.Option<{ readonly host: string; readonly port: number }>
  /**
   * Traces over OTLP/HTTP, on when `OTEL_EXPORTER_OTLP_ENDPOINT` or `..._TRACES_ENDPOINT` is set;
   * the exporter reads the endpoint and the other standard `OTEL_*` settings itself.
   */
  readonly tracing: Option.Option<{ readonly serviceName: string; readonly protocol: "http/protobuf" | "http/json" }>
  /** How long one live run stream lasts before `event: reconnect` (docs/interface.md: Events 1, about 55 s). */
  readonly sseStreamDuration: Duration.Duration
  /** How often a live run stream with nothing to send writes a comment, so proxies and clients see it alive. */
  readonly sseKeepAliveInterval: Duration.Duration
}

const duration = (name: ServerSettingName, fallback: Duration.Duration) =>
  Config.Duration(name).pipe(Config.withDefault(fallback))

const defaultMigrationsDir = fileURLToPath(new URL("../../../../../sql/", import.meta.url))

const defaultDashboardDir = fileURLToPath(new URL("../../../../dashboard/dist/", import.meta.url))

const optionalRedacted = (name: ServerSettingName) => Config.option(Config.Redacted(name))

const s3Config: Config.Config<Option.Option<S3Settings>> = Config.all({
  bucket: Config.option(Config.NonEmptyString(setting("BOSUN_S3_BUCKET"))),
  endpoint: Config.option(Config.URL(setting("BOSUN_S3_ENDPOINT"))),
  region: Config.String(setting("BOSUN_S3_REGION")).pipe(Config.withDefault("us-east-1")),
  forcePathStyle: Config.Boolean(setting("BOSUN_S3_FORCE_PATH_STYLE")).pipe(Config.withDefault(false)),
  accessKeyId: optionalRedacted("BOSUN_S3_ACCESS_KEY_ID"),
  secretAccessKey: optionalRedacted("BOSUN_S3_SECRET_ACCESS_KEY")
}).pipe(Config.map(({ bucket, ...rest }) => Option.map(bucket, (bucket) => ({ bucket, ...rest }))))

const masterKeyConfig: Config.Config<Option.Option<MasterKeySettings>> = Config.all({
  key: Config.option(Config.schema(MasterKeyString, setting("BOSUN_MASTER_KEY"))),
  version: Config.schema(KeyVersionString, setting("BOSUN_MASTER_KEY_VERSION")).pipe(Config.withDefault("1")),
  previous: Config.schema(PreviousKeysJson, setting("BOSUN_PREVIOUS_MASTER_KEYS")).pipe(Config.withDefault({}))
}).pipe(
  Config.mapEffect(({ key, version, previous }) => {
    // Every previous version is below the active one (docs/interface.md: Limits).
    const active = Number(version)
    const clash = Object.keys(previous).find((v) => Number(v) >= active)
    return clash === undefined
      ? Effect.succeed(
          Option.map(key, (key) => ({
            key: Redacted.make(key),
            version: active,
            previous: new Map(Object.entries(previous).map(([v, k]) => [Number(v), Redacted.make(k)] as const))
          }))
        )
      : Effect.fail(
          configProblem(
            `BOSUN_PREVIOUS_MASTER_KEYS: version ${clash} is not below the active BOSUN_MASTER_KEY_VERSION ${active}; every previous key must have a lower version`
          )
        )
  })
)

/** An outside API that receives a credential (`ConfigChecks.credentialedUrl`), with its default. */
const credentialedApiUrl = (name: ServerSettingName, fallback: string) =>
  Config.URL(name).pipe(Config.withDefault(new URL(fallback)), Config.mapEffect(credentialedUrl(name)))

/** A runtime URL needs the organization-scoped token that runtime was started with, and the reverse. */
const runtimeConfig = Config.all({
  url: Config.option(Config.URL(setting("BOSUN_RUNTIME_URL"))),
  token: optionalRedacted("BOSUN_RUNTIME_TOKEN"),
  embeddedPort: Config.schema(
    Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 0, maximum: 65535 })),
    setting("BOSUN_EMBEDDED_RUNTIME_PORT")
  ).pipe(Config.withDefault(8787)),
  reviewAgentProfile: Config.option(Config.NonEmptyString(setting("BOSUN_REVIEW_AGENT_PROFILE")))
}).pipe(
  Config.mapEffect(({ url, token, embeddedPort, reviewAgentProfile }) => {
    if (Option.isSome(url) && Option.isSome(token)) {
      return Effect.succeed({
        external: Option.some({ url: url.value, token: token.value }),
        embeddedPort,
        reviewAgentProfile
      })
    }
    if (Option.isNone(url) && Option.isNone(token)) {
      return Effect.succeed({ external: Option.none(), embeddedPort, reviewAgentProfile })
    }
    return Effect.fail(
      configProblem(
        Option.isSome(url)
          ? "BOSUN_RUNTIME_TOKEN: required when BOSUN_RUNTIME_URL is set (the token the runtime was started with)"
          : "BOSUN_RUNTIME_URL: required when BOSUN_RUNTIME_TOKEN is set (where the external runtime listens)"
      )
    )
  })
)

const Concurrency = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 1000 }))
const PositiveInt = Schema.NumberFromString.check(Schema.isInt(), Schema.isBetween({ minimum: 1, maximum: 100_000 }))

const OTLP_PROTOCOLS = ["http/protobuf", "http/json"] as const

const roleConfig = Config.schema(Schema.Literals(ROLES), setting("BOSUN_ROLE")).pipe(Config.withDefault("all" as const))

const clusterConfig: Config.Config<ClusterSettings> = Config.all({
  runnerHost: Config.String(setting("BOSUN_RUNNER_HOST")).pipe(Config.withDefault("127.0.0.1")),
  runnerPort: Config.Port(setting("BOSUN_RUNNER_PORT")).pipe(Config.withDefault(34431)),
  listenHost: Config.option(Config.String(setting("BOSUN_RUNNER_LISTEN_HOST"))),
  role: roleConfig,
  runnerHealth: Config.schema(Schema.Literals(["ping", "k8s"]), setting("BOSUN_RUNNER_HEALTH")).pipe(
    Config.withDefault("ping" as const)
  ),
  runnerHealthNamespace: Config.option(Config.NonEmptyString(setting("BOSUN_RUNNER_HEALTH_NAMESPACE"))),
  runnerHealthLabelSelector: Config.option(Config.NonEmptyString(setting("BOSUN_RUNNER_HEALTH_LABEL_SELECTOR"))),
  shardLockExpiration: duration("BOSUN_SHARD_LOCK_EXPIRATION", Duration.seconds(10)),
  refreshAssignmentsInterval: duration("BOSUN_SHARD_REFRESH_INTERVAL", Duration.millis(250)),
  shardHandoverWait: duration("BOSUN_SHARD_HANDOVER_WAIT", Duration.seconds(1)),
  agentLane: Config.schema(Concurrency, setting("BOSUN_LANE_AGENT_CONCURRENCY")).pipe(Config.withDefault(4)),
  reviewLane: Config.schema(Concurrency, setting("BOSUN_LANE_REVIEW_CONCURRENCY")).pipe(Config.withDefault(4)),
  lease: duration("BOSUN_ATTEMPT_LEASE", Duration.seconds(90)),
  retryBackoff: duration("BOSUN_ATTEMPT_RETRY_BACKOFF", Duration.seconds(10)),
  idleTick: duration("BOSUN_SCHEDULER_IDLE_TICK", Duration.seconds(5)),
  keepalive: duration("BOSUN_SCHEDULER_KEEPALIVE", Duration.millis(250)),
  executeChunk: duration("BOSUN_EXECUTE_CHUNK", Duration.minutes(2)),
  flushInterval: duration("BOSUN_EVENT_FLUSH_INTERVAL", Duration.seconds(1)),
  flushMaxEvents: Config.schema(PositiveInt, setting("BOSUN_EVENT_FLUSH_MAX_EVENTS")).pipe(Config.withDefault(100)),
  heartbeatInterval: duration("BOSUN_ATTEMPT_HEARTBEAT", Duration.seconds(10)),
  stepRetries: Config.schema(PositiveInt, setting("BOSUN_STEP_RETRIES")).pipe(Config.withDefault(5)),
  // AGENT_ONE's device sign-in (RFC 8628): offered only when the provider's endpoints and client
  // are configured — Bosun ships no guessed defaults for another company's OAuth server.
  deviceAuthorizationUrl: Config.option(Config.URL(setting("BOSUN_AGENT_ONE_DEVICE_AUTHORIZATION_URL"))),
  deviceTokenUrl: Config.option(Config.URL(setting("BOSUN_AGENT_ONE_TOKEN_URL"))),
  deviceClientId: Config.option(Config.NonEmptyString(setting("BOSUN_AGENT_ONE_CLIENT_ID"))),
  deviceScope: Config.String(setting("BOSUN_AGENT_ONE_SCOPE")).pipe(
    Config.withDefault("openid profile email offline_access")
  ),
  deviceRefreshMargin: duration("BOSUN_AGENT_ONE_REFRESH_MARGIN", Duration.minutes(5)),
  usageTtl: duration("BOSUN_USAGE_CACHE_TTL", Duration.seconds(60))
}).pipe(
  Config.map(
    (c): ClusterSettings => ({
      runnerAddress: { host: c.runnerHost, port: c.runnerPort },
      listenAddress: Option.match(c.listenHost, {
        onNone: () => undefined,
        onSome: (host) => ({ host, port: c.runnerPort })
      }),
      shardLockExpiration: c.shardLockExpiration,
      refreshAssignmentsInterval: c.refreshAssignmentsInterval,
      shardHandoverWait: c.shardHandoverWait,
      clientOnly: c.role === "api",
      runnerHealth:
        c.runnerHealth === "k8s"
          ? {
              _tag: "k8s",
              namespace: Option.getOrUndefined(c.runnerHealthNamespace),
              labelSelector: Option.getOrUndefined(c.runnerHealthLabelSelector)
            }
          : { _tag: "ping" },
      usageTtl: c.usageTtl,
      scheduler: {
        lanes: { AGENT: c.agentLane, REVIEW: c.reviewLane },
        lease: c.lease,
        retryBackoff: c.retryBackoff,
        idleTick: c.idleTick,
        keepalive: c.keepalive
      },
      attempts: {
        executeChunk: c.executeChunk,
        flushInterval: c.flushInterval,
        flushMaxEvents: c.flushMaxEvents,
        heartbeatInterval: c.heartbeatInterval,
        stepRetries: c.stepRetries,
        stepRetryBase: Duration.seconds(1)
      },
      deviceAuth: Option.all({
        deviceAuthorizationUrl: c.deviceAuthorizationUrl,
        tokenUrl: c.deviceTokenUrl,
        clientId: c.deviceClientId
      }).pipe(
        Option.map(({ deviceAuthorizationUrl, tokenUrl, clientId }) => ({
          clientId,
          scope: c.deviceScope,
          deviceAuthorizationUrl,
          tokenUrl,
          refreshMargin: c.deviceRefreshMargin,
          retryBase: Duration.seconds(1),
          retryMax: Duration.minutes(1),
          requestTimeout: Duration.seconds(15)
        }))
      )
    })
  )
)

export const appConfig: Config.Config<AppSettings> = Config.all({
  role: roleConfig,
  host: Config.String(setting("BOSUN_HOST")).pipe(Config.withDefault("127.0.0.1")),
  port: Config.Port(setting("BOSUN_PORT")).pipe(Config.withDefault(8080)),
  baseUrl: Config.option(Config.URL(setting("BOSUN_BASE_URL"))),
  dataDir: Config.NonEmptyString(setting("BOSUN_DATA_DIR")).pipe(Config.withDefault("./.bosun")),
  databaseUrl: optionalRedacted("DATABASE_URL"),
  databasePoolSize: Config.schema(PoolSize, setting("BOSUN_DATABASE_POOL_SIZE")).pipe(Config.withDefault(10)),
  maxBodyBytes: Config.schema(BodyBytes, setting("BOSUN_MAX_BODY_BYTES")).pipe(Config.withDefault(1_048_576)),
  webhookMaxBodyBytes: Config.schema(BodyBytes, setting("BOSUN_WEBHOOK_MAX_BODY_BYTES")).pipe(
    Config.withDefault(26_214_400)
  ),
  webhookSecretCacheTtl: duration("BOSUN_WEBHOOK_SECRET_CACHE_TTL", Duration.seconds(5)),
  linearWebhookMaxAge: duration("BOSUN_LINEAR_WEBHOOK_MAX_AGE", Duration.seconds(60)),
  redisUrl: optionalRedacted("REDIS_URL"),
  s3: s3Config,
  sandboxes: sandboxConfig,
  masterKey: masterKeyConfig,
  bootstrapToken: optionalRedacted("BOSUN_BOOTSTRAP_TOKEN"),
  migrationsDir: Config.NonEmptyString(setting("BOSUN_MIGRATIONS_DIR")).pipe(Config.withDefault(defaultMigrationsDir)),
  dashboardDir: Config.NonEmptyString(setting("BOSUN_DASHBOARD_DIR")).pipe(Config.withDefault(defaultDashboardDir)),
  migrationGateWait: Config.Duration(setting("BOSUN_MIGRATION_GATE_WAIT")).pipe(
    Config.withDefault(Duration.seconds(5))
  ),
  queues: Config.all({
    visibilityTimeout: duration("BOSUN_QUEUE_VISIBILITY_TIMEOUT", Duration.seconds(30)),
    retryDelay: duration("BOSUN_QUEUE_RETRY_DELAY", Duration.seconds(5)),
    pollInterval: duration("BOSUN_QUEUE_POLL_INTERVAL", Duration.seconds(1))
  }),
  outbox: Config.all({
    relayInterval: duration("BOSUN_OUTBOX_RELAY_INTERVAL", Duration.seconds(5)),
    grace: duration("BOSUN_OUTBOX_GRACE", Duration.seconds(10)),
    resendAfter: duration("BOSUN_OUTBOX_RESEND_AFTER", Duration.minutes(15))
  }),
  secretRotation: Config.all({
    lease: duration("BOSUN_SECRET_ROTATION_LEASE", Duration.seconds(30)),
    pollInterval: duration("BOSUN_SECRET_ROTATION_POLL_INTERVAL", Duration.seconds(5))
  }),
  sessions: Config.all({
    idleTimeout: duration("BOSUN_SESSION_IDLE_TIMEOUT", Duration.days(14)),
    maxAge: duration("BOSUN_SESSION_MAX_AGE", Duration.days(30))
  }),
  githubApiUrl: Config.URL(setting("BOSUN_GITHUB_API_URL")).pipe(Config.withDefault(new URL("https://api.github.com"))),
  github: Config.all({
    retryBase: duration("BOSUN_GITHUB_RETRY_BASE", Duration.seconds(1)),
    retries: Config.Int(setting("BOSUN_GITHUB_RETRIES")).pipe(Config.withDefault(3)),
    writeInterval: duration("BOSUN_GITHUB_WRITE_INTERVAL", Duration.seconds(1)),
    maxRateLimitWait: duration("BOSUN_GITHUB_MAX_RATE_LIMIT_WAIT", Duration.seconds(60))
  }),
  composioApiUrl: credentialedApiUrl("BOSUN_COMPOSIO_API_URL", "https://backend.composio.dev"),
  openRouterApiUrl: credentialedApiUrl("BOSUN_OPENROUTER_API_URL", "https://openrouter.ai/api/v1"),
  slackApiUrl: credentialedApiUrl("BOSUN_SLACK_API_URL", "https://slack.com/api/"),
  linearApiUrl: credentialedApiUrl("BOSUN_LINEAR_API_URL", "https://api.linear.app/graphql"),
  composioApiKey: optionalRedacted("BOSUN_COMPOSIO_API_KEY"),
  runtime: runtimeConfig,
  cluster: clusterConfig,
  sseStreamDuration: duration("BOSUN_SSE_STREAM_DURATION", Duration.seconds(55)),
  sseKeepAliveInterval: duration("BOSUN_SSE_KEEPALIVE_INTERVAL", Duration.seconds(15)),
  metricsPort: Config.option(Config.Port(setting("BOSUN_METRICS_PORT"))),
  metricsHost: Config.option(Config.String(setting("BOSUN_METRICS_HOST"))),
  otlpEndpoint: Config.option(Config.URL(setting("OTEL_EXPORTER_OTLP_ENDPOINT"))),
  otlpTracesEndpoint: Config.option(Config.URL(setting("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))),
  // Read as text and checked only when traces are exported: OTel sidecars and operators often set
  // OTEL_EXPORTER_OTLP_PROTOCOL=grpc cluster-wide, which must not stop a server that exports nothing.
  otlpTracesProtocol: Config.option(Config.String(setting("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))),
  otlpProtocol: Config.option(Config.String(setting("OTEL_EXPORTER_OTLP_PROTOCOL"))),
  serviceName: Config.NonEmptyString(setting("OTEL_SERVICE_NAME")).pipe(Config.withDefault("bosun"))
}).pipe(
  Config.mapEffect(
    ({
      baseUrl,
      metricsPort,
      metricsHost,
      otlpEndpoint,
      otlpTracesEndpoint,
      otlpTracesProtocol,
      otlpProtocol,
      serviceName,
      ...rest
    }) => {
      const settings = {
        ...rest,
        baseUrl: Option.getOrElse(baseUrl, () => new URL(`http://${urlHost(rest.host)}:${rest.port}`)),
        metrics: Option.map(metricsPort, (port) => ({ host: Option.getOrElse(metricsHost, () => rest.host), port }))
      }
      if (Option.isNone(Option.orElse(otlpTracesEndpoint, () => otlpEndpoint))) {
        return Effect.succeed({ ...settings, tracing: Option.none() })
      }
      const [name, value] = Option.isSome(otlpTracesProtocol)
        ? ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", otlpTracesProtocol.value]
        : ["OTEL_EXPORTER_OTLP_PROTOCOL", Option.getOrElse(otlpProtocol, () => "http/protobuf")]
      const protocol = OTLP_PROTOCOLS.find((known) => known === value)
      return protocol === undefined
        ? Effect.fail(
            configProblem(
              `${name}: must be http/protobuf or http/json when traces are exported (Bosun exports OTLP over HTTP, not ${value})`
            )
          )
        : Effect.succeed({ ...settings, tracing: Option.some({ serviceName, protocol }) })
    }
  )
)

/** `0.0.0.0` and `::` bind every interface; a browser cannot open them, so the default URL says localhost. */
const urlHost = (host: string) =>
  host === "0.0.0.0" || host === "::" ? "localhost" : host.includes(":") ? `[${host}]` : host

export class AppConfig extends Context.Service<AppConfig, AppSettings>()("bosun/server/config/AppConfig") {
  static readonly layer = Layer.effect(AppConfig, Effect.map(appConfig, AppConfig.of))
}

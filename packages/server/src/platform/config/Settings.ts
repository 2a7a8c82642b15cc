/**
 * Every environment variable Bosun's server and runtime processes read, with its default as people
 * should read it and what it does: the source of `docs/configuration-reference.md`
 * (`npm run docs:config`). `AppConfig` reads its variables only through `setting`, so a server
 * setting without an entry here does not compile; `ConfigurationReference.test.ts` holds the
 * sandbox and runtime modules to the same table by scanning their sources.
 */

export interface SettingDoc {
  /** The environment variable. */
  readonly name: string
  /** The default as shown to people: the value in backticks, or what being unset means. */
  readonly default: string
  /** What it does: one line of Markdown. */
  readonly description: string
}

export interface SettingsGroup {
  readonly title: string
  /**
   * The process that reads the group: `server` is `AppConfig.ts` and `SandboxConfig.ts`, `runtime`
   * is the runtime's `RuntimeConfig.ts`. Both read `BOSUN_RUNTIME_TOKEN`, with different meanings.
   */
  readonly process: "server" | "runtime"
  /** Markdown shown between the heading and the table. */
  readonly intro?: string
  readonly settings: ReadonlyArray<SettingDoc>
}

export const SETTING_GROUPS = [
  {
    title: "Server core",
    process: "server",
    settings: [
      {
        name: "BOSUN_ROLE",
        default: "`all`",
        description:
          "`all` serves the API and runs the background work; `api` only serves the API (a cluster client hosting no entities, so API replicas scale apart); `runner` runs the work, its HTTP port answering only `/healthz` and `/readyz`"
      },
      { name: "BOSUN_HOST", default: "`127.0.0.1`", description: "interface the HTTP server binds" },
      { name: "BOSUN_PORT", default: "`8080`", description: "HTTP port (1..65535)" },
      {
        name: "BOSUN_BASE_URL",
        default: "`http://<host>:<port>`",
        description:
          "public URL of this instance (dashboard links, cookies, OAuth callbacks); a host of `0.0.0.0` or `::` is written `localhost`"
      },
      {
        name: "BOSUN_DATA_DIR",
        default: "`./.bosun`",
        description: "embedded Postgres data (`pg/`), `secrets.json`, local blobs, the embedded runtime's data"
      },
      {
        name: "BOSUN_BOOTSTRAP_TOKEN",
        default: "embedded: generated into `secrets.json`; else unset",
        description: "operator bearer token for the bootstrap endpoints"
      },
      {
        name: "BOSUN_MAX_BODY_BYTES",
        default: "`1048576` (1 MiB)",
        description: "largest request body (1 KiB .. 100 MiB); larger bodies answer 413 `payload_too_large`"
      },
      {
        name: "BOSUN_WEBHOOK_MAX_BODY_BYTES",
        default: "`26214400` (25 MiB)",
        description:
          "largest webhook body (`POST /api/v1/github/webhooks`; GitHub sends up to 25 MB); larger ones answer 413"
      },
      {
        name: "BOSUN_SESSION_IDLE_TIMEOUT",
        default: "`14 days`",
        description: "a session unused this long expires (each use pushes it forward)"
      },
      {
        name: "BOSUN_SESSION_MAX_AGE",
        default: "`30 days`",
        description: "a session expires this long after it was opened, used or not"
      },
      {
        name: "BOSUN_SSE_STREAM_DURATION",
        default: "`55 seconds`",
        description: "how long one live run stream lasts before `event: reconnect` (the client reopens it)"
      },
      {
        name: "BOSUN_SSE_KEEPALIVE_INTERVAL",
        default: "`15 seconds`",
        description: "how often a live run stream with nothing to send writes a keep-alive comment"
      },
      {
        name: "BOSUN_DASHBOARD_DIR",
        default: "`packages/dashboard/dist/` of this checkout",
        description: "the dashboard's built files (`npm run build`), served under `/`"
      }
    ]
  },
  {
    title: "Database, storage and keys",
    process: "server",
    settings: [
      {
        name: "DATABASE_URL",
        default: "unset: embedded Postgres",
        description: "Postgres URL; when set, `BOSUN_MASTER_KEY` is required"
      },
      { name: "BOSUN_DATABASE_POOL_SIZE", default: "`10`", description: "connections in the server's pool (1..1000)" },
      {
        name: "BOSUN_MIGRATIONS_DIR",
        default: "`sql/` of this checkout",
        description: "where the migration files are"
      },
      {
        name: "BOSUN_MIGRATION_GATE_WAIT",
        default: "`5 seconds`",
        description: "how long `/api/*` and `/readyz` wait for pending migrations before answering 503"
      },
      {
        name: "REDIS_URL",
        default: "unset: in-process cache, Postgres queues",
        description: "Redis for the cache and the queues (Redis Streams)"
      },
      {
        name: "BOSUN_QUEUE_VISIBILITY_TIMEOUT",
        default: "`30 seconds`",
        description: "a claimed message not heartbeated for this long is delivered again (its consumer died)"
      },
      {
        name: "BOSUN_QUEUE_RETRY_DELAY",
        default: "`5 seconds`",
        description: "how long a message whose handler failed waits before its next delivery"
      },
      {
        name: "BOSUN_QUEUE_POLL_INTERVAL",
        default: "`1 second`",
        description: "Postgres queues: how often an idle consumer looks for work besides `NOTIFY`"
      },
      {
        name: "BOSUN_OUTBOX_RELAY_INTERVAL",
        default: "`5 seconds`",
        description: "how often the outbox relay looks for lost wake-ups"
      },
      {
        name: "BOSUN_OUTBOX_GRACE",
        default: "`10 seconds`",
        description: "an outbox row never sent is relayed once this old"
      },
      {
        name: "BOSUN_OUTBOX_RESEND_AFTER",
        default: "`15 minutes`",
        description: "an outbox row sent this long ago and still not done is sent again"
      },
      {
        name: "BOSUN_S3_BUCKET",
        default: "unset: files under `BOSUN_DATA_DIR/blobs`",
        description: "S3 bucket of the blob store (it must exist)"
      },
      { name: "BOSUN_S3_ENDPOINT", default: "AWS", description: "S3-compatible endpoint URL (MinIO, R2, …)" },
      { name: "BOSUN_S3_REGION", default: "`us-east-1`", description: "S3 region" },
      {
        name: "BOSUN_S3_FORCE_PATH_STYLE",
        default: "`false`",
        description: "path-style bucket addressing (MinIO, s3rver)"
      },
      { name: "BOSUN_S3_ACCESS_KEY_ID", default: "the AWS default chain", description: "S3 access key id" },
      { name: "BOSUN_S3_SECRET_ACCESS_KEY", default: "the AWS default chain", description: "S3 secret access key" },
      {
        name: "BOSUN_MASTER_KEY",
        default: "embedded: generated into `secrets.json`",
        description: "active AES-256-GCM master key, base64 of exactly 32 bytes (`openssl rand -base64 32`)"
      },
      { name: "BOSUN_MASTER_KEY_VERSION", default: "`1`", description: "integer version of the active key" },
      {
        name: "BOSUN_PREVIOUS_MASTER_KEYS",
        default: "`{}`",
        description: "JSON object: version → base64 key of each older version, each below the active version"
      },
      {
        name: "BOSUN_SECRET_ROTATION_LEASE",
        default: "`30 seconds`",
        description: "a rotation run whose worker has not renewed its lease this long is resumed by another"
      },
      {
        name: "BOSUN_SECRET_ROTATION_POLL_INTERVAL",
        default: "`5 seconds`",
        description: "how often an idle rotation worker looks for queued or abandoned runs"
      }
    ]
  },
  {
    title: "GitHub, Slack, Linear and other services",
    process: "server",
    settings: [
      {
        name: "BOSUN_GITHUB_API_URL",
        default: "`https://api.github.com`",
        description:
          "GitHub's REST API; for GitHub Enterprise Server its `https://HOST/api/v3` (the OAuth host is derived from it as Octokit does)"
      },
      {
        name: "BOSUN_GITHUB_RETRIES",
        default: "`3`",
        description: "retries of one GitHub call after a 5xx answer or a network failure (`@octokit/plugin-retry`)"
      },
      {
        name: "BOSUN_GITHUB_RETRY_BASE",
        default: "`1 second`",
        description: "the first wait before such a retry; then 4× and 9× that"
      },
      {
        name: "BOSUN_GITHUB_WRITE_INTERVAL",
        default: "`1 second`",
        description:
          "GitHub's guidance: at least this long between two writes of one installation, three times that between writes that notify people (reviews, comments)"
      },
      {
        name: "BOSUN_GITHUB_MAX_RATE_LIMIT_WAIT",
        default: "`60 seconds`",
        description:
          "the longest rate limit (`Retry-After`, `X-RateLimit-Reset`) waited out inside one call; a longer one fails the call as rate limited, to be retried later"
      },
      {
        name: "BOSUN_WEBHOOK_SECRET_CACHE_TTL",
        default: "`5 seconds`",
        description:
          "how long a server keeps the opened webhook secrets of the GitHub Apps, read at most once in that time whatever arrives (a forged delivery costs no query)"
      },
      {
        name: "BOSUN_SLACK_API_URL",
        default: "`https://slack.com/api/`",
        description: "Slack's Web API base (https, or plain http on a loopback host only)"
      },
      {
        name: "BOSUN_LINEAR_API_URL",
        default: "`https://api.linear.app/graphql`",
        description: "Linear's GraphQL endpoint (https, or plain http on a loopback host only)"
      },
      {
        name: "BOSUN_LINEAR_WEBHOOK_MAX_AGE",
        default: "`60 seconds`",
        description:
          "a Linear delivery whose signed `webhookTimestamp` (or `Linear-Timestamp`) is further than this from now is refused (401)"
      },
      {
        name: "BOSUN_COMPOSIO_API_URL",
        default: "`https://backend.composio.dev`",
        description:
          "Composio's API (connected apps): https, or plain http on a loopback host only; the client adds `/api/v3.1/...`"
      },
      {
        name: "BOSUN_COMPOSIO_API_KEY",
        default: "unset: connected apps answer 503",
        description: "Composio project API key, sent as `x-api-key`; kept `Redacted`, never logged"
      },
      {
        name: "BOSUN_OPENROUTER_API_URL",
        default: "`https://openrouter.ai/api/v1`",
        description:
          "OpenRouter's API, where the UsageCache reads an organization's key usage (`GET /key`): https, or plain http on a loopback host only"
      },
      {
        name: "BOSUN_USAGE_CACHE_TTL",
        default: "`60 seconds`",
        description: "how long a provider usage reading answers lookups"
      },
      {
        name: "BOSUN_AGENT_ONE_DEVICE_AUTHORIZATION_URL",
        default: "unset",
        description:
          "AGENT_ONE's RFC 8628 device authorization endpoint; the device sign-in is offered only with it, the token URL and the client id (Bosun ships no guessed endpoints)"
      },
      {
        name: "BOSUN_AGENT_ONE_TOKEN_URL",
        default: "unset",
        description: "AGENT_ONE's token endpoint for the device sign-in"
      },
      { name: "BOSUN_AGENT_ONE_CLIENT_ID", default: "unset", description: "Bosun's OAuth client id at AGENT_ONE" },
      {
        name: "BOSUN_AGENT_ONE_SCOPE",
        default: "`openid profile email offline_access`",
        description: "scopes asked for with the device code"
      },
      {
        name: "BOSUN_AGENT_ONE_REFRESH_MARGIN",
        default: "`5 minutes`",
        description: "the access token is refreshed when it expires within this margin"
      }
    ]
  },
  {
    title: "Agent runtime and sandboxes",
    process: "server",
    intro:
      "Where attempts run. Without `BOSUN_RUNTIME_URL` the server launches the embedded runtime, which receives the operator's `BOSUN_RUNTIME_*` settings (last section) except the ones the server sets itself. PLATFORM_CONTAINER and HOSTED_SANDBOX are switched on by their first setting; one switched on but missing a setting it needs stops start-up naming it.",
    settings: [
      {
        name: "BOSUN_RUNTIME_URL",
        default: "unset: the embedded runtime",
        description: "an EXTERNAL_RUNTIME the operator runs; `BOSUN_RUNTIME_TOKEN` is then required, and the reverse"
      },
      {
        name: "BOSUN_RUNTIME_TOKEN",
        default: "required with `BOSUN_RUNTIME_URL`",
        description: "the organization-scoped token the external runtime was started with"
      },
      {
        name: "BOSUN_EMBEDDED_RUNTIME_PORT",
        default: "`8787`",
        description: "loopback port of the embedded runtime (`0`: any free port)"
      },
      {
        name: "BOSUN_REVIEW_AGENT_PROFILE",
        default: "unset: the repository's agent_provider",
        description:
          "a custom agent profile of the runtime (`BOSUN_RUNTIME_AGENTS`) that runs every review instead: an operator's own review agent, and what `npm run bench:review` uses"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_NAMESPACE",
        default: "unset: no PLATFORM_CONTAINER",
        description:
          "switches PLATFORM_CONTAINER on: a Pod per attempt in this namespace, out only through Bosun's egress proxy, which every runner then runs (`infra/helm/bosun/README.md`)"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_IMAGE",
        default: "required with the namespace",
        description: "the runtime image the pods run"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_SERVICE_ACCOUNT",
        default: "required with the namespace",
        description: "the service account the pods run as"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET",
        default: "required with the namespace",
        description: "the Secret in the sandbox namespace holding the instance-scoped runtime token"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN_SECRET_KEY",
        default: "`token`",
        description: "the key of that Secret holding the token"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_RUNTIME_TOKEN",
        default: "required with the namespace",
        description: "the instance-scoped runtime token itself, the one that Secret holds"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP",
        default: "required with the namespace",
        description: "the ConfigMap with the egress CA certificate the pods trust"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_CA_CONFIGMAP_KEY",
        default: "`ca.crt`",
        description: "the key of that ConfigMap holding the certificate"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_RUNTIME_PORT",
        default: "`8787`",
        description: "the runtime's port in the pod"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_READINESS_TIMEOUT",
        default: "`5 minutes`",
        description: "pod creation to a runtime that answers"
      },
      {
        name: "BOSUN_PLATFORM_CONTAINER_INSTANCE_CLASSES",
        default: "2 CPU / 4Gi and 4 CPU / 8Gi",
        description: 'pod resources per instance class, JSON `{"standard-2":{"cpu","memory"},"standard-4":{…}}`'
      },
      {
        name: "BOSUN_KUBERNETES_API_URL",
        default: "unset: the pod's own service account",
        description: "the Kubernetes API server, from outside the cluster (with `BOSUN_KUBERNETES_TOKEN`)"
      },
      {
        name: "BOSUN_KUBERNETES_TOKEN",
        default: "required with the API URL",
        description: "a bearer token that may manage Pods and Secrets in the sandbox namespace"
      },
      {
        name: "BOSUN_KUBERNETES_CA_CERTIFICATE",
        default: "unset: publicly trusted CAs",
        description: "the API server's CA certificate (PEM), when its TLS certificate is not publicly trusted"
      },
      { name: "BOSUN_EGRESS_PROXY_HOST", default: "`127.0.0.1`", description: "where the egress proxy listens" },
      { name: "BOSUN_EGRESS_PROXY_PORT", default: "`3128`", description: "the egress proxy's port" },
      {
        name: "BOSUN_EGRESS_PROXY_ADVERTISED_HOST",
        default: "the proxy's host",
        description: "the host pods are told to reach the proxy at (the runner's pod IP)"
      },
      {
        name: "BOSUN_EGRESS_PROXY_CA_CERTIFICATE",
        default: "required with the namespace",
        description: "the egress CA's certificate (PEM) the proxy issues its certificates from"
      },
      {
        name: "BOSUN_EGRESS_PROXY_CA_KEY",
        default: "required with the namespace",
        description: "the egress CA's private key (PKCS#8 PEM)"
      },
      {
        name: "BOSUN_EGRESS_PROXY_SECRET_KEY",
        default: "required with the namespace",
        description: "the key each pod's proxy credential is derived from"
      },
      {
        name: "BOSUN_EGRESS_TIERS",
        default: "`{}`: every tier reaches nothing",
        description:
          'JSON `{"STRICT":[hosts],"BUILD":[…],"DEEP_SCAN":[…]}`: `host`, `host:port` or `*.example.com` per tier'
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_API_URL",
        default: "unset: no HOSTED_SANDBOX",
        description:
          "switches HOSTED_SANDBOX on: a sandbox per attempt from this API (https, or plain http on a loopback host only)"
      },
      { name: "BOSUN_HOSTED_SANDBOX_API_KEY", default: "required with the URL", description: "the provider's API key" },
      {
        name: "BOSUN_HOSTED_SANDBOX_RUNTIME_TOKEN",
        default: "required with the URL",
        description: "the instance-scoped token the sandboxes' runtime starts with"
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_SNAPSHOT",
        default: "this or `_IMAGE`, with the URL",
        description: "the runtime image as a snapshot made from it"
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_IMAGE",
        default: "this or `_SNAPSHOT`, with the URL",
        description: "the runtime image itself (built on first use)"
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_NETWORK_ALLOW_LIST",
        default: "`{}`: every tier reaches nothing",
        description: 'JSON `{"STRICT":"cidr,cidr","BUILD":…,"DEEP_SCAN":…}`'
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_ORGANIZATION_ID",
        default: "unset",
        description: "the provider's organization, needed only when authenticating with a user token"
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_TARGET",
        default: "the API's default",
        description: "the region sandboxes are created in"
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_RUNTIME_PORT",
        default: "`8787`",
        description: "the runtime's port in the sandbox"
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_READINESS_TIMEOUT",
        default: "`3 minutes`",
        description: "create to a runtime that answers"
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_IDLE_STOP_MINUTES",
        default: "`60`",
        description: "idle minutes before the provider stops (and deletes) a sandbox"
      },
      {
        name: "BOSUN_HOSTED_SANDBOX_MAX_LIFETIME_MINUTES",
        default: "unset: no limit",
        description: "a sandbox's longest life in minutes, whatever its state"
      }
    ]
  },
  {
    title: "Cluster and scheduling",
    process: "server",
    settings: [
      {
        name: "BOSUN_RUNNER_HOST",
        default: "`127.0.0.1`",
        description: "where other cluster runners reach this one"
      },
      { name: "BOSUN_RUNNER_PORT", default: "`34431`", description: "the cluster runner's port" },
      {
        name: "BOSUN_RUNNER_LISTEN_HOST",
        default: "the runner host",
        description: "interface the runner listens on (`0.0.0.0` in a container)"
      },
      {
        name: "BOSUN_RUNNER_HEALTH",
        default: "`ping`",
        description:
          "how runners decide a peer is gone: `ping` it over the socket, or `k8s`: ask the Kubernetes API whether its Pod still runs (the Pod's service account must get and list Pods)"
      },
      {
        name: "BOSUN_RUNNER_HEALTH_NAMESPACE",
        default: "the Pod's namespace",
        description: "with `k8s`: where the runner Pods are"
      },
      {
        name: "BOSUN_RUNNER_HEALTH_LABEL_SELECTOR",
        default: "all Pods",
        description: "with `k8s`: the label selecting the runner Pods"
      },
      {
        name: "BOSUN_SHARD_LOCK_EXPIRATION",
        default: "`10 seconds`",
        description: "how long a killed runner's shards stay locked before others take them"
      },
      {
        name: "BOSUN_SHARD_REFRESH_INTERVAL",
        default: "`250 millis`",
        description:
          "how often a runner re-reads the shard assignments: the longest a shard freed by a runner that stopped gracefully waits for its next owner"
      },
      {
        name: "BOSUN_SHARD_HANDOVER_WAIT",
        default: "`1 second`",
        description:
          "how long a runner keeps asking for shards a stopping runner has not released yet, rather than waiting for the cluster's next round (at most half the lock refresh interval)"
      },
      {
        name: "BOSUN_LANE_AGENT_CONCURRENCY",
        default: "`4`",
        description: "AGENT attempts running at once"
      },
      {
        name: "BOSUN_LANE_REVIEW_CONCURRENCY",
        default: "`4`",
        description: "REVIEW attempts running at once"
      },
      {
        name: "BOSUN_ATTEMPT_LEASE",
        default: "`90 seconds`",
        description: "an attempt without a heartbeat this long is failed as retryable and tried again"
      },
      {
        name: "BOSUN_ATTEMPT_RETRY_BACKOFF",
        default: "`10 seconds`",
        description: "delay before a retried attempt, doubling per attempt"
      },
      {
        name: "BOSUN_ATTEMPT_HEARTBEAT",
        default: "`10 seconds`",
        description: "how often a waiting step renews its attempt's lease"
      },
      {
        name: "BOSUN_SCHEDULER_IDLE_TICK",
        default: "`5 seconds`",
        description: "the Scheduler's alarm when nothing is due sooner"
      },
      {
        name: "BOSUN_SCHEDULER_KEEPALIVE",
        default: "`250 millis`",
        description:
          "how often the alarm makes sure the Scheduler is up: after a hand-over between runners, the longest it stays down once its shard has a new owner"
      },
      {
        name: "BOSUN_EXECUTE_CHUNK",
        default: "`2 minutes`",
        description: "how long one execute step tails the runtime before the next step takes over"
      },
      {
        name: "BOSUN_EVENT_FLUSH_INTERVAL",
        default: "`1 second`",
        description: "runtime events are written to `workflow_events` at least this often"
      },
      {
        name: "BOSUN_EVENT_FLUSH_MAX_EVENTS",
        default: "`100`",
        description: "runtime events are written to `workflow_events` once this many are waiting"
      },
      {
        name: "BOSUN_STEP_RETRIES",
        default: "`5`",
        description: "retries (exponential from 1 s) of a step whose runtime or provider does not answer"
      }
    ]
  },
  {
    title: "Observability",
    process: "server",
    settings: [
      {
        name: "BOSUN_METRICS_PORT",
        default: "unset: no metrics server",
        description: "Prometheus `GET /metrics` on its own port"
      },
      { name: "BOSUN_METRICS_HOST", default: "the HTTP host", description: "interface the metrics server binds" },
      {
        name: "OTEL_EXPORTER_OTLP_ENDPOINT",
        default: "unset: no traces exported",
        description:
          "an OTLP/HTTP collector; the other standard `OTEL_*` settings apply (`OTEL_EXPORTER_OTLP_HEADERS`, `..._COMPRESSION`, `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_TRACES_EXPORTER=none`, `OTEL_SDK_DISABLED`)"
      },
      {
        name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        default: "unset",
        description: "the collector's traces URL, in place of `OTEL_EXPORTER_OTLP_ENDPOINT`"
      },
      {
        name: "OTEL_EXPORTER_OTLP_PROTOCOL",
        default: "`http/protobuf`",
        description:
          "`http/protobuf` or `http/json`; read only when traces are exported, so a cluster-wide `grpc` does not stop a server that exports none"
      },
      {
        name: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        default: "`OTEL_EXPORTER_OTLP_PROTOCOL`",
        description: "the traces' protocol, in place of `OTEL_EXPORTER_OTLP_PROTOCOL`"
      },
      { name: "OTEL_SERVICE_NAME", default: "`bosun`", description: "the traces' service name" }
    ]
  },
  {
    title: "Runtime process",
    process: "runtime",
    intro:
      "Read by `npm run runtime` (`packages/runtime/src/RuntimeConfig.ts`), the process where agents run. The server's embedded runtime gets the operator's values of these too, except the host, port, token, data directory and `BOSUN_RUNTIME_SUPERVISED`, which the server sets itself.",
    settings: [
      { name: "BOSUN_RUNTIME_HOST", default: "`127.0.0.1`", description: "interface to listen on" },
      {
        name: "BOSUN_RUNTIME_PORT",
        default: "`8787`",
        description: "port; `0` any free one (the `bosun_runtime_listening` line names it)"
      },
      {
        name: "BOSUN_RUNTIME_TOKEN",
        default: "required (≥ 16 characters)",
        description: "bearer token of every `/v1` request"
      },
      {
        name: "BOSUN_RUNTIME_DATA_DIR",
        default: "`./.bosun-runtime`",
        description: "run logs, states, files (`runs/`, 0700), workspaces"
      },
      {
        name: "BOSUN_RUNTIME_WORKSPACES_DIR",
        default: "`<BOSUN_RUNTIME_DATA_DIR>/workspaces`",
        description:
          "the attempts' workspaces; as root, the directories above it must be searchable (agents run as users of their own: `docs/agent-isolation.md`)"
      },
      { name: "BOSUN_RUNTIME_MAX_RUNS", default: "`4`", description: "runs at once (1..256); one more is 429" },
      { name: "BOSUN_RUNTIME_HEARTBEAT", default: "`5 seconds`", description: "heartbeat period of the event tail" },
      {
        name: "BOSUN_RUNTIME_CANCEL_GRACE",
        default: "`10 seconds`",
        description: "SIGTERM to SIGKILL on cancel and time limit"
      },
      {
        name: "BOSUN_RUNTIME_WORKSPACE_RETENTION",
        default: "`1 hour`",
        description: "how long a finished attempt's workspace is kept"
      },
      {
        name: "BOSUN_RUNTIME_AGENTS",
        default: "`{}`",
        description: 'custom agent profiles, JSON `{"name": {"command": [argv], "env": {}}}`'
      },
      {
        name: "BOSUN_RUNTIME_AGENT_AUTH_ORIGINS",
        default: "OpenAI's and GitHub's sign-in origins",
        description: "origins the sign-in fallback may reach, comma-separated"
      },
      {
        name: "BOSUN_RUNTIME_SUPERVISED",
        default: "`false`",
        description: "stop when stdin closes (set by a supervising parent: the server's embedded runtime)"
      }
    ]
  }
] as const satisfies ReadonlyArray<SettingsGroup>

type NamesOf<G> = G extends { readonly process: "server"; readonly settings: ReadonlyArray<infer S> }
  ? S extends { readonly name: infer N }
    ? N
    : never
  : never

/** A variable the server reads: one with an entry in a `server` group. */
export type ServerSettingName = NamesOf<(typeof SETTING_GROUPS)[number]>

/** The name of a documented server setting; `AppConfig` passes every name it reads through this. */
export const setting = <N extends ServerSettingName>(name: N): N => name

const INTRO = `Every setting is an environment variable, read through Effect \`Config\` when the process starts
and validated there: a malformed value stops start-up with one line on stderr naming the variable
and what is expected, exit code 1 — never a stack trace, never the value itself. Secrets stay
\`Redacted\` from the moment they are read.

Nothing needs to be set to try Bosun: with \`DATABASE_URL\` unset the server runs on embedded
defaults — an embedded Postgres under \`BOSUN_DATA_DIR\`, a master key and bootstrap token
generated into \`secrets.json\`, and an embedded agent runtime. Durations are written like
\`30 seconds\`, \`500 millis\`, \`15 minutes\`.`

const HEADER = ["name", "default", "what it does"] as const

/** A GFM table cell: a pipe would end the cell, even inside a code span. */
const cell = (text: string) => text.replaceAll("|", "\\|")

/** Padded the way Biome formats Markdown tables, so the generated file passes `biome check` as written. */
const table = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = HEADER.map((_, i) => Math.max(...rows.map((row) => (row[i] ?? "").length)))
  const line = (row: ReadonlyArray<string>) => `| ${row.map((text, i) => text.padEnd(widths[i] ?? 0)).join(" | ")} |`
  const [header, ...body] = rows
  return [line(header ?? []), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n")
}

/** `docs/configuration-reference.md`, byte for byte. */
export const renderConfigurationReference = (): string => {
  const sections = SETTING_GROUPS.map((group: SettingsGroup) => {
    const rows = [HEADER, ...group.settings.map((s) => [`\`${s.name}\``, cell(s.default), cell(s.description)])]
    return [`## ${group.title}`, ...(group.intro === undefined ? [] : [group.intro]), table(rows)].join("\n\n")
  })
  return `${[
    "# Configuration reference",
    "<!-- Generated by `npm run docs:config` from packages/server/src/platform/config/Settings.ts: edit that file, not this one. -->",
    INTRO,
    ...sections
  ].join("\n\n")}\n`
}

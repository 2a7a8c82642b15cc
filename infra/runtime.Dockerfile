# The Bosun agent runtime image (issue 6; docs/interface.md: Agent runtime protocol): the runtime's
# HTTP server as PID 1, running as uid 1000, with git and ripgrep for the agents and the agent CLIs
# (OpenCode, Codex) as npm dependencies of the runtime package. Built from the repository root:
#   docker build -f infra/runtime.Dockerfile -t bosun-runtime .
# Run with BOSUN_RUNTIME_TOKEN set; the data directory (logs, workspaces) is /data.

# Dependencies of the runtime workspace only, production ones, from the lockfile.
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/domain/package.json packages/domain/
COPY packages/platform/package.json packages/platform/
COPY packages/runtime/package.json packages/runtime/
COPY packages/server/package.json packages/server/
COPY packages/actors/package.json packages/actors/
COPY packages/dashboard/package.json packages/dashboard/
COPY packages/testing/package.json packages/testing/
RUN npm ci --omit=dev --no-audit --no-fund --workspace @bosun/runtime --include-workspace-root=false

FROM node:24-bookworm-slim
RUN apt-get update \
  && apt-get install -y --no-install-recommends git ripgrep ca-certificates \
  && rm -rf /var/lib/apt/lists/* \
  && mkdir -p /data && chown 1000:1000 /data
WORKDIR /app
ENV NODE_ENV=production \
  BOSUN_RUNTIME_HOST=0.0.0.0 \
  BOSUN_RUNTIME_PORT=8787 \
  BOSUN_RUNTIME_DATA_DIR=/data
COPY --from=deps --chown=1000:1000 /app/node_modules ./node_modules
COPY --chown=1000:1000 package.json ./
COPY --chown=1000:1000 packages/domain packages/domain
COPY --chown=1000:1000 packages/runtime/package.json packages/runtime/
COPY --chown=1000:1000 packages/runtime/src packages/runtime/src
USER 1000:1000
VOLUME ["/data"]
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s CMD ["node", "-e", "fetch('http://127.0.0.1:8787/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: node is PID 1 and receives SIGTERM itself (the runtime stops its agents and exits).
ENTRYPOINT ["node", "packages/runtime/src/main.ts"]

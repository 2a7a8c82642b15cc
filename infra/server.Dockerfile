# The Bosun server image (issue 12; docs/interface.md: What the service does 1, 8; Design rules):
# the control plane — HTTP API, Effect Cluster runner, the dashboard under / — as PID 1, running as
# uid 1000, with the migrations in sql/ and the embedded agent runtime it launches when no
# BOSUN_RUNTIME_URL is set (so git and ripgrep for the agents). Built from the repository root:
#   docker build -f infra/server.Dockerfile -t bosun-server .
# Run with DATABASE_URL, REDIS_URL and the S3 settings set (or none of them: embedded defaults,
# data in /data), and BOSUN_MASTER_KEY from a secret.

# The dashboard, built with its development dependencies (Vite); only its dist/ is kept.
FROM node:24-bookworm-slim AS dashboard
WORKDIR /app
COPY package.json package-lock.json ./
COPY packages/domain/package.json packages/domain/
COPY packages/platform/package.json packages/platform/
COPY packages/runtime/package.json packages/runtime/
COPY packages/server/package.json packages/server/
COPY packages/actors/package.json packages/actors/
COPY packages/dashboard/package.json packages/dashboard/
COPY packages/testing/package.json packages/testing/
RUN npm ci --no-audit --no-fund --workspace @bosun/dashboard --include-workspace-root=false
COPY packages/domain/src packages/domain/src
COPY packages/dashboard packages/dashboard
RUN npm run build --workspace @bosun/dashboard

# Production dependencies of the server workspace and the workspaces it imports, from the lockfile.
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
RUN npm ci --omit=dev --no-audit --no-fund --workspace @bosun/server --include-workspace-root=false

FROM node:24-bookworm-slim
# `bosun` on the PATH: the operator CLI (docs/ runbooks: `docker exec <container> bosun …`).
RUN apt-get update \
  && apt-get install -y --no-install-recommends git ripgrep ca-certificates \
  && rm -rf /var/lib/apt/lists/* \
  && mkdir -p /data && chown 1000:1000 /data \
  && printf '#!/bin/sh\nexec node /app/packages/server/src/cli/main.ts "$@"\n' > /usr/local/bin/bosun \
  && chmod 755 /usr/local/bin/bosun
WORKDIR /app
# The API on 8080, the cluster socket on 34431 (other runners reach it at BOSUN_RUNNER_HOST, the
# Pod's IP under Kubernetes). Prometheus /metrics is off until BOSUN_METRICS_PORT is set.
ENV NODE_ENV=production \
  BOSUN_HOST=0.0.0.0 \
  BOSUN_PORT=8080 \
  BOSUN_RUNNER_LISTEN_HOST=0.0.0.0 \
  BOSUN_DATA_DIR=/data
COPY --from=deps --chown=1000:1000 /app/node_modules ./node_modules
COPY --chown=1000:1000 package.json ./
COPY --chown=1000:1000 sql sql
COPY --chown=1000:1000 packages/domain/package.json packages/domain/
COPY --chown=1000:1000 packages/domain/src packages/domain/src
COPY --chown=1000:1000 packages/platform/package.json packages/platform/
COPY --chown=1000:1000 packages/platform/src packages/platform/src
COPY --chown=1000:1000 packages/actors/package.json packages/actors/
COPY --chown=1000:1000 packages/actors/src packages/actors/src
COPY --chown=1000:1000 packages/runtime/package.json packages/runtime/
COPY --chown=1000:1000 packages/runtime/src packages/runtime/src
COPY --chown=1000:1000 packages/server/package.json packages/server/
COPY --chown=1000:1000 packages/server/src packages/server/src
COPY --from=dashboard --chown=1000:1000 /app/packages/dashboard/dist packages/dashboard/dist
USER 1000:1000
VOLUME ["/data"]
EXPOSE 8080 34431
HEALTHCHECK --interval=10s --timeout=3s CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: node is PID 1 and receives SIGTERM itself (the server drains, hands its shards over
# and exits). The semi-space size is npm start's (README: Performance).
ENTRYPOINT ["node", "--max-semi-space-size=16", "packages/server/src/main.ts"]

/**
 * Prometheus `/metrics` on its own address (`BOSUN_METRICS_HOST:BOSUN_METRICS_PORT`), apart from
 * the API port so a NetworkPolicy can open it to the scraper alone and a scrape never queues behind
 * API traffic. Each scrape refreshes the gauges (`Metrics.ts`) and renders this process's registry
 * in the Prometheus text format. Without `BOSUN_METRICS_PORT` no metrics server starts.
 */
import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { PrometheusMetrics } from "effect/observability"
import { AppConfig } from "../config/AppConfig.ts"
import { refreshGauges } from "./Metrics.ts"

const ScrapeRoute = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const context = yield* Effect.context<never>()
    const scrape = refreshGauges(config.role).pipe(
      Effect.andThen(PrometheusMetrics.format()),
      Effect.map((body) => HttpServerResponse.text(body, { contentType: "text/plain; version=0.0.4; charset=utf-8" })),
      Effect.provideContext(context)
    )
    yield* router.add("GET", "/metrics", scrape)
  })
)

/** The metrics server when `BOSUN_METRICS_PORT` is set; needs the Queues and WorkflowRunsRepo. */
export const MetricsServerLive = Layer.unwrap(
  Effect.map(AppConfig, (config) =>
    Option.match(config.metrics, {
      onNone: () => Layer.empty,
      onSome: ({ host, port }) =>
        HttpRouter.serve(ScrapeRoute, { disableLogger: true, disableListenLog: true }).pipe(
          Layer.provide(NodeHttpServer.layer(createServer, { host, port }))
        )
    })
  )
)

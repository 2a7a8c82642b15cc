/**
 * Traces over OTLP/HTTP (docs/operations.md: Traces). When `OTEL_EXPORTER_OTLP_ENDPOINT` (or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, every span of the process is exported: one per HTTP
 * request (the request pipeline adds `bosun.request_id` and, once known,
 * `bosun.org_id`/`bosun.user_id`), one per workflow activity and step of a run (carrying
 * `bosun.run_id`, `bosun.org_id`, `bosun.attempt`), one per provider call (the clients' `Effect.fn`
 * spans). The standard `OTEL_*` settings apply as the OpenTelemetry SDKs read them (headers,
 * compression, batch delay and size, `OTEL_EXPORTER_OTLP_PROTOCOL` `http/protobuf` or `http/json`,
 * `OTEL_SDK_DISABLED`); the resource is `OTEL_SERVICE_NAME` (default `bosun`), this version, and
 * the process's role. Without an endpoint no tracer is installed and spans cost next to nothing.
 */
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { AppConfig } from "../config/AppConfig.ts"
import { BOSUN_VERSION } from "../Version.ts"

export const TracingLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isNone(config.tracing)) return Layer.empty
    const { serviceName, protocol } = config.tracing.value
    return OtlpTracer.layerFromConfig({
      resource: {
        serviceName,
        serviceVersion: BOSUN_VERSION,
        attributes: { "bosun.role": config.role }
      }
    }).pipe(
      Layer.provide(protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
      Layer.provide(FetchHttpClient.layer),
      // OpenTelemetry's default exporter is `otlp`; Effect's reader exports only when it is named.
      // A fallback, so an operator's `OTEL_TRACES_EXPORTER=none` still turns export off.
      Layer.provide(ConfigProvider.layerAdd(ConfigProvider.fromUnknown({ OTEL_TRACES_EXPORTER: "otlp" })))
    )
  })
)

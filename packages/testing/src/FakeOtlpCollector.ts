/**
 * A local stand-in for an OpenTelemetry collector's OTLP/HTTP traces receiver (test code only),
 * on 127.0.0.1: `POST /v1/traces` with an `ExportTraceServiceRequest` in OTLP's JSON encoding
 * (`Content-Type: application/json`) is accepted with 200 `{}` and its spans kept, flattened with
 * their resource's attributes, so a test can read what a process exported. Anything else is 404;
 * a protobuf body is 415 (tests set `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`).
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer } from "effect"

type AnyValue = {
  readonly stringValue?: string
  readonly intValue?: string | number
  readonly doubleValue?: number
  readonly boolValue?: boolean
}
type KeyValue = { readonly key: string; readonly value: AnyValue }

export interface CollectedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number
  readonly startNanos: bigint
  readonly endNanos: bigint
  readonly attributes: Readonly<Record<string, string | number | boolean>>
  readonly resource: Readonly<Record<string, string | number | boolean>>
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  readonly status: number
}

interface ExportRequest {
  readonly resourceSpans?: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<KeyValue> }
    readonly scopeSpans?: ReadonlyArray<{
      readonly spans?: ReadonlyArray<{
        readonly traceId: string
        readonly spanId: string
        readonly parentSpanId?: string
        readonly name: string
        readonly kind?: number
        readonly startTimeUnixNano: string
        readonly endTimeUnixNano: string
        readonly attributes?: ReadonlyArray<KeyValue>
        readonly status?: { readonly code?: number }
      }>
    }>
  }>
}

const attributeValue = (value: AnyValue): string | number | boolean =>
  value.stringValue ??
  (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue ?? ""))

const record = (attributes: ReadonlyArray<KeyValue> | undefined) =>
  Object.fromEntries((attributes ?? []).map((kv) => [kv.key, attributeValue(kv.value)]))

export interface FakeOtlpCollectorHandle {
  /** `http://127.0.0.1:<port>`, what `OTEL_EXPORTER_OTLP_ENDPOINT` would be. */
  readonly endpoint: string
  readonly spans: () => ReadonlyArray<CollectedSpan>
}

export class FakeOtlpCollector extends Context.Service<FakeOtlpCollector, FakeOtlpCollectorHandle>()(
  "@bosun/testing/FakeOtlpCollector"
) {
  static readonly layer = Layer.effect(
    FakeOtlpCollector,
    Effect.acquireRelease(
      Effect.callback<{ readonly handle: FakeOtlpCollectorHandle; readonly close: () => void }>((resume) => {
        const spans: Array<CollectedSpan> = []
        const server = createServer((request, response) => {
          const chunks: Array<Buffer> = []
          request.on("data", (chunk: Buffer) => chunks.push(chunk))
          request.on("end", () => {
            const answer = (status: number, body: unknown) => {
              response.writeHead(status, { "content-type": "application/json" })
              response.end(JSON.stringify(body))
            }
            if (request.method !== "POST" || request.url !== "/v1/traces") return answer(404, {})
            if (!(request.headers["content-type"] ?? "").startsWith("application/json")) return answer(415, {})
            const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportRequest
            for (const resourceSpans of body.resourceSpans ?? []) {
              const resource = record(resourceSpans.resource?.attributes)
              for (const scope of resourceSpans.scopeSpans ?? []) {
                for (const span of scope.spans ?? []) {
                  spans.push({
                    traceId: span.traceId,
                    spanId: span.spanId,
                    parentSpanId: span.parentSpanId === "" ? undefined : span.parentSpanId,
                    name: span.name,
                    kind: span.kind ?? 0,
                    startNanos: BigInt(span.startTimeUnixNano),
                    endNanos: BigInt(span.endTimeUnixNano),
                    attributes: record(span.attributes),
                    resource,
                    status: span.status?.code ?? 0
                  })
                }
              }
            }
            answer(200, {})
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resume(
            Effect.succeed({
              handle: { endpoint: `http://127.0.0.1:${port}`, spans: () => [...spans] },
              close: () => server.close()
            })
          )
        })
      }),
      ({ close }) => Effect.sync(close)
    ).pipe(Effect.map(({ handle }) => handle))
  )
}

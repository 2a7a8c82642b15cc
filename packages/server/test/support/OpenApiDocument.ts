/**
 * The served `/api/v1/openapi.json` as the sweeps read it: the parts of an OpenAPI document they
 * walk, request-body schemas with every `$ref` resolved, and the error codes that say a request
 * never reached its operation's route.
 */

export interface JsonSchema {
  readonly $ref?: string
  readonly type?: string | ReadonlyArray<string>
  readonly enum?: ReadonlyArray<unknown>
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: ReadonlyArray<string>
  readonly items?: JsonSchema
  readonly anyOf?: ReadonlyArray<JsonSchema>
  readonly oneOf?: ReadonlyArray<JsonSchema>
  readonly allOf?: ReadonlyArray<JsonSchema>
  readonly minLength?: number
  readonly minimum?: number
  readonly minItems?: number
  readonly additionalProperties?: boolean | JsonSchema
}

export interface OpenApiOperation {
  readonly parameters?: ReadonlyArray<{ readonly name: string; readonly in: string; readonly schema?: JsonSchema }>
  readonly requestBody?: { readonly content?: Readonly<Record<string, { readonly schema?: JsonSchema }>> }
  readonly responses?: Readonly<Record<string, { readonly content?: Readonly<Record<string, unknown>> }>>
  readonly security?: ReadonlyArray<Readonly<Record<string, unknown>>>
}

export interface OpenApiDocument {
  readonly paths: Readonly<Record<string, Readonly<Record<string, OpenApiOperation>>>>
  readonly components?: { readonly schemas?: Readonly<Record<string, JsonSchema>> }
}

/** `schema` with every `$ref` into the document's components replaced by its target, 20 levels deep at most. */
export const resolveRefs = (document: OpenApiDocument, schema: JsonSchema): JsonSchema => {
  const resolve = (at: JsonSchema): JsonSchema => {
    const ref = at.$ref
    if (ref === undefined) return at
    const target = document.components?.schemas?.[ref.replace("#/components/schemas/", "")]
    return target === undefined ? {} : resolve(target)
  }
  const deep = (at: JsonSchema, depth: number): JsonSchema => {
    const resolved = resolve(at)
    if (depth > 20) return resolved
    const next = (inner: JsonSchema) => deep(inner, depth + 1)
    return {
      ...resolved,
      ...(resolved.properties === undefined
        ? {}
        : { properties: Object.fromEntries(Object.entries(resolved.properties).map(([k, v]) => [k, next(v)])) }),
      ...(resolved.items === undefined ? {} : { items: next(resolved.items) }),
      ...(typeof resolved.additionalProperties === "object"
        ? { additionalProperties: next(resolved.additionalProperties) }
        : {}),
      ...(resolved.anyOf === undefined ? {} : { anyOf: resolved.anyOf.map(next) }),
      ...(resolved.oneOf === undefined ? {} : { oneOf: resolved.oneOf.map(next) })
    }
  }
  return deep(schema, 0)
}

/** Codes saying the request did not reach the operation's route with usable path parameters. */
export const MISSED_ROUTE: ReadonlySet<string> = new Set([
  "route_not_found",
  "method_not_allowed",
  "invalid_path_parameter"
])

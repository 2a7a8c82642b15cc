/**
 * GitHub's own published descriptions as the oracle for the fake GitHub: the REST OpenAPI
 * description (`@octokit/openapi`) and the GraphQL schema (`@octokit/graphql-schema`), each loaded
 * lazily once per process, and plain checks naming how a request or an answer departs from them.
 */
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv"
import addFormats from "ajv-formats"
import {
  buildSchema,
  type DocumentNode,
  type GraphQLSchema,
  getVariableValues,
  Kind,
  NoDeprecatedCustomRule,
  type OperationDefinitionNode,
  parse,
  specifiedRules,
  validate
} from "graphql"

// ---------------------------------------------------------------------------------------------
// The REST description, as far as these checks read it
// ---------------------------------------------------------------------------------------------

type SchemaObject = { readonly [keyword: string]: unknown }

interface Reference {
  readonly $ref: string
}

export interface RestParameter {
  readonly name: string
  readonly in: "path" | "query" | "header" | "cookie"
  readonly required?: boolean
  readonly schema?: SchemaObject
  /** GitHub's mark for a path parameter whose value may span several `/`-separated segments. */
  readonly "x-multi-segment"?: boolean
}

interface MediaType {
  readonly schema?: SchemaObject
}

export interface RestRequestBody {
  readonly required?: boolean
  readonly content?: { readonly [contentType: string]: MediaType }
}

interface RestResponse {
  readonly content?: { readonly [contentType: string]: MediaType }
}

interface Operation {
  readonly operationId: string
  readonly parameters?: ReadonlyArray<RestParameter | Reference>
  readonly requestBody?: RestRequestBody
  readonly responses?: { readonly [status: string]: RestResponse | Reference }
}

type PathItem = { readonly parameters?: ReadonlyArray<RestParameter | Reference> } & {
  readonly [method: string]: Operation | ReadonlyArray<RestParameter | Reference> | undefined
}

interface Description {
  readonly paths: { readonly [template: string]: PathItem }
  readonly components: {
    readonly parameters: { readonly [name: string]: RestParameter }
    readonly responses: { readonly [name: string]: RestResponse }
  }
}

/** An operation of GitHub's REST API that a request's method and path reached. */
export interface RestOperation {
  /** The description's path template, e.g. `/repos/{owner}/{repo}/pulls/{pull_number}`. */
  readonly template: string
  /** Lower case, as the description keys it. */
  readonly method: string
  readonly operationId: string
  /** Path-item and operation parameters, `#/components/parameters` references resolved. */
  readonly parameters: ReadonlyArray<RestParameter>
  readonly requestBody: RestRequestBody | undefined
  /** The request's value of each path parameter, percent-decoded. */
  readonly pathParameters: Readonly<Record<string, string>>
}

type Segment =
  | { readonly kind: "literal"; readonly text: string }
  | { readonly kind: "parameter"; readonly name: string; readonly multi: boolean }
  | { readonly kind: "pattern"; readonly regex: RegExp; readonly names: ReadonlyArray<string> }

interface Route {
  readonly template: string
  readonly method: string
  readonly operation: Operation
  readonly segments: ReadonlyArray<Segment>
  readonly literals: number
  readonly patterns: number
  /** Each resolved parameter with the JSON pointer of its schema, so ajv resolves its `$ref`s. */
  readonly parameters: ReadonlyArray<{ readonly parameter: RestParameter; readonly schemaPointer: string }>
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

/** The `$id` the description is known by inside ajv; any unique URI would do. */
const DESCRIPTION_ID = "https://bosun.test/github-rest-description.json"

const pointerOf = (...tokens: ReadonlyArray<string | number>) =>
  tokens.map((token) => `/${String(token).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("")

/** A `$ref` into the description; ajv wants the fragment URI-encoded (templates hold `{`, `}`). */
const refTo = (pointer: string) =>
  `${DESCRIPTION_ID}#${pointer
    .split("/")
    .map((token) => encodeURIComponent(token))
    .join("/")}`

const isReference = (value: object): value is Reference => "$ref" in value && typeof value.$ref === "string"

/**
 * OpenAPI 3.0's `nullable` as JSON Schema, in place: ajv's own `nullable` support refuses a
 * `nullable` without `type` (GitHub writes `{ nullable: true, allOf: [{ $ref }] }` often) and
 * keeps `null` out of an `enum` that does not list it, which GitHub's answers do send.
 */
const nullableAsJsonSchema = (node: unknown, formats: Set<string>): void => {
  if (Array.isArray(node)) {
    for (const item of node) nullableAsJsonSchema(item, formats)
    return
  }
  if (node === null || typeof node !== "object") return
  const schema = node as Record<string, unknown>
  for (const value of Object.values(schema)) nullableAsJsonSchema(value, formats)
  if (typeof schema.format === "string") formats.add(schema.format)
  if (schema.nullable !== true) return
  delete schema.nullable
  const composed = ["allOf", "anyOf", "oneOf", "$ref"].some((keyword) => keyword in schema)
  if (composed) {
    const rest = { ...schema }
    for (const key of Object.keys(schema)) delete schema[key]
    schema.anyOf = [{ type: "null" }, rest]
    return
  }
  if (typeof schema.type === "string") schema.type = [schema.type, "null"]
  if (Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null]
}

const segmentsOf = (template: string, operationParameters: ReadonlyArray<RestParameter>): Array<Segment> =>
  template
    .split("/")
    .slice(1)
    .map((text): Segment => {
      const whole = /^\{([^}]+)\}$/.exec(text)
      if (whole?.[1] !== undefined) {
        const name = whole[1]
        const multi = operationParameters.some(
          (p) => p.in === "path" && p.name === name && p["x-multi-segment"] === true
        )
        return { kind: "parameter", name, multi }
      }
      if (!text.includes("{")) return { kind: "literal", text }
      // Only `compare/{base}...{head}` today: parameters sharing a segment with literal text.
      const names: Array<string> = []
      const source = text
        .split(/(\{[^}]+\})/)
        .map((part) => {
          const parameter = /^\{([^}]+)\}$/.exec(part)
          if (parameter?.[1] === undefined) return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          names.push(parameter[1])
          return "(.+?)"
        })
        .join("")
      return { kind: "pattern", regex: new RegExp(`^${source}$`), names }
    })

interface Loaded {
  readonly document: Description
  /** Routes of each method, best first: more literal segments, then more partly literal ones, then more segments. */
  readonly routes: ReadonlyMap<string, ReadonlyArray<Route>>
  readonly formats: ReadonlySet<string>
}

let loaded: Loaded | undefined

const resolveParameter = (document: Description, entry: RestParameter | Reference, fallbackPointer: string) => {
  if (!isReference(entry)) return { parameter: entry, schemaPointer: `${fallbackPointer}/schema` }
  const name = entry.$ref.replace("#/components/parameters/", "")
  const parameter = document.components.parameters[name]
  if (parameter === undefined) throw new Error(`GitHub's description refers to a missing parameter ${entry.$ref}`)
  return { parameter, schemaPointer: `${pointerOf("components", "parameters", name)}/schema` }
}

/**
 * The REST description, parsed, made JSON Schema and indexed on first use (about 0.15 s; each of
 * the two ajv instances below adds about 0.08 s on its first use).
 */
const restDescription = (): Loaded => {
  if (loaded !== undefined) return loaded
  const file = createRequire(import.meta.url).resolve("@octokit/openapi/generated/api.github.com.json")
  const parsed = JSON.parse(readFileSync(file, "utf8")) as Description
  // Only what requests and answers are checked against; the rest (webhooks) is left to the GC.
  const document: Description = { paths: parsed.paths, components: parsed.components }
  const formats = new Set<string>()
  nullableAsJsonSchema(document, formats)
  const routes = new Map<string, Array<Route>>()
  for (const [template, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const operation = item[method]
      if (operation === undefined || Array.isArray(operation)) continue
      const op = operation as Operation
      const shared = (item.parameters ?? []).map((entry, i) =>
        resolveParameter(document, entry, pointerOf("paths", template, "parameters", i))
      )
      const own = (op.parameters ?? []).map((entry, i) =>
        resolveParameter(document, entry, pointerOf("paths", template, method, "parameters", i))
      )
      // An operation's parameter overrides the path item's of the same name and location.
      const parameters = [
        ...shared.filter(
          (s) => !own.some((o) => o.parameter.name === s.parameter.name && o.parameter.in === s.parameter.in)
        ),
        ...own
      ]
      const segments = segmentsOf(
        template,
        parameters.map((p) => p.parameter)
      )
      const route: Route = {
        template,
        method,
        operation: op,
        segments,
        literals: segments.filter((s) => s.kind === "literal").length,
        patterns: segments.filter((s) => s.kind === "pattern").length,
        parameters
      }
      const list = routes.get(method) ?? []
      list.push(route)
      routes.set(method, list)
    }
  }
  for (const list of routes.values()) {
    list.sort((a, b) => b.literals - a.literals || b.patterns - a.patterns || b.segments.length - a.segments.length)
  }
  loaded = { document, routes, formats }
  return loaded
}

const decodeSegment = (raw: string) => {
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

/** The path parameters `parts` bind when they fit `segments`, or undefined. */
const matchSegments = (
  segments: ReadonlyArray<Segment>,
  at: number,
  parts: ReadonlyArray<string>,
  from: number,
  bound: Readonly<Record<string, string>>
): Readonly<Record<string, string>> | undefined => {
  const segment = segments[at]
  if (segment === undefined) return from === parts.length ? bound : undefined
  const part = parts[from]
  if (part === undefined) return undefined
  if (segment.kind === "literal") {
    // Literal, so an empty part too: the root operation's template is `/`.
    return part === segment.text ? matchSegments(segments, at + 1, parts, from + 1, bound) : undefined
  }
  if (part === "") return undefined
  switch (segment.kind) {
    case "pattern": {
      const found = segment.regex.exec(part)
      if (found === null) return undefined
      const values = Object.fromEntries(segment.names.map((name, i) => [name, decodeSegment(found[i + 1] ?? "")]))
      return matchSegments(segments, at + 1, parts, from + 1, { ...bound, ...values })
    }
    case "parameter": {
      const remaining = segments.length - at - 1
      const last = segment.multi ? parts.length - remaining : from + 1
      for (let end = from + 1; end <= last; end++) {
        const taken = parts.slice(from, end)
        if (taken.includes("")) return undefined
        const value = decodeSegment(taken.join("/"))
        const found = matchSegments(segments, at + 1, parts, end, { ...bound, [segment.name]: value })
        if (found !== undefined) return found
      }
      return undefined
    }
  }
}

const REST_PREFIX = "/api/v3"

const isRest = (pathname: string) => pathname.startsWith(`${REST_PREFIX}/`)

const withoutPrefix = (pathname: string) =>
  pathname === REST_PREFIX || isRest(pathname) ? pathname.slice(REST_PREFIX.length) : pathname

const findRoute = (method: string, path: string) => {
  const parts = path.split("/").slice(1)
  const routes = restDescription().routes.get(method) ?? []
  for (const route of routes) {
    const pathParameters = matchSegments(route.segments, 0, parts, 0, {})
    if (pathParameters !== undefined) return { route, pathParameters }
  }
  return undefined
}

const lookup = (method: string, pathname: string) => {
  const path = withoutPrefix(pathname)
  const lower = method.toLowerCase()
  // GitHub answers HEAD wherever it answers GET; the description lists GET only.
  return findRoute(lower, path) ?? (lower === "head" ? findRoute("get", path) : undefined)
}

/**
 * The operation of GitHub's REST API that `method` and `pathname` reach (a leading `/api/v3`, the
 * prefix GitHub Enterprise serves REST under, is dropped), or undefined. Literal segments win over
 * templated ones (`pulls/comments` over `pulls/{pull_number}`); a parameter spans several segments
 * only where the description marks it `x-multi-segment` (`contents/{path}`, `commits/{ref}`, ...).
 */
export const restOperation = (method: string, pathname: string): RestOperation | undefined => {
  const found = lookup(method, pathname)
  if (found === undefined) return undefined
  const { route, pathParameters } = found
  return {
    template: route.template,
    method: route.method,
    operationId: route.operation.operationId,
    parameters: route.parameters.map((p) => p.parameter),
    requestBody: route.operation.requestBody,
    pathParameters
  }
}

// ---------------------------------------------------------------------------------------------
// Validation with ajv
// ---------------------------------------------------------------------------------------------

const makeAjv = (coerceTypes: false | "array") => {
  const { document, formats } = restDescription()
  // `validateSchema: false`: the description is not itself a JSON Schema, only holds them.
  const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false, coerceTypes })
  // A CommonJS module whose `module.exports` is the plugin and also carries it as `.default`.
  addFormats.default(ajv)
  // GitHub's own formats (`repo.nwo`, `timestamp`, ...) constrain nothing ajv can check.
  for (const format of formats) if (ajv.formats[format] === undefined) ajv.addFormat(format, true)
  ajv.addSchema({ $id: DESCRIPTION_ID, ...document })
  return ajv
}

let bodyAjv: Ajv | undefined
/** Bodies are JSON: a string where GitHub wants a number is a violation, never coerced. */
const bodies = () => {
  bodyAjv ??= makeAjv(false)
  return bodyAjv
}

let parameterAjv: Ajv | undefined
/** Path and query values are strings on the wire: coerced to each schema's type before checking. */
const parameterValues = () => {
  parameterAjv ??= makeAjv("array")
  return parameterAjv
}

const validators = new Map<string, ValidateFunction>()
const validatorOf = (ajv: Ajv, key: string, schema: () => SchemaObject) => {
  let found = validators.get(key)
  if (found === undefined) {
    found = ajv.compile(schema())
    validators.set(key, found)
  }
  return found
}

const describeError = (error: ErrorObject) => {
  const params: Record<string, unknown> = error.params
  const detail =
    error.keyword === "enum" && Array.isArray(params.allowedValues)
      ? ` (${params.allowedValues.map((value) => JSON.stringify(value)).join(", ")})`
      : error.keyword === "additionalProperties" && typeof params.additionalProperty === "string"
        ? ` (${params.additionalProperty})`
        : ""
  return `${error.message ?? error.keyword}${detail}`
}

const bodyErrors = (validator: ValidateFunction, body: unknown) =>
  validator(body)
    ? []
    : (validator.errors ?? []).map(
        (error) => `${error.instancePath === "" ? "(the whole body)" : error.instancePath} ${describeError(error)}`
      )

/** The JSON media type of a content map: `application/json`, else the first `…+json`/`…json`. */
const jsonContentType = (content: { readonly [contentType: string]: MediaType } | undefined) => {
  if (content === undefined) return undefined
  if (content["application/json"] !== undefined) return "application/json"
  return Object.keys(content).find((type) => type.endsWith("json"))
}

/**
 * What a plainly typed value looks like in a URL. ajv's coercion takes any string `Number()` takes
 * (`1e3`, ` 1`, `0x1`), so `pulls/1e3` would pass as pull 1000.
 */
const canonicalString: Readonly<Record<string, RegExp>> = {
  integer: /^-?\d+$/,
  number: /^-?\d+(\.\d+)?$/,
  boolean: /^(true|false)$/
}

const plainType = (schema: SchemaObject | undefined) => (typeof schema?.type === "string" ? schema.type : undefined)

/** Violations of path or query parameters, `values` holding each as the request sent it. */
const parameterViolations = (
  route: Route,
  location: "path" | "query",
  values: ReadonlyMap<string, ReadonlyArray<string>>
) => {
  const violations: Array<string> = []
  const declared = route.parameters.filter((p) => p.parameter.in === location)
  const toCheck: Record<string, string | ReadonlyArray<string>> = {}
  for (const [name, raw] of values) {
    const entry = declared.find((p) => p.parameter.name === name)
    if (entry === undefined) {
      const names = declared.map((p) => p.parameter.name)
      violations.push(
        `${location} parameter ${name} is not one GitHub declares here (declared: ${names.length === 0 ? "none" : names.join(", ")})`
      )
      continue
    }
    const type = plainType(entry.parameter.schema)
    const pattern = type === undefined ? undefined : canonicalString[type]
    const first = raw[0]
    if (pattern !== undefined && raw.length === 1 && first !== undefined && !pattern.test(first)) {
      violations.push(`${location} parameter ${name} must be ${type} (got ${JSON.stringify(first)})`)
      continue
    }
    toCheck[name] = raw.length === 1 && first !== undefined ? first : raw
  }
  const validator = validatorOf(parameterValues(), `${route.method} ${route.template} ${location}`, () => ({
    type: "object",
    properties: Object.fromEntries(declared.map((p) => [p.parameter.name, { $ref: refTo(p.schemaPointer) }] as const)),
    required: declared.filter((p) => p.parameter.required === true).map((p) => p.parameter.name)
  }))
  if (!validator(toCheck)) {
    for (const error of validator.errors ?? []) {
      const params: Record<string, unknown> = error.params
      if (error.keyword === "required" && typeof params.missingProperty === "string") {
        // A parameter that failed the canonical-form check above is reported there already.
        if (!values.has(params.missingProperty))
          violations.push(`${location} parameter ${params.missingProperty} is required`)
        continue
      }
      const [, name = "", ...rest] = error.instancePath.split("/")
      const within = rest.length === 0 ? "" : ` at /${rest.join("/")}`
      violations.push(`${location} parameter ${decodeSegment(name)}${within} ${describeError(error)}`)
    }
  }
  return violations
}

const queryValues = (search: string | undefined) => {
  const values = new Map<string, Array<string>>()
  for (const [key, value] of new URLSearchParams(search ?? "")) {
    // `owner[]=a&owner[]=b` is how GitHub's description spells an array in the query.
    const name = key.endsWith("[]") ? key.slice(0, -2) : key
    values.set(name, [...(values.get(name) ?? []), value])
  }
  return values
}

const unknownRouteViolation = (method: string, path: string) => {
  const upper = method.toUpperCase()
  const others = METHODS.filter((other) => other !== method.toLowerCase())
    .map((other) => {
      const found = findRoute(other, path)
      return found === undefined ? undefined : `${other.toUpperCase()} ${found.route.template}`
    })
    .filter((other) => other !== undefined)
  return others.length === 0
    ? `${upper} ${path}: GitHub's REST API has no such path`
    : `${upper} ${path}: GitHub's REST API has no ${upper} here (it has ${others.join(", ")})`
}

export interface RestRequest {
  readonly method: string
  /** The request's path as sent, percent-encoding intact, e.g. `/api/v3/repos/o/r/pulls/1`. */
  readonly pathname: string
  /** The query string, with or without its leading `?`. */
  readonly search?: string
  /** The parsed JSON body; undefined when the request had none. */
  readonly body?: unknown
}

/**
 * How a request to the fake's REST API departs from GitHub's description: an unknown method or
 * path, path or query parameters of the wrong type or not declared, a required query parameter
 * missing, a JSON body outside the operation's schema. Each names the method and path template.
 * Requests outside `/api/v3/` (OAuth, git over HTTP, GraphQL) are not REST: none.
 */
export const restRequestViolations = (request: RestRequest): ReadonlyArray<string> => {
  if (!isRest(request.pathname)) return []
  const found = lookup(request.method, request.pathname)
  if (found === undefined) return [unknownRouteViolation(request.method, withoutPrefix(request.pathname))]
  const { route, pathParameters } = found
  const where = `${request.method.toUpperCase()} ${route.template}`
  const path = new Map(Object.entries(pathParameters).map(([name, value]) => [name, [value]] as const))
  const violations = [
    ...parameterViolations(route, "path", path),
    ...parameterViolations(route, "query", queryValues(request.search))
  ]
  const requestBody = route.operation.requestBody
  if (request.body === undefined) {
    if (requestBody?.required === true) violations.push("request body is required")
  } else if (requestBody === undefined) {
    violations.push("GitHub takes no request body here")
  } else {
    const contentType = jsonContentType(requestBody.content)
    if (contentType !== undefined) {
      const validator = validatorOf(bodies(), `${route.method} ${route.template} body`, () => ({
        $ref: refTo(pointerOf("paths", route.template, route.method, "requestBody", "content", contentType, "schema"))
      }))
      violations.push(...bodyErrors(validator, request.body).map((error) => `request body ${error}`))
    }
  }
  return violations.map((violation) => `${where}: ${violation}`)
}

export interface RestAnswer {
  readonly method: string
  readonly pathname: string
  readonly status: number
  /** The parsed JSON body; undefined when the answer had none. */
  readonly body?: unknown
}

/**
 * How an answer of the fake's REST API departs from what GitHub documents for that operation and
 * status: the JSON body against the response schema. An undocumented success status is a
 * violation; an undocumented error status is not, since GitHub documents only some of the
 * 401/403/404/5xx every endpoint can answer.
 */
export const restResponseViolations = (answer: RestAnswer): ReadonlyArray<string> => {
  if (!isRest(answer.pathname)) return []
  const found = lookup(answer.method, answer.pathname)
  if (found === undefined) return [unknownRouteViolation(answer.method, withoutPrefix(answer.pathname))]
  const { route } = found
  const where = `${answer.method.toUpperCase()} ${route.template}`
  const responses = route.operation.responses ?? {}
  const status = String(answer.status)
  const key = [status, `${status.charAt(0)}XX`, "default"].find((candidate) => responses[candidate] !== undefined)
  const entry = key === undefined ? undefined : responses[key]
  if (key === undefined || entry === undefined) {
    return answer.status >= 400
      ? []
      : [`${where}: GitHub documents no ${status} answer (documented: ${Object.keys(responses).join(", ")})`]
  }
  const { document } = restDescription()
  const referenced = isReference(entry) ? entry.$ref.replace("#/components/responses/", "") : undefined
  const response = referenced === undefined ? entry : document.components.responses[referenced]
  const base =
    referenced === undefined
      ? pointerOf("paths", route.template, route.method, "responses", key)
      : pointerOf("components", "responses", referenced)
  if (response === undefined || isReference(response)) return []
  if (response.content === undefined) {
    return answer.body === undefined ? [] : [`${where}: GitHub documents the ${status} answer without a body`]
  }
  const contentType = jsonContentType(response.content)
  if (contentType === undefined) return []
  const validator = validatorOf(bodies(), `${route.method} ${route.template} ${key}`, () => ({
    $ref: refTo(`${base}${pointerOf("content", contentType, "schema")}`)
  }))
  return bodyErrors(validator, answer.body).map((error) => `${where}: ${status} answer ${error}`)
}

// ---------------------------------------------------------------------------------------------
// GraphQL
// ---------------------------------------------------------------------------------------------

let graphqlSchema: GraphQLSchema | undefined

/** GitHub's GraphQL schema, built on first use (about 0.15 s). */
const githubGraphqlSchema = () => {
  if (graphqlSchema !== undefined) return graphqlSchema
  // The package exports only its entry, which parses the 5 MB introspection JSON on import.
  const sdl = readFileSync(new URL("./schema.graphql", import.meta.resolve("@octokit/graphql-schema")), "utf8")
  // The published SDL defines `EnterpriseOwnerInfo.repositoryDeployKeySetting` twice, which SDL
  // validation rejects; the schema itself is sound (validate() still asserts it).
  graphqlSchema = buildSchema(sdl, { assumeValidSDL: true })
  return graphqlSchema
}

const graphqlRules = [...specifiedRules, NoDeprecatedCustomRule]

export interface GraphqlRequest {
  readonly query: string
  readonly variables?: Readonly<Record<string, unknown>> | null
  readonly operationName?: string | null
}

/**
 * How a GraphQL request departs from GitHub's schema: syntax, the standard validation rules,
 * any deprecated field, argument or enum value, and variables that do not coerce to their types.
 */
export const graphqlRequestViolations = (request: GraphqlRequest): ReadonlyArray<string> => {
  const schema = githubGraphqlSchema()
  let document: DocumentNode
  try {
    document = parse(request.query)
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)]
  }
  const violations = validate(schema, document, graphqlRules).map((error) => error.message)
  const operations = document.definitions.filter(
    (definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION
  )
  const name = request.operationName ?? undefined
  const operation =
    name === undefined
      ? operations.length === 1
        ? operations[0]
        : undefined
      : operations.find((o) => o.name?.value === name)
  if (operation === undefined) {
    violations.push(
      name !== undefined
        ? `no operation named ${name}`
        : operations.length === 0
          ? "no operation in the document"
          : "several operations and no operationName to choose one"
    )
    return violations
  }
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], request.variables ?? {})
  if (coerced.errors !== undefined) violations.push(...coerced.errors.map((error) => error.message))
  return violations
}

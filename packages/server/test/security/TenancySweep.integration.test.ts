/**
 * Every session operation of the served OpenAPI document under `/organizations/{organization_id}`,
 * asked by an ADMIN of organization A about organization B and about B's resources: each answer is
 * the 404 of a missing organization or resource, equal to the one for an id that does not exist,
 * names nothing of B's and writes no row. The operations come from `/api/v1/openapi.json` at run
 * time, so one added later is covered without touching this test.
 */
import { createHash, randomUUID } from "node:crypto"
import { assert, layer } from "@effect/vitest"
import { Console, Effect, Option } from "effect"
import { ContextSuggestionsRepo } from "../../src/features/contextSuggestions/ContextSuggestionsRepo.ts"
import { DeepScanFindingsRepo } from "../../src/features/deepScans/DeepScanFindingsRepo.ts"
import { DeepScansRepo } from "../../src/features/deepScans/DeepScansRepo.ts"
import { MemoriesRepo } from "../../src/features/memories/MemoriesRepo.ts"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { ChatChannelsRepo } from "../../src/features/workItems/ChatChannelsRepo.ts"
import { WorkItemsRepo } from "../../src/features/workItems/WorkItemsRepo.ts"
import { signIn } from "../support/Identity.ts"
import { type JsonSchema, MISSED_ROUTE, type OpenApiDocument, resolveRefs } from "../support/OpenApiDocument.ts"
import { rowCounts } from "../support/RowCounts.ts"
import { insertRun } from "../support/RunRows.ts"
import { baseUrl, layerTestServer, testSettings } from "../support/TestServer.ts"

const ORG_A = "acme-tenancy"
const ORG_B = "globex-tenancy"
const MISSING_ORG = "nobody-tenancy"

interface Operation {
  readonly method: string
  readonly path: string
  readonly pathParams: ReadonlyArray<string>
  /** Path parameters that are no id but one of a set (a configuration group): the set's first value. */
  readonly pathValues: Readonly<Record<string, string>>
  readonly queryParams: ReadonlyArray<string>
  readonly body: JsonSchema | undefined
  /** A server-sent event stream: asked with a short timeout, only its status read. */
  readonly stream: boolean
}

/** Resource ids by the parameter name that carries them (path, query or body field). */
type Ids = Readonly<Record<string, string>>

const operationsOf = (document: OpenApiDocument) => {
  const covered: Array<Operation> = []
  const skipped: Array<string> = []
  for (const [path, item] of Object.entries(document.paths)) {
    if (!path.includes("{organization_id}")) continue
    for (const [method, operation] of Object.entries(item)) {
      // Operations on the bootstrap token are the operator's, over every organization: no membership to probe.
      if (!(operation.security ?? []).some((scheme) => "session" in scheme)) {
        skipped.push(`${method.toUpperCase()} ${path}`)
        continue
      }
      const schema = operation.requestBody?.content?.["application/json"]?.schema
      covered.push({
        method: method.toUpperCase(),
        path,
        pathParams: [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? ""),
        pathValues: Object.fromEntries(
          (operation.parameters ?? []).flatMap((parameter) => {
            const first = parameter.in === "path" ? parameter.schema?.enum?.[0] : undefined
            return typeof first === "string" ? [[parameter.name, first]] : []
          })
        ),
        queryParams: (operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name),
        body: schema === undefined ? undefined : resolveRefs(document, schema),
        // The document describes the run stream by its JSON fallback only: its path names it.
        stream:
          path.endsWith("/stream") ||
          Object.values(operation.responses ?? {}).some((response) => "text/event-stream" in (response.content ?? {}))
      })
    }
  }
  return { covered, skipped }
}

const typeOf = (schema: JsonSchema): string | undefined => {
  if (typeof schema.type === "string") return schema.type
  if (Array.isArray(schema.type)) return schema.type[0]
  if (schema.properties !== undefined) return "object"
  return undefined
}

/**
 * A value the schema accepts, so that the request gets past decoding to the handler: the
 * required fields only, enums their first value, a field named like an id parameter `ids`' value,
 * and a map (an object of free keys) one entry, as a map that must not be empty would refuse none.
 */
const sample = (schema: JsonSchema, ids: Ids, depth = 0): unknown => {
  if (schema.enum !== undefined && schema.enum.length > 0) return schema.enum[0]
  if (depth > 8) return null
  const variant = (schema.anyOf ?? schema.oneOf ?? []).find((inner) => typeOf(inner) !== "null")
  if (typeOf(schema) === undefined && variant !== undefined) return sample(variant, ids, depth + 1)
  switch (typeOf(schema)) {
    case "object": {
      const entries = (schema.required ?? []).map((key) => [
        key,
        ids[key] ?? sample(schema.properties?.[key] ?? {}, ids, depth + 1)
      ])
      const free = schema.additionalProperties
      return Object.fromEntries(
        schema.properties === undefined && typeof free === "object"
          ? [...entries, ["tenancy", sample(free, ids, depth + 1)]]
          : entries
      )
    }
    case "array":
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items ?? {}, ids, depth + 1))
    case "integer":
    case "number":
      return Math.max(schema.minimum ?? 1, 1)
    case "boolean":
      return true
    case "null":
      return null
    default:
      return "tenancy-sweep-value".padEnd(schema.minLength ?? 0, "x")
  }
}

interface Answer {
  readonly status: number
  readonly text: string
  readonly json: unknown
}

/** One request as the ADMIN of A; a stream's body is not read (it would stay open). */
const send = (cookie: string, operation: Operation, target: string, body: string | undefined) =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    const answer = yield* Effect.tryPromise(async (): Promise<Answer> => {
      const response = await fetch(`${base}${target}`, {
        method: operation.method,
        headers: {
          cookie,
          ...(operation.stream ? { accept: "text/event-stream" } : {}),
          ...(body === undefined ? {} : { "content-type": "application/json" })
        },
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(operation.stream ? 3_000 : 15_000)
      })
      if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
        await response.body?.cancel()
        return { status: response.status, text: "", json: undefined }
      }
      const text = await response.text()
      return { status: response.status, text, json: undefined }
    }).pipe(
      // Only a stream outlives the timeout (its headers wait for the first event): status 0.
      Effect.catch((error) => Effect.succeed({ status: 0, text: `no answer: ${String(error.cause)}`, json: undefined }))
    )
    const json = yield* Effect.try(() => (answer.text === "" ? undefined : (JSON.parse(answer.text) as unknown))).pipe(
      Effect.orElseSucceed(() => undefined)
    )
    return { ...answer, json }
  })

/** The problems of an answer that should be a 404 error envelope from the operation's own route. */
const notFoundProblems = (answer: Answer) => {
  const envelope = answer.json as { error?: { code?: unknown; message?: unknown } } | undefined
  const code = envelope?.error?.code
  return [
    answer.status === 404 ? undefined : `status ${answer.status}`,
    typeof code === "string" && MISSED_ROUTE.has(code) ? `missed the route (${code})` : undefined,
    Object.keys(envelope ?? {}).join() === "error" &&
    typeof envelope?.error?.code === "string" &&
    typeof envelope.error.message === "string"
      ? undefined
      : "no error envelope"
  ].filter((problem) => problem !== undefined)
}

/** A repository, a channel, a memory, a work item, a run, a deep scan with a finding and a context suggestion of `org`. */
const seed = (org: string, prefix: string) =>
  Effect.gen(function* () {
    const repositories = yield* RepositoriesRepo
    const repository = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: `${prefix}-owner`,
      name: `${prefix}-secret-repo`,
      defaultBranch: "main"
    })
    const library = yield* repositories.upsert(org, {
      githubRepositoryId: null,
      owner: `${prefix}-owner`,
      name: `${prefix}-secret-lib`,
      defaultBranch: "main"
    })
    const channel = yield* (yield* ChatChannelsRepo).upsert(org, {
      id: `C${prefix.toUpperCase()}SECRET`,
      name: `${prefix}-secret-channel`,
      isPrivate: true
    })
    const memory = yield* (yield* MemoriesRepo).propose(org, {
      repositoryId: repository.id,
      convention: `${prefix}-secret-convention`
    })
    const workItem = yield* (yield* WorkItemsRepo).create(org, {
      kind: "TASK",
      source: "CHAT",
      title: `${prefix}-secret-work-item`,
      state: "WAITING",
      phase: "PLANNING",
      waitingReason: "APPROVAL"
    })
    const run = yield* insertRun(org, {
      workflowType: "PULL_REQUEST_REVIEW",
      repositoryId: repository.id,
      pullRequestNumber: 7
    })
    const scan = yield* (yield* DeepScansRepo).create(org, {
      repositoryId: repository.id,
      defaultBranch: "main",
      headSha: "a".repeat(40),
      requestedBy: null
    })
    const findings = yield* DeepScanFindingsRepo
    yield* findings.record(
      org,
      { id: scan.id, repositoryId: repository.id },
      {
        summary: `${prefix}-secret-summary`,
        complete: true,
        skipped: [],
        suppressedCount: 0,
        findings: [
          {
            fingerprint: createHash("sha256").update(prefix).digest("hex"),
            title: `${prefix}-secret-finding`,
            severity: "HIGH",
            category: "path_traversal",
            cwe: "CWE-22",
            path: "src/files.js",
            startLine: 3,
            endLine: 4,
            symbol: `${prefix}SecretSymbol`,
            evidence: [{ path: "src/files.js", line: 3, note: "the name reaches fs.readFile" }],
            proposedFix: "Resolve the path and check it stays under the root.",
            verification: "UNVERIFIED",
            verificationReason: "No reproduction was attempted",
            reproduction: null
          }
        ]
      }
    )
    const [finding] = yield* findings.list(org, scan.id)
    const suggestion = yield* (yield* ContextSuggestionsRepo).propose(org, {
      primaryRepositoryId: repository.id,
      secondaryRepositoryId: library.id,
      secondaryOwner: `${prefix}-owner`,
      secondaryName: `${prefix}-secret-lib`,
      source: "IMPORT_ANALYSIS",
      reason: `${prefix}-secret-reason`
    })
    assert.isDefined(finding)
    assert.isTrue(Option.isSome(suggestion))
    const ids: Ids = {
      repository_id: repository.id,
      channel_id: channel.id,
      memory_id: memory.id,
      work_item_id: workItem.id,
      run_id: run.id,
      deep_scan_id: scan.id,
      finding_id: finding?.id ?? "",
      suggestion_id: Option.isSome(suggestion) ? suggestion.value.id : ""
    }
    // Everything of the organization a stranger must never read back.
    const secrets = [
      org,
      repository.name,
      library.name,
      channel.name,
      `${prefix}-secret-convention`,
      `${prefix}-secret-work-item`,
      `${prefix}-secret-finding`,
      `${prefix}-secret-summary`,
      `${prefix}-secret-reason`,
      ...Object.values(ids),
      library.id,
      scan.runId
    ]
    return { ids, secrets }
  })

// No AGENT lane: the deep scans' queued runs stay queued instead of writing attempts mid-sweep.
const defaults = testSettings()
const cluster = { ...defaults.cluster, scheduler: { ...defaults.cluster.scheduler, lanes: { AGENT: 0, REVIEW: 4 } } }

layer(layerTestServer({ settings: { cluster } }), { excludeTestServices: true, timeout: "180 seconds" })(
  "Tenancy sweep",
  (it) => {
    it.effect(
      "every organization operation answers another organization and its resources 404, as missing ones, naming nothing",
      () =>
        Effect.gen(function* () {
          const admin = yield* signIn("tenancy-admin-a", [[ORG_A, "ADMIN"]])
          yield* signIn("tenancy-admin-b", [[ORG_B, "ADMIN"]])
          const a = yield* seed(ORG_A, "acme")
          const b = yield* seed(ORG_B, "globex")

          const document = yield* send(
            admin.cookie,
            {
              method: "GET",
              path: "",
              pathParams: [],
              pathValues: {},
              queryParams: [],
              body: undefined,
              stream: false
            },
            "/api/v1/openapi.json",
            undefined
          )
          assert.strictEqual(document.status, 200)
          const { covered, skipped } = operationsOf(document.json as OpenApiDocument)
          // A walk that found nothing would pass vacuously.
          assert.isAtLeast(covered.length, 30, "organization operations in the OpenAPI document")

          const started = performance.now()
          const initial = yield* rowCounts
          let sent = 0
          const failures: Array<string> = []

          /** Asks `operation` in `org` with `ids` in its path, query and body; answers which tables it wrote. */
          const ask = (operation: Operation, org: string, ids: Ids) =>
            Effect.gen(function* () {
              const values: Ids = { ...ids, organization_id: org }
              const path = operation.path.replace(/\{(\w+)\}/g, (_, name: string) =>
                encodeURIComponent(values[name] ?? operation.pathValues[name] ?? "tenancy-1")
              )
              const query = operation.queryParams.filter((name) => ids[name] !== undefined)
              const search = new URLSearchParams(
                query.map((name): [string, string] => [name, ids[name] ?? ""])
              ).toString()
              const body = operation.body === undefined ? undefined : JSON.stringify(sample(operation.body, ids))
              const before = yield* rowCounts
              const answer = yield* send(admin.cookie, operation, search === "" ? path : `${path}?${search}`, body)
              const after = yield* rowCounts
              sent++
              const writes = Object.keys(before).filter((table) => before[table] !== after[table])
              return { answer, writes }
            })

          /**
           * Asks `operation` twice, with `probe`'s ids and with `missing`'s, and records every
           * problem: unequal answers, a leak of B, a write, and unless `lenient` anything but a 404.
           */
          const compare = (
            operation: Operation,
            what: string,
            probe: { readonly org: string; readonly ids: Ids },
            missing: { readonly org: string; readonly ids: Ids },
            lenient = false
          ) =>
            Effect.gen(function* () {
              const probed = yield* ask(operation, probe.org, probe.ids)
              const absent = yield* ask(operation, missing.org, missing.ids)
              const leaked = b.secrets.filter(
                (secret) => secret !== "" && (probed.answer.text + absent.answer.text).includes(secret)
              )
              const problems = [
                ...(lenient ? [] : notFoundProblems(probed.answer)),
                probed.answer.status === 403 ? "answered 403 (tells the resource exists)" : undefined,
                probed.answer.status !== absent.answer.status ||
                JSON.stringify(probed.answer.json) !== JSON.stringify(absent.answer.json)
                  ? `differs from a missing id's answer (${absent.answer.status} ${absent.answer.text.slice(0, 120)})`
                  : undefined,
                leaked.length > 0 ? `names B's ${leaked.join(", ")}` : undefined,
                ...[...probed.writes, ...absent.writes].map((table) => `wrote ${table}`)
              ].filter((problem) => problem !== undefined)
              if (problems.length > 0) {
                failures.push(
                  `${operation.method} ${operation.path} ${what}: ${problems.join("; ")} — ${probed.answer.status} ${probed.answer.text.slice(0, 160)}`
                )
              }
            })

          const fresh = (names: ReadonlyArray<string>): Ids =>
            Object.fromEntries(names.map((name) => [name, `tenancy-${randomUUID()}`]))

          for (const operation of covered) {
            const others = operation.pathParams.filter((name) => name !== "organization_id")
            const owned = others.filter((name) => b.ids[name] !== undefined)
            const bodyIds = Object.keys(operation.body?.properties ?? {}).filter((name) => b.ids[name] !== undefined)
            const queryIds = operation.queryParams.filter((name) => b.ids[name] !== undefined)

            // 1. B itself, with B's real ids everywhere: the same 404 as an organization that does not exist.
            yield* compare(operation, "in organization B", { org: ORG_B, ids: b.ids }, { org: MISSING_ORG, ids: b.ids })

            // 2. A, with one of B's ids in the path and A's own ids for the rest (then all of B's at once).
            for (const name of owned) {
              yield* compare(
                operation,
                `in A with B's ${name}`,
                { org: ORG_A, ids: { ...a.ids, [name]: b.ids[name] ?? "" } },
                { org: ORG_A, ids: { ...a.ids, ...fresh([name]) } }
              )
            }
            if (owned.length > 1) {
              yield* compare(
                operation,
                "in A with all of B's path ids",
                { org: ORG_A, ids: { ...a.ids, ...b.ids } },
                { org: ORG_A, ids: { ...a.ids, ...fresh(owned) } }
              )
            }

            // 3. A, with one of B's ids in the query or the body: answered as an id that does not exist (a
            // filter may match nothing rather than 404), never with B's data, never with a write.
            for (const name of [...queryIds, ...bodyIds]) {
              const placement = queryIds.includes(name) ? "query" : "body"
              const ownIds = Object.fromEntries(others.map((other) => [other, a.ids[other] ?? "tenancy-1"]))
              yield* compare(
                operation,
                `in A with B's ${name} in the ${placement}`,
                { org: ORG_A, ids: { ...ownIds, [name]: b.ids[name] ?? "" } },
                { org: ORG_A, ids: { ...ownIds, ...fresh([name]) } },
                true
              )
            }
          }

          const final = yield* rowCounts
          const changed = Object.keys(initial).filter((table) => initial[table] !== final[table])
          if (changed.length > 0) failures.push(`across the sweep, rows changed in ${changed.join(", ")}`)

          // The control: a read of A's own resources is answered otherwise than one with B's ids, so the
          // 404s above came from B's ids, not from a parent of A's that is missing or a missed route.
          for (const operation of covered.filter((candidate) => candidate.method === "GET")) {
            const owned = operation.pathParams.filter((name) => name !== "organization_id" && b.ids[name] !== undefined)
            if (owned.length === 0) continue
            const own = yield* ask(operation, ORG_A, a.ids)
            const foreign = yield* ask(operation, ORG_A, {
              ...a.ids,
              ...Object.fromEntries(owned.map((name) => [name, b.ids[name] ?? ""]))
            })
            if (own.answer.status === foreign.answer.status && own.answer.text === foreign.answer.text) {
              failures.push(
                `control ${operation.method} ${operation.path}: A's own ids answered as B's — ${own.answer.status} ${own.answer.text.slice(0, 160)}`
              )
            }
          }

          // Every failure at once: one run shows all the operations a change broke.
          assert.deepStrictEqual(failures, [], `${failures.length} tenancy failures:\n${failures.join("\n")}`)
          yield* Console.log(
            `tenancy sweep: ${covered.length} operations, ${sent} requests in ${Math.round(performance.now() - started)} ms; ` +
              `skipped (bootstrap token, not membership): ${skipped.join(", ") || "none"}`
          )
        })
    )
  }
)

/**
 * Memories of an organization (docs/interface.md: Resources "Memory"), read with their repository's
 * owner and name, the logins of the people named on them, their provenance (`memory_sources`) and
 * their measured effect (`memory_uses`, `memory_finding_effects`, and the state of each shaped
 * finding now). Every query filters by the organization.
 *
 * `learn` is where a distilled proposal lands: merged into the memory it restates (the one the
 * agent named, else one whose convention reads the same once case, spacing and punctuation are
 * set aside), else a new PROPOSED memory; in both cases its source is appended once per run.
 */
import type { Memory, MemoryEffect, MemoryScope, MemorySource, MemorySourceType } from "@bosun/domain"
import { Context, Data, Effect, Layer, Option } from "effect"
import { SqlClient, type Statement } from "effect/sql"

/** Only an APPROVED memory can be enabled or disabled. */
export class MemoryNotApproved extends Data.TaggedError("MemoryNotApproved")<{ readonly lifecycle: string }> {}

/** A memory is approved or rejected once, while PROPOSED. */
export class MemoryAlreadyDecided extends Data.TaggedError("MemoryAlreadyDecided")<{ readonly lifecycle: string }> {}

type Row = Omit<
  Memory,
  "created_at" | "updated_at" | "approved_at" | "last_toggled_at" | "metadata" | "sources" | "effect"
> & {
  readonly metadata: Partial<Memory["metadata"]>
  readonly created_at: Date
  readonly updated_at: Date
  readonly approved_at: Date | null
  readonly last_toggled_at: Date | null
  readonly sources: ReadonlyArray<MemorySource> | null
  readonly effect: MemoryEffect
}

const toMemory = (row: Row): Memory => ({
  ...row,
  // Every key of a memory's metadata, null when the source did not record it.
  metadata: {
    file_path: row.metadata.file_path ?? null,
    language: row.metadata.language ?? null,
    pull_request_number: row.metadata.pull_request_number ?? null,
    source_comment_id: row.metadata.source_comment_id ?? null
  },
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
  approved_at: row.approved_at?.toISOString() ?? null,
  last_toggled_at: row.last_toggled_at?.toISOString() ?? null,
  sources: row.sources ?? []
})

/** One piece of feedback a memory comes from. */
export interface FeedbackSource {
  readonly sourceType: MemorySourceType
  readonly sourceUrl: string | null
  readonly commentId: number | null
  readonly pullRequestNumber: number | null
  readonly filePath: string | null
  readonly findingId: string | null
  readonly runId: string | null
  /** The GitHub login of the person who gave it. */
  readonly actor: string | null
  readonly excerpt: string
}

export interface NewMemory {
  readonly repositoryId: string | null
  readonly convention: string
  readonly purpose?: string
  readonly rationale?: string
  readonly proposedBy?: string
  readonly proposedByLogin?: string
  readonly sourceType?: string
  readonly sourceUrl?: string
  readonly sourceActor?: string
  readonly sourceFindingId?: string
  readonly sourceRunId?: string
  readonly metadata?: Partial<Memory["metadata"]>
}

/** What a distill run concluded, as `learn` records it. */
export interface LearnedConvention {
  readonly convention: string
  readonly purpose: string | null
  readonly rationale: string | null
  readonly scope: MemoryScope
  readonly language: string | null
  readonly restatesMemoryId: string | null
}

/** A finding a memory shaped (with the finding's fingerprint) or suppressed, in one review run. */
export interface MemoryFindingEffect {
  readonly memoryId: string
  readonly effect: "SHAPED" | "SUPPRESSED"
  readonly fingerprint: string | null
  readonly path: string
  readonly note: string | null
}

/** Case, spacing and punctuation set aside: "Use db.query." and "use  db.query" read the same. */
export const normalizedConvention = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim()

/** The memories' one SELECT: each with its repository, the people named on it, its sources and its effect. */
const selectMemories = (sql: SqlClient.SqlClient) => (where: Statement.Fragment) =>
  sql<Row>`
    SELECT m.id, m.organization_id, m.repository_id, m.scope, m.lifecycle, m.enabled, m.convention, m.purpose,
           m.rationale, m.metadata, m.proposed_by, coalesce(proposer.login, m.proposed_by_login) AS proposed_by_login,
           m.approved_at, m.approved_by, approver.login AS approved_by_login, m.last_toggled_at, m.last_toggled_by,
           toggler.login AS last_toggled_by_login, m.source_actor, m.source_finding_id, m.source_run_id,
           m.source_type, m.source_url, m.created_at, m.updated_at,
           r.name AS repository_name, r.owner AS repository_owner,
           (SELECT jsonb_agg(jsonb_build_object(
                     'source_type', s.source_type, 'source_url', s.source_url,
                     'source_comment_id', s.source_comment_id, 'pull_request_number', s.pull_request_number,
                     'file_path', s.file_path, 'source_finding_id', s.source_finding_id,
                     'source_run_id', s.source_run_id, 'source_actor', s.source_actor, 'excerpt', s.excerpt,
                     'created_at', to_char(s.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                   ORDER BY s.created_at, s.id)
            FROM memory_sources s WHERE s.organization_id = m.organization_id AND s.memory_id = m.id) AS sources,
           jsonb_build_object(
             'runs', (SELECT count(*) FROM memory_uses u
                      WHERE u.organization_id = m.organization_id AND u.memory_id = m.id)::int,
             'findings_shaped', effect.shaped, 'findings_suppressed', effect.suppressed,
             'feedback', jsonb_build_object('open', feedback.open, 'resolved', feedback.resolved,
                                            'dismissed', feedback.dismissed)) AS effect
    FROM memories m
    LEFT JOIN repositories r ON r.id = m.repository_id AND r.organization_id = m.organization_id
    LEFT JOIN users proposer ON proposer.id = m.proposed_by
    LEFT JOIN users approver ON approver.id = m.approved_by
    LEFT JOIN users toggler ON toggler.id = m.last_toggled_by
    CROSS JOIN LATERAL (
      SELECT count(DISTINCT (e.repository_id, e.pull_request_number, e.fingerprint))
               FILTER (WHERE e.effect = 'SHAPED')::int AS shaped,
             count(*) FILTER (WHERE e.effect = 'SUPPRESSED')::int AS suppressed
      FROM memory_finding_effects e WHERE e.organization_id = m.organization_id AND e.memory_id = m.id
    ) effect
    CROSS JOIN LATERAL (
      SELECT count(DISTINCT f.id) FILTER (WHERE f.state = 'OPEN')::int AS open,
             count(DISTINCT f.id) FILTER (WHERE f.state = 'RESOLVED')::int AS resolved,
             count(DISTINCT f.id) FILTER (WHERE f.state = 'DISMISSED')::int AS dismissed
      FROM memory_finding_effects e
      JOIN review_findings f ON f.organization_id = e.organization_id AND f.repository_id = e.repository_id
        AND f.pull_request_number = e.pull_request_number AND f.fingerprint = e.fingerprint
      WHERE e.organization_id = m.organization_id AND e.memory_id = m.id AND e.effect = 'SHAPED'
    ) feedback
    WHERE ${where}
    ORDER BY m.created_at DESC, m.id`

/** Reading a memory back, and the inserts of a new memory and of one piece of its provenance. */
const memoryStore = (sql: SqlClient.SqlClient) => {
  const select = selectMemories(sql)

  const find = Effect.fn("MemoriesRepo.find")(function* (organizationId: string, memoryId: string) {
    const [row] = yield* select(sql`m.organization_id = ${organizationId} AND m.id = ${memoryId}`).pipe(Effect.orDie)
    return Option.map(Option.fromUndefinedOr(row), toMemory)
  })

  const found = (organizationId: string, memoryId: string) =>
    Effect.flatMap(find(organizationId, memoryId), (memory) =>
      Option.isSome(memory)
        ? Effect.succeed(memory.value)
        : Effect.die(new Error(`memory ${memoryId} vanished after its write`))
    )

  const appendSource = (organizationId: string, memoryId: string, source: FeedbackSource) =>
    sql`
      INSERT INTO memory_sources (organization_id, memory_id, source_type, source_url, source_comment_id,
                                  pull_request_number, file_path, source_finding_id, source_run_id,
                                  source_actor, excerpt)
      VALUES (${organizationId}, ${memoryId}, ${source.sourceType}, ${source.sourceUrl}, ${source.commentId},
              ${source.pullRequestNumber}, ${source.filePath}, ${source.findingId}, ${source.runId},
              ${source.actor}, ${source.excerpt.slice(0, 2_000)})
      ON CONFLICT (source_run_id) DO NOTHING`.pipe(Effect.orDie)

  const insert = (organizationId: string, memory: NewMemory) =>
    Effect.gen(function* () {
      const [row] = yield* sql<{ id: string }>`
        INSERT INTO memories (organization_id, repository_id, scope, convention, purpose, rationale, proposed_by,
                              proposed_by_login, source_type, source_url, source_actor, source_finding_id,
                              source_run_id, metadata)
        VALUES (${organizationId}, ${memory.repositoryId}, ${memory.repositoryId === null ? "ORGANIZATION" : "REPOSITORY"},
                ${memory.convention}, ${memory.purpose ?? null}, ${memory.rationale ?? null},
                ${memory.proposedBy ?? null}, ${memory.proposedByLogin ?? null}, ${memory.sourceType ?? null},
                ${memory.sourceUrl ?? null}, ${memory.sourceActor ?? null}, ${memory.sourceFindingId ?? null},
                ${memory.sourceRunId ?? null}, ${JSON.stringify(memory.metadata ?? {})}::jsonb)
        RETURNING id`.pipe(Effect.orDie)
      if (row === undefined) return yield* Effect.die(new Error("the memory insert returned no row"))
      return row.id
    })

  return { select, find, found, appendSource, insert }
}

type MemoryStore = ReturnType<typeof memoryStore>

/** A person's decisions on a memory, each made under the memory's row lock. */
const decisions = (sql: SqlClient.SqlClient, store: MemoryStore) => ({
  toggle: Effect.fn("MemoriesRepo.toggle")(function* (
    organizationId: string,
    memoryId: string,
    enabled: boolean,
    userId: string
  ) {
    const [row] = yield* sql<{ lifecycle: string; updated: boolean }>`
      WITH target AS (
        SELECT id, lifecycle FROM memories WHERE organization_id = ${organizationId} AND id = ${memoryId}
        FOR UPDATE
      ), updated AS (
        UPDATE memories m SET enabled = ${enabled}, last_toggled_at = now(), last_toggled_by = ${userId},
               updated_at = now()
        FROM target WHERE m.id = target.id AND target.lifecycle = 'APPROVED'
        RETURNING m.id
      )
      SELECT target.lifecycle, EXISTS (SELECT 1 FROM updated) AS updated FROM target`.pipe(Effect.orDie)
    if (row === undefined) return Option.none()
    if (!row.updated) return yield* new MemoryNotApproved({ lifecycle: row.lifecycle })
    return yield* store.find(organizationId, memoryId)
  }),
  decide: Effect.fn("MemoriesRepo.decide")(function* (
    organizationId: string,
    memoryId: string,
    approve: boolean,
    userId: string
  ) {
    const [row] = yield* sql<{ lifecycle: string; updated: boolean }>`
      WITH target AS (
        SELECT id, lifecycle FROM memories WHERE organization_id = ${organizationId} AND id = ${memoryId}
        FOR UPDATE
      ), updated AS (
        UPDATE memories m SET lifecycle = ${approve ? "APPROVED" : "REJECTED"},
               approved_at = CASE WHEN ${approve} THEN now() ELSE NULL END,
               approved_by = CASE WHEN ${approve} THEN ${userId} ELSE NULL END, updated_at = now()
        FROM target WHERE m.id = target.id AND target.lifecycle = 'PROPOSED'
        RETURNING m.id
      )
      SELECT target.lifecycle, EXISTS (SELECT 1 FROM updated) AS updated FROM target`.pipe(Effect.orDie)
    if (row === undefined) return Option.none()
    if (!row.updated) return yield* new MemoryAlreadyDecided({ lifecycle: row.lifecycle })
    return yield* store.find(organizationId, memoryId)
  })
})

/** The memory a distilled convention proposes when it restates none. */
const proposalOf = (repositoryId: string | null, learned: LearnedConvention, source: FeedbackSource): NewMemory => ({
  repositoryId: learned.scope === "ORGANIZATION" ? null : repositoryId,
  convention: learned.convention,
  ...(learned.purpose === null ? {} : { purpose: learned.purpose }),
  ...(learned.rationale === null ? {} : { rationale: learned.rationale }),
  ...(source.actor === null ? {} : { proposedByLogin: source.actor, sourceActor: source.actor }),
  sourceType: source.sourceType,
  ...(source.sourceUrl === null ? {} : { sourceUrl: source.sourceUrl }),
  ...(source.findingId === null ? {} : { sourceFindingId: source.findingId }),
  ...(source.runId === null ? {} : { sourceRunId: source.runId }),
  metadata: {
    file_path: source.filePath,
    language: learned.language,
    pull_request_number: source.pullRequestNumber,
    source_comment_id: source.commentId
  }
})

/**
 * A distilled convention: merged into the memory it restates, else proposed, with its source
 * appended once per run.
 */
const learner = (sql: SqlClient.SqlClient, store: MemoryStore) =>
  Effect.fn("MemoriesRepo.learn")(function* (
    organizationId: string,
    repositoryId: string | null,
    learned: LearnedConvention,
    source: FeedbackSource
  ) {
    return yield* sql
      .withTransaction(
        Effect.gen(function* () {
          // Serializes the organization's learning: two runs restating one convention merge.
          yield* sql`SELECT pg_advisory_xact_lock(hashtext(${`memories:${organizationId}`}))`
          if (source.runId !== null) {
            const [seen] = yield* sql<{ memory_id: string; first: boolean }>`
              SELECT s.memory_id, m.source_run_id IS NOT DISTINCT FROM s.source_run_id AS first
              FROM memory_sources s JOIN memories m ON m.id = s.memory_id
              WHERE s.organization_id = ${organizationId} AND s.source_run_id = ${source.runId}`
            if (seen !== undefined) {
              return { memory: yield* store.found(organizationId, seen.memory_id), merged: !seen.first }
            }
          }
          const candidates = yield* sql<{ id: string; convention: string; named: boolean }>`
            SELECT id, convention, id = ${learned.restatesMemoryId ?? ""} AS named FROM memories
            WHERE organization_id = ${organizationId} AND lifecycle <> 'ARCHIVED'
              AND (repository_id IS NULL OR repository_id IS NOT DISTINCT FROM ${repositoryId})
            ORDER BY created_at, id`
          const text = normalizedConvention(learned.convention)
          const restated =
            candidates.find((candidate) => candidate.named) ??
            candidates.find((candidate) => normalizedConvention(candidate.convention) === text)
          if (restated !== undefined) {
            yield* store.appendSource(organizationId, restated.id, source)
            yield* sql`UPDATE memories SET updated_at = now()
                       WHERE organization_id = ${organizationId} AND id = ${restated.id}`
            return { memory: yield* store.found(organizationId, restated.id), merged: true }
          }
          const id = yield* store.insert(organizationId, proposalOf(repositoryId, learned, source))
          yield* store.appendSource(organizationId, id, source)
          return { memory: yield* store.found(organizationId, id), merged: false }
        })
      )
      .pipe(Effect.orDie)
  })

/** The memories a run is given, and what they then did to its findings. */
const runMemories = (sql: SqlClient.SqlClient, store: MemoryStore) => ({
  forRun: Effect.fn("MemoriesRepo.forRun")(function* (
    organizationId: string,
    repositoryId: string | null,
    run: { readonly runId: string; readonly workflowType: string }
  ) {
    const rows = yield* store
      .select(
        sql`m.organization_id = ${organizationId} AND m.lifecycle = 'APPROVED' AND m.enabled
          AND (m.repository_id IS NULL OR m.repository_id IS NOT DISTINCT FROM ${repositoryId})`
      )
      .pipe(Effect.orDie)
    if (rows.length > 0) {
      // A prepare step that runs again gives the same memories: counted once per run.
      yield* sql`
        INSERT INTO memory_uses (organization_id, memory_id, run_id, workflow_type)
        SELECT ${organizationId}, id, ${run.runId}, ${run.workflowType}
        FROM unnest(${rows.map((row) => row.id)}::text[]) AS id
        ON CONFLICT DO NOTHING`.pipe(Effect.orDie)
    }
    return rows.map(toMemory)
  }),
  recordEffects: Effect.fn("MemoriesRepo.recordEffects")(function* (
    organizationId: string,
    runId: string,
    pr: { readonly repositoryId: string; readonly number: number },
    effects: ReadonlyArray<MemoryFindingEffect>
  ) {
    if (effects.length === 0) return
    yield* sql`
      INSERT INTO memory_finding_effects (organization_id, memory_id, run_id, effect, repository_id,
                                          pull_request_number, fingerprint, path, note)
      SELECT ${organizationId}, e.memory_id, ${runId}, e.effect, ${pr.repositoryId}, ${pr.number},
             e.fingerprint, e.path, e.note
      FROM jsonb_to_recordset(${JSON.stringify(effects.map((effect) => ({ memory_id: effect.memoryId, effect: effect.effect, fingerprint: effect.fingerprint, path: effect.path, note: effect.note })))}::jsonb)
        AS e(memory_id text, effect text, fingerprint text, path text, note text)
      WHERE EXISTS (SELECT 1 FROM memory_uses u
                    WHERE u.organization_id = ${organizationId} AND u.memory_id = e.memory_id
                      AND u.run_id = ${runId})`.pipe(Effect.orDie)
  })
})

export class MemoriesRepo extends Context.Service<
  MemoriesRepo,
  {
    readonly list: (organizationId: string) => Effect.Effect<ReadonlyArray<Memory>>
    readonly find: (organizationId: string, memoryId: string) => Effect.Effect<Option.Option<Memory>>
    /** Enables or disables an approved memory, recording who did it and when. */
    readonly toggle: (
      organizationId: string,
      memoryId: string,
      enabled: boolean,
      userId: string
    ) => Effect.Effect<Option.Option<Memory>, MemoryNotApproved>
    /** A proposed memory written as given (a person's own; tests use it too). */
    readonly propose: (organizationId: string, memory: NewMemory) => Effect.Effect<Memory>
    /** An ADMIN's decision on a proposed memory; none when there is no such memory. */
    readonly decide: (
      organizationId: string,
      memoryId: string,
      approve: boolean,
      userId: string
    ) => Effect.Effect<Option.Option<Memory>, MemoryAlreadyDecided>
    /**
     * A distilled convention: merged into the memory it restates, else proposed; its source is
     * appended (once per run). Answers the memory and whether it was merged.
     */
    readonly learn: (
      organizationId: string,
      repositoryId: string | null,
      learned: LearnedConvention,
      source: FeedbackSource
    ) => Effect.Effect<{ readonly memory: Memory; readonly merged: boolean }>
    /**
     * The APPROVED, enabled memories for a run on `repositoryId` (the organization's and the
     * repository's own), recorded as given to the run.
     */
    readonly forRun: (
      organizationId: string,
      repositoryId: string | null,
      run: { readonly runId: string; readonly workflowType: string }
    ) => Effect.Effect<ReadonlyArray<Memory>>
    /** What the memories given to `runId` did to its findings; ids the run was not given are ignored. In the caller's transaction. */
    readonly recordEffects: (
      organizationId: string,
      runId: string,
      pr: { readonly repositoryId: string; readonly number: number },
      effects: ReadonlyArray<MemoryFindingEffect>
    ) => Effect.Effect<void>
  }
>()("bosun/server/persistence/MemoriesRepo") {
  static readonly layer = Layer.effect(
    MemoriesRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const store = memoryStore(sql)
      return MemoriesRepo.of({
        list: Effect.fn("MemoriesRepo.list")(function* (organizationId: string) {
          const rows = yield* store.select(sql`m.organization_id = ${organizationId}`).pipe(Effect.orDie)
          return rows.map(toMemory)
        }),
        find: store.find,
        ...decisions(sql, store),
        propose: Effect.fn("MemoriesRepo.propose")(function* (organizationId: string, memory: NewMemory) {
          return yield* store.found(organizationId, yield* store.insert(organizationId, memory))
        }),
        learn: learner(sql, store),
        ...runMemories(sql, store)
      })
    })
  )
}

/**
 * Memories (docs/interface.md: Organization endpoints `.../memories`, Resources "Memory"): the
 * conventions Bosun learned from feedback, grouped by lifecycle so the PROPOSED ones waiting for
 * an admin's decision come first. Each card shows where the memory came from (the feedback that
 * proposed it, with a link to the source comment) and what it did since (runs that carried it,
 * findings it shaped or suppressed, what people did with those), so a memory that steers wrong
 * can be spotted and disabled. An approved memory stays off until someone enables it here.
 */
import { type Memory, MemoryLifecycle } from "@bosun/domain"
import { useState } from "react"
import { call } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { ActionButton, Badge, ChoiceFilter, Empty, ErrorNote, Loading, when } from "../ui.tsx"

const LIFECYCLES = MemoryLifecycle.literals
type Lifecycle = (typeof LIFECYCLES)[number]

const heading: Record<Lifecycle, string> = {
  PROPOSED: "Waiting for a decision",
  APPROVED: "Approved",
  REJECTED: "Rejected",
  ARCHIVED: "Archived"
}

const SourceLink = (props: { readonly url: string | null; readonly children?: string }) =>
  props.url === null ? null : (
    <a href={props.url} target="_blank" rel="noopener noreferrer">
      {props.children ?? "source comment"}
    </a>
  )

const MemoryCard = (props: { readonly org: string; readonly memory: Memory; readonly changed: () => void }) => {
  const { memory } = props
  const action = useAction()
  const { effect } = memory
  const perform = (request: () => Promise<unknown>) =>
    void action.perform(request).then((ok) => {
      if (ok) props.changed()
    })
  const params = { organization_id: props.org, memory_id: memory.id }
  const decide = (decision: "approve" | "reject") =>
    perform(() => call((client) => client.memories.decide({ params, payload: { decision } })))

  return (
    <article className="card" data-testid={`memory-${memory.id}`}>
      <p>
        <Badge value={memory.lifecycle} />{" "}
        {memory.lifecycle === "APPROVED" ? (
          <span className={memory.enabled ? "badge good" : "badge muted"}>
            {memory.enabled ? "ENABLED" : "DISABLED"}
          </span>
        ) : null}{" "}
        <span className="muted">
          {memory.scope === "ORGANIZATION"
            ? "Whole organization"
            : `Repository ${memory.repository_owner ?? "?"}/${memory.repository_name ?? memory.repository_id ?? "?"}`}
        </span>
      </p>
      <p>
        <strong>{memory.convention}</strong>
      </p>
      {memory.purpose === null ? null : <p className="muted">{memory.purpose}</p>}
      <dl className="facts">
        <dt>Source</dt>
        <dd>
          {memory.source_type ?? "—"} <SourceLink url={memory.source_url} />
          {memory.metadata.pull_request_number === null ? null : (
            <span className="muted"> · PR #{memory.metadata.pull_request_number}</span>
          )}
          {memory.metadata.file_path === null ? null : <span className="muted"> · {memory.metadata.file_path}</span>}
        </dd>
        <dt>Proposed by</dt>
        <dd>
          {memory.proposed_by_login ?? memory.source_actor ?? "Bosun"}{" "}
          <span className="muted">{when(memory.created_at)}</span>
        </dd>
        {memory.rationale === null ? null : (
          <>
            <dt>Rationale</dt>
            <dd>{memory.rationale}</dd>
          </>
        )}
        {memory.approved_at === null ? null : (
          <>
            <dt>Decided by</dt>
            <dd>
              {memory.approved_by_login ?? "—"} <span className="muted">{when(memory.approved_at)}</span>
            </dd>
          </>
        )}
        {memory.last_toggled_at === null ? null : (
          <>
            <dt>Last turned {memory.enabled ? "on" : "off"} by</dt>
            <dd>
              {memory.last_toggled_by_login ?? "—"} <span className="muted">{when(memory.last_toggled_at)}</span>
            </dd>
          </>
        )}
        <dt>Effect</dt>
        <dd>
          {effect.runs} runs · {effect.findings_shaped} findings shaped · {effect.findings_suppressed} suppressed ·
          feedback {effect.feedback.open} open / {effect.feedback.resolved} resolved / {effect.feedback.dismissed}{" "}
          dismissed
        </dd>
      </dl>
      {memory.sources.length > 1 ? (
        <details>
          <summary>All {memory.sources.length} pieces of feedback it was distilled from</summary>
          <ul>
            {memory.sources.map((source) => (
              <li key={`${source.source_type}-${source.created_at}-${source.source_comment_id ?? source.excerpt}`}>
                {source.source_type} {source.source_actor === null ? null : `by ${source.source_actor}`}{" "}
                <SourceLink url={source.source_url} /> <span className="muted">{when(source.created_at)}</span>
                <blockquote>{source.excerpt}</blockquote>
              </li>
            ))}
          </ul>
        </details>
      ) : null}
      <div className="actions">
        {memory.lifecycle === "PROPOSED" ? (
          <>
            <ActionButton pending={action.pending} kind="primary" onClick={() => decide("approve")}>
              Approve
            </ActionButton>
            <ActionButton pending={action.pending} kind="danger" onClick={() => decide("reject")}>
              Reject
            </ActionButton>
          </>
        ) : null}
        {memory.lifecycle === "APPROVED" ? (
          <ActionButton
            pending={action.pending}
            kind={memory.enabled ? "plain" : "primary"}
            onClick={() =>
              perform(() => call((client) => client.memories.toggle({ params, payload: { enabled: !memory.enabled } })))
            }
          >
            {memory.enabled ? "Disable" : "Enable"}
          </ActionButton>
        ) : null}
      </div>
      <ErrorNote message={action.error} />
    </article>
  )
}

const Memories = (props: { readonly org: string }) => {
  const [filter, setFilter] = useState<Lifecycle | undefined>(undefined)
  const [loaded, reload] = useLoad(
    () => call((client) => client.memories.list({ params: { organization_id: props.org } })),
    [props.org]
  )

  return (
    <section aria-labelledby="memories-title">
      <h1 id="memories-title">Memories</h1>
      <div className="filters">
        <ChoiceFilter label="Lifecycle" value={filter} choices={LIFECYCLES} onChange={setFilter} />
      </div>
      <Loading loaded={loaded}>
        {({ data }) => {
          if (data.length === 0) {
            return (
              <Empty>
                No memories yet. Bosun proposes one when someone replies to a review finding with feedback, or writes
                “@bosun remember …” on a pull request; it shows up here for an admin to approve.
              </Empty>
            )
          }
          const shown = LIFECYCLES.filter((lifecycle) => filter === undefined || filter === lifecycle)
          const groups = shown
            .map((lifecycle) => [lifecycle, data.filter((memory) => memory.lifecycle === lifecycle)] as const)
            .filter(([, memories]) => memories.length > 0)
          if (groups.length === 0) {
            return <Empty>No {filter ?? ""} memories. Choose “Any” to see every memory.</Empty>
          }
          return groups.map(([lifecycle, memories]) => (
            <section key={lifecycle} aria-labelledby={`memories-${lifecycle}`}>
              <h2 id={`memories-${lifecycle}`}>
                {heading[lifecycle]} <span className="muted">({memories.length})</span>
              </h2>
              <div className="cards">
                {memories.map((memory) => (
                  <MemoryCard key={memory.id} org={props.org} memory={memory} changed={reload} />
                ))}
              </div>
            </section>
          ))
        }}
      </Loading>
    </section>
  )
}

export default Memories

/**
 * One deep scan (docs/interface.md: Resources "Deep scan"; Organization endpoints
 * `GET .../deep-scans/{id}`, `.../findings`, `.../findings/{id}/decision`, `.../fix`): the scan's
 * outcome (status, coverage and what it skipped, summary, error, risk, counts) and the triage of
 * its findings, worst first, each with the proof behind it — the path from input to sink and, for
 * HIGH and CRITICAL, whether a reproduction confirmed it. A finding is accepted, or rejected with a
 * reason (which suppresses it in the repository's later scans); the accepted ones become one fix
 * work item. While the scan is queued or running the screen reloads every 3 seconds.
 */
import { type DeepScan, type DeepScanFinding, RejectionReason } from "@bosun/domain"
import { type ReactNode, useEffect, useId, useState } from "react"
import { call } from "../api/client.ts"
import { useAction, useLoad } from "../api/useLoad.ts"
import { orgPath } from "../routes.ts"
import { ActionButton, Badge, Empty, ErrorNote, Link, Loading, when } from "../ui.tsx"

const POLL_MS = 3000
const REASONS = RejectionReason.literals
type Reason = (typeof REASONS)[number]

const reasonText: Record<Reason, string> = {
  false_positive: "False positive",
  accepted_risk: "Accepted risk",
  not_applicable: "Not applicable",
  wont_fix: "Won't fix"
}

const verificationTone = { VERIFIED: "good", UNVERIFIED: "warn", NOT_REQUIRED: "muted" } as const
const decisionTone = { PENDING: "info", ACCEPTED: "good", REJECTED: "muted" } as const

const isActive = (scan: DeepScan | undefined) =>
  scan !== undefined && (scan.status === "RECEIVED" || scan.status === "QUEUED" || scan.status === "RUNNING")

const Fact = (props: { readonly label: string; readonly children: ReactNode }) => (
  <>
    <dt>{props.label}</dt>
    <dd>{props.children}</dd>
  </>
)

const Overview = (props: { readonly org: string; readonly scan: DeepScan; readonly fixed: () => void }) => {
  const { scan } = props
  const fix = useAction()
  const [created, setCreated] = useState<string | null>(null)
  const canFix = scan.decision_counts.accepted > 0 && scan.fix_work_item_id === null

  return (
    <>
      <h1 id="deep-scan-title">
        Deep scan of {scan.repository.owner}/{scan.repository.name}
      </h1>
      <p>
        <Badge value={scan.status} />{" "}
        {scan.completion_status === null ? null : <Badge value={scan.completion_status} />}{" "}
        {scan.risk_level === null ? null : (
          <>
            Risk <Badge value={scan.risk_level} />
          </>
        )}
      </p>
      {isActive(scan) ? (
        <p className="progress" aria-busy="true">
          The scan is {scan.status.toLowerCase()}; this page refreshes by itself.
        </p>
      ) : null}
      {scan.error_message === null && scan.error_code === null ? null : (
        <div className="banner bad" role="status">
          {scan.error_code === null ? null : <code className="code">{scan.error_code}</code>} {scan.error_message}
        </div>
      )}
      <dl className="facts">
        <Fact label="Repository">
          <Link href={orgPath(props.org, "repositories", scan.repository.id)}>
            {scan.repository.owner}/{scan.repository.name}
          </Link>
        </Fact>
        <Fact label="Commit">
          <code className="code">{scan.head_sha}</code>
        </Fact>
        <Fact label="Status">{scan.status}</Fact>
        <Fact label="Coverage">
          {scan.completion_status ?? "—"}
          {scan.skipped.length === 0 ? null : <span className="muted"> ({scan.skipped.length} skipped)</span>}
        </Fact>
        <Fact label="Risk level">{scan.risk_level ?? "—"}</Fact>
        <Fact label="Model">
          {scan.model ?? "—"}
          {scan.provider === null ? null : <span className="muted"> via {scan.provider}</span>}
        </Fact>
        <Fact label="Findings">
          {scan.finding_count}
          {scan.suppressed_count === 0 ? null : (
            <span className="muted"> ({scan.suppressed_count} held back by earlier rejections)</span>
          )}
        </Fact>
        <Fact label="Decisions">
          {scan.decision_counts.accepted} accepted · {scan.decision_counts.pending} pending ·{" "}
          {scan.decision_counts.rejected} rejected
        </Fact>
        <Fact label="Run">
          <Link href={orgPath(props.org, "runs", scan.run_id)}>Open the run</Link>
        </Fact>
        <Fact label="Fix work item">
          {scan.fix_work_item_id === null ? (
            "None"
          ) : (
            <Link href={orgPath(props.org, "work-items", scan.fix_work_item_id)}>Open the fix work item</Link>
          )}
        </Fact>
        <Fact label="Created">{when(scan.created_at)}</Fact>
        <Fact label="Started">{when(scan.started_at)}</Fact>
        <Fact label="Finished">{when(scan.finished_at)}</Fact>
      </dl>
      {scan.summary === null ? null : (
        <>
          <h2>Summary</h2>
          <pre className="code">{scan.summary}</pre>
        </>
      )}
      {scan.skipped.length === 0 ? null : (
        <details>
          <summary>Not covered ({scan.skipped.length})</summary>
          <ul>
            {scan.skipped.map((skip) => (
              <li key={skip.path}>
                <code className="code">{skip.path}</code>: {skip.reason}
              </li>
            ))}
          </ul>
        </details>
      )}
      {canFix ? (
        <div className="actions">
          <ActionButton
            kind="primary"
            pending={fix.pending}
            onClick={() => {
              let id: string | null = null
              void fix
                .perform(() =>
                  call((client) =>
                    client.deepScans.fix({ params: { organization_id: props.org, deep_scan_id: scan.id } })
                  ).then((answer) => {
                    id = answer.data.work_item_id
                  })
                )
                .then((ok) => {
                  if (ok) {
                    setCreated(id)
                    props.fixed()
                  }
                })
            }}
          >
            Create fix work item
          </ActionButton>
          {fix.pending ? <span className="progress">Creating…</span> : null}
        </div>
      ) : null}
      {created === null ? null : (
        <p role="status">
          Fix work item created: <Link href={orgPath(props.org, "work-items", created)}>open it</Link>.
        </p>
      )}
      <ErrorNote message={fix.error} />
    </>
  )
}

const FindingCard = (props: {
  readonly org: string
  readonly finding: DeepScanFinding
  readonly decided: () => void
}) => {
  const { finding } = props
  const decide = useAction()
  const [rejecting, setRejecting] = useState(false)
  const [reason, setReason] = useState<Reason>("false_positive")
  const [note, setNote] = useState("")
  const ids = useId()
  const { verification } = finding
  const reproduction = verification.reproduction

  const send = (payload: { decision: "accept" } | { decision: "reject"; reason: Reason; note?: string }) =>
    void decide
      .perform(() =>
        call((client) =>
          client.deepScans.decideFinding({
            params: { organization_id: props.org, deep_scan_id: finding.deep_scan_id, finding_id: finding.id },
            payload
          })
        )
      )
      .then((ok) => {
        if (ok) {
          setRejecting(false)
          props.decided()
        }
      })

  return (
    <article className="card" data-testid={`finding-${finding.id}`} aria-labelledby={`${ids}-title`}>
      <h3 id={`${ids}-title`}>
        <Badge value={finding.severity} /> {finding.title}
      </h3>
      <p>
        <span className={`badge ${verificationTone[verification.status]}`}>{verification.status}</span>{" "}
        <span className={`badge ${decisionTone[finding.decision]}`}>{finding.decision}</span>{" "}
        <span className="muted">
          {finding.category}
          {finding.cwe === null ? null : ` · ${finding.cwe}`}
        </span>
      </p>
      <p>
        <code className="code">
          {finding.path}:{finding.start_line}
          {finding.end_line === finding.start_line ? "" : `-${finding.end_line}`}
        </code>{" "}
        <span className="muted">in {finding.symbol}</span>
      </p>
      {verification.reason === null ? null : <p className="muted">Unverified because: {verification.reason}</p>}
      <details>
        <summary>
          Evidence ({finding.evidence.length} {finding.evidence.length === 1 ? "step" : "steps"})
        </summary>
        <ol>
          {finding.evidence.map((step) => (
            <li key={`${step.path}:${step.line}:${step.note}`}>
              <code className="code">
                {step.path}:{step.line}
              </code>{" "}
              {step.note}
            </li>
          ))}
        </ol>
      </details>
      {reproduction === null ? null : (
        <details>
          <summary>Reproduction (exit code {reproduction.exit_code})</summary>
          <p>
            <code className="code">{reproduction.test_path}</code>, run with{" "}
            <code className="code">{reproduction.command}</code>
          </p>
          {reproduction.test_content === null ? null : <pre className="code">{reproduction.test_content}</pre>}
          <pre className="code">{reproduction.output}</pre>
        </details>
      )}
      <details>
        <summary>Proposed fix</summary>
        <pre className="code">{finding.proposed_fix}</pre>
      </details>
      {finding.decision === "PENDING" ? null : (
        <p className="muted">
          {finding.decision === "ACCEPTED" ? "Accepted" : "Rejected"}
          {finding.reason_code === null ? "" : ` as ${reasonText[finding.reason_code]}`}
          {finding.decided_by === null ? "" : ` by ${finding.decided_by}`} {when(finding.decided_at)}
          {finding.reason_note === null ? "" : `: ${finding.reason_note}`}
        </p>
      )}
      {finding.decision === "PENDING" ? (
        rejecting ? (
          <form
            className="form"
            onSubmit={(event) => {
              event.preventDefault()
              const text = note.trim()
              send({ decision: "reject", reason, ...(text === "" ? {} : { note: text }) })
            }}
          >
            <label className="field">
              <span>Reason</span>
              <select
                value={reason}
                onChange={(event) => {
                  const chosen = REASONS.find((value) => value === event.target.value)
                  if (chosen !== undefined) setReason(chosen)
                }}
              >
                {REASONS.map((value) => (
                  <option key={value} value={value}>
                    {reasonText[value]}
                  </option>
                ))}
              </select>
            </label>
            <label className="field">
              <span>Note (optional)</span>
              <textarea rows={2} maxLength={2000} value={note} onChange={(event) => setNote(event.target.value)} />
            </label>
            <div className="actions">
              <button type="submit" className="danger" disabled={decide.pending} aria-busy={decide.pending}>
                Confirm rejection
              </button>
              <button type="button" className="plain" onClick={() => setRejecting(false)}>
                Back
              </button>
            </div>
          </form>
        ) : (
          <div className="actions">
            <ActionButton kind="primary" pending={decide.pending} onClick={() => send({ decision: "accept" })}>
              Accept
            </ActionButton>
            <ActionButton kind="danger" pending={decide.pending} onClick={() => setRejecting(true)}>
              Reject
            </ActionButton>
          </div>
        )
      ) : null}
      <ErrorNote message={decide.error} />
    </article>
  )
}

const DeepScanDetail = (props: { readonly org: string; readonly id: string }) => {
  const params = { organization_id: props.org, deep_scan_id: props.id }
  const [scan, reloadScan] = useLoad(() => call((client) => client.deepScans.get({ params })), [props.org, props.id])
  const [findings, reloadFindings] = useLoad(
    () => call((client) => client.deepScans.findings({ params })),
    [props.org, props.id]
  )

  const active = isActive(scan.data?.data)
  useEffect(() => {
    if (!active || scan.status !== "ready") return
    const timer = setTimeout(() => {
      reloadScan()
      reloadFindings()
    }, POLL_MS)
    return () => clearTimeout(timer)
  }, [active, scan.status, reloadScan, reloadFindings])

  const reloadBoth = () => {
    reloadScan()
    reloadFindings()
  }

  return (
    <section aria-labelledby="deep-scan-title">
      <p>
        <Link href={orgPath(props.org, "deep-scans")}>← Deep scans</Link>
      </p>
      {scan.data === undefined ? <h1 id="deep-scan-title">Deep scan</h1> : null}
      <Loading loaded={scan}>{({ data }) => <Overview org={props.org} scan={data} fixed={reloadScan} />}</Loading>
      <section aria-labelledby="findings-title">
        <h2 id="findings-title">Findings</h2>
        <Loading loaded={findings}>
          {({ data }) =>
            data.length === 0 ? (
              <Empty>
                {active
                  ? "No findings yet; they appear here as the scan reports them."
                  : "No findings. The scan found nothing to report (findings held back by earlier rejections are counted above)."}
              </Empty>
            ) : (
              <div className="cards">
                {data.map((finding) => (
                  <FindingCard key={finding.id} org={props.org} finding={finding} decided={reloadBoth} />
                ))}
              </div>
            )
          }
        </Loading>
      </section>
    </section>
  )
}

export default DeepScanDetail

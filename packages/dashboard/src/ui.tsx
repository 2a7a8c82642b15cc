/**
 * The dashboard's shared pieces: in-app links, the loading/error/empty states every screen
 * shows the same way, status badges, and a button that shows its action's progress and failure.
 */
import type { MouseEvent, ReactNode } from "react"
import type { Loaded } from "./api/useLoad.ts"
import { navigate } from "./routes.ts"

export const Link = (props: {
  readonly href: string
  readonly children: ReactNode
  readonly className?: string | undefined
}) => (
  <a
    href={props.href}
    className={props.className}
    onClick={(event: MouseEvent<HTMLAnchorElement>) => {
      if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
      event.preventDefault()
      navigate(props.href)
    }}
  >
    {props.children}
  </a>
)

export const ErrorNote = (props: { readonly message: string | null }) =>
  props.message === null ? null : (
    <p className="error" role="alert">
      {props.message}
    </p>
  )

export const Empty = (props: { readonly children: ReactNode }) => <div className="empty">{props.children}</div>

/**
 * Renders `loaded`: a progress line while the first load runs, the API's message when it failed,
 * and `children` with the data (kept on screen, dimmed, while a reload runs).
 */
export const Loading = <A,>(props: { readonly loaded: Loaded<A>; readonly children: (data: A) => ReactNode }) => {
  const { loaded } = props
  return (
    <>
      {loaded.status === "failed" ? <ErrorNote message={loaded.error} /> : null}
      {loaded.data === undefined ? (
        loaded.status === "loading" ? (
          <p className="progress" aria-busy="true">
            Loading…
          </p>
        ) : null
      ) : (
        <div className={loaded.status === "loading" ? "reloading" : undefined}>{props.children(loaded.data)}</div>
      )}
    </>
  )
}

const tone: Record<string, string> = {
  SUCCEEDED: "good",
  REVIEWED: "good",
  READY: "good",
  APPROVED: "good",
  ACTIVE: "good",
  COMPLETED: "good",
  COMPLETE: "good",
  OPEN: "info",
  RUNNING: "info",
  IN_PROGRESS: "info",
  QUEUED: "info",
  RECEIVED: "info",
  PROPOSED: "info",
  WAITING: "warn",
  WARNING: "warn",
  PARTIAL: "warn",
  AUTHORIZATION_REQUIRED: "warn",
  MEDIUM: "warn",
  FAILED: "bad",
  BLOCKING: "bad",
  HIGH: "bad",
  CRITICAL: "bad",
  REJECTED: "muted",
  CANCELLED: "muted",
  CLOSED: "muted",
  MERGED: "muted",
  NOT_RUN: "muted",
  NOT_REVIEWED: "muted",
  SKIPPED: "muted"
}

export const Badge = (props: { readonly value: string | null }) =>
  props.value === null ? null : <span className={`badge ${tone[props.value] ?? "muted"}`}>{props.value}</span>

export const ActionButton = (props: {
  readonly onClick: () => void
  readonly pending: boolean
  readonly children: ReactNode
  readonly kind?: "primary" | "danger" | "plain"
  readonly disabled?: boolean
}) => (
  <button
    type="button"
    className={props.kind ?? "plain"}
    onClick={props.onClick}
    disabled={props.pending || props.disabled === true}
    aria-busy={props.pending}
  >
    {props.children}
  </button>
)

/** A labelled filter over a fixed set of values (a status, a lifecycle), "Any" meaning no filter. */
export const ChoiceFilter = <T extends string>(props: {
  readonly label: string
  readonly value: T | undefined
  readonly choices: ReadonlyArray<T>
  readonly onChange: (value: T | undefined) => void
}) => (
  <label>
    {props.label}{" "}
    <select
      value={props.value ?? ""}
      onChange={(event) => props.onChange(props.choices.find((choice) => choice === event.target.value))}
    >
      <option value="">Any</option>
      {props.choices.map((choice) => (
        <option key={choice} value={choice}>
          {choice}
        </option>
      ))}
    </select>
  </label>
)

// One formatter for every timestamp: `toLocaleString` builds a new one per call, which cost
// about 1 ms a row on the 50-row lists (the list's budget, bench/README.md "Dashboard budget").
const timestamp = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" })

/** A timestamp in the reader's locale and time zone, or a dash when there is none. */
export const when = (iso: string | null) => (iso === null ? "—" : timestamp.format(new Date(iso)))

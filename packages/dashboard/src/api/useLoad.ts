/**
 * Loading state for a screen: what it shows while a call is under way, the API's message when
 * it failed, and a `reload` after an action changed the state. A newer load wins over an older
 * one still in flight, so fast filter changes never show a stale page.
 */
import { useCallback, useEffect, useRef, useState } from "react"
import { messageOf } from "./client.ts"

export type Loaded<A> =
  | { readonly status: "loading"; readonly data: A | undefined }
  | { readonly status: "failed"; readonly error: string; readonly cause: unknown; readonly data: A | undefined }
  | { readonly status: "ready"; readonly data: A }

export const useLoad = <A>(load: () => Promise<A>, deps: ReadonlyArray<unknown>) => {
  const [state, setState] = useState<Loaded<A>>({ status: "loading", data: undefined })
  const generation = useRef(0)
  const latest = useRef(load)
  latest.current = load
  const key = JSON.stringify(deps)
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller names what the load depends on; `key` changes exactly when one of them does
  const run = useCallback(() => {
    const mine = ++generation.current
    setState((previous) => ({ status: "loading", data: previous.data }))
    latest.current().then(
      (data) => {
        if (mine === generation.current) setState({ status: "ready", data })
      },
      (cause: unknown) => {
        if (mine === generation.current) {
          setState((previous) => ({ status: "failed", error: messageOf(cause), cause, data: previous.data }))
        }
      }
    )
  }, [key])
  useEffect(run, [run])
  return [state, run] as const
}

/** An action's progress and its failure message, for a button that calls the API. */
export const useAction = () => {
  const [pending, setPending] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const perform = useCallback(async (action: () => Promise<unknown>): Promise<boolean> => {
    setPending(true)
    setError(null)
    try {
      await action()
      return true
    } catch (cause) {
      setError(messageOf(cause))
      return false
    } finally {
      setPending(false)
    }
  }, [])
  return { pending, error, perform } as const
}

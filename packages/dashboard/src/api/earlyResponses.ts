/**
 * Responses asked for before the app loaded (`early.ts`), kept by absolute URL until the app's
 * first identical GET takes one (`earlyAnswers.ts`, or the client's transport in
 * `httpApiClient.ts`). A response is taken once; a later request
 * for the same URL goes to the network.
 */
declare global {
  interface Window {
    __bosunEarly?: Map<string, Promise<Response>>
  }
}

const responses = (): Map<string, Promise<Response>> => {
  window.__bosunEarly ??= new Map()
  return window.__bosunEarly
}

/** Starts `GET path` now, for the app to take later; answers the response. */
export const requestEarly = (path: string): Promise<Response> => {
  const response = fetch(path, { credentials: "same-origin" })
  // Unused or failed, it must not surface as an unhandled rejection: the app asks again.
  response.catch(() => undefined)
  responses().set(new URL(path, window.location.origin).href, response)
  return response
}

/** The early response to `GET url`, removed so that it is taken once; `undefined` if none. */
export const takeEarly = (url: string): Promise<Response> | undefined => {
  const all = responses()
  const response = all.get(url)
  all.delete(url)
  return response
}

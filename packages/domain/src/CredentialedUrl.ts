/**
 * The rule for a URL Bosun hands a credential to (an outside API in the operator settings, a
 * provider's `base_url` in an agent connection): https, or plain http only on a loopback host,
 * where it cannot leave the machine (a local stand-in). It judges the URL's text only: a
 * hostname may resolve anywhere, so keeping traffic off internal addresses is the network's job.
 */

/** Loopback hosts as `URL.hostname` spells them. */
export const isLoopbackHost = (hostname: string): boolean =>
  hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)

/** Whether a parsed URL may receive a credential. */
export const isCredentialedUrl = (url: URL): boolean =>
  url.protocol === "https:" || (url.protocol === "http:" && isLoopbackHost(url.hostname))

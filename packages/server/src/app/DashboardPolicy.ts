/**
 * The security headers of every dashboard response: a Content-Security-Policy that allows the
 * app's own scripts, stylesheet and same-origin API calls and nothing else, whose `script-src`
 * and `style-src` list the sha256 of each inline `<script>` and `<style>` of the `index.html`
 * being served (the early-requests script Vite inlines), computed from that file's text rather
 * than at build time so that what is hashed is what is served. Serving and re-reading the file
 * after a rebuild is `DashboardHttp.ts`'s part.
 */
import { createHash } from "node:crypto"

/**
 * Inline elements as Vite writes them (no `>` inside an attribute). A script with a `src` runs
 * from a file, allowed by `'self'`; the text of any other is what the browser hashes.
 */
const SCRIPT = /<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi
const STYLE = /<style\b[^>]*>([\s\S]*?)<\/style\s*>/gi
const HAS_SRC = /\ssrc\s*=/i

/** The browser hashes an element's text after its HTML parser turned CR LF and lone CR into LF. */
const sha256Source = (text: string) =>
  `'sha256-${createHash("sha256").update(text.replace(/\r\n?/g, "\n"), "utf8").digest("base64")}'`

/** The hash sources of the inline scripts and styles of `html`, in document order. */
export const inlineHashes = (html: string) => ({
  scripts: [...html.matchAll(SCRIPT)]
    .filter((match) => !HAS_SRC.test(` ${match[1] ?? ""}`))
    .map((match) => sha256Source(match[2] ?? "")),
  styles: [...html.matchAll(STYLE)].map((match) => sha256Source(match[1] ?? ""))
})

/**
 * The policy for a page whose HTML is `html` (none: a page without inline code). No
 * `'unsafe-inline'` or `'unsafe-eval'` anywhere: React sets no `style` attributes here, and the
 * fetches and EventSource streams all go to `/api` on this origin. Sign-in leaves by a link
 * (a top-level navigation to the login endpoint, redirected to GitHub), never a form post, so
 * `form-action 'self'` holds; the favicon is a `data:` URL.
 */
export const contentSecurityPolicy = (html: string | undefined): string => {
  const { scripts, styles } = html === undefined ? { scripts: [], styles: [] } : inlineHashes(html)
  return [
    "default-src 'none'",
    `script-src ${["'self'", ...scripts].join(" ")}`,
    `style-src ${["'self'", ...styles].join(" ")}`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'"
  ].join("; ")
}

/** Every dashboard response's headers, given the policy of the page being served. */
export const dashboardSecurityHeaders = (policy: string): Readonly<Record<string, string>> => ({
  "content-security-policy": policy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  // `frame-ancestors` for browsers that predate it.
  "x-frame-options": "DENY"
})

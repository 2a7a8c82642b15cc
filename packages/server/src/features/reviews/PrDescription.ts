/**
 * Bosun's section of a pull request's body (automatic_pr_description): the description
 * the review agent wrote, between Bosun's markers, so the author's own text around it is kept byte
 * for byte. Pure text functions; reading and patching the body on GitHub is the review workflow's.
 */

export const DESCRIPTION_START = "<!-- bosun:description:start -->"
export const DESCRIPTION_END = "<!-- bosun:description:end -->"
export const DESCRIPTION_HEADING = "### Summary by Bosun"

// Every marker starts with this, and it holds exactly one `<`: no occurrence overlaps another, so
// one global replace leaves none behind and cannot form a new one.
const MARKER_PREFIX = "<!-- bosun:description:"
const NEUTRAL_PREFIX = "&lt;!-- bosun:description:"

/** The description with anything that could pass for one of Bosun's markers defused. */
const neutralised = (description: string): string => description.replaceAll(MARKER_PREFIX, NEUTRAL_PREFIX)

/** Bosun's section for `description`, markers included. */
export const descriptionSection = (description: string): string =>
  `${DESCRIPTION_START}\n${DESCRIPTION_HEADING}\n\n${neutralised(description.trim())}\n${DESCRIPTION_END}`

/**
 * The blank line between the author's text and an appended section, counting the line breaks it
 * already ends with, in its own line ending (GitHub's editor writes CRLF).
 */
const separator = (body: string): string => {
  if (/\r?\n\r?\n$/.test(body)) return ""
  const eol = body.includes("\r\n") ? "\r\n" : "\n"
  return /\r?\n$/.test(body) ? eol : `${eol}${eol}`
}

/**
 * `body` with Bosun's section set to `description`: an existing section is replaced in place (a
 * start marker whose end marker was deleted owns the rest of the body), else the section is
 * appended after a blank line; an empty body becomes the section alone. Applying the same
 * description again answers the same body.
 */
export const withDescription = (body: string | null, description: string): string => {
  const section = descriptionSection(description)
  if (body === null || body === "") return section
  const start = body.indexOf(DESCRIPTION_START)
  if (start === -1) return `${body}${separator(body)}${section}`
  const end = body.indexOf(DESCRIPTION_END, start + DESCRIPTION_START.length)
  const after = end === -1 ? "" : body.slice(end + DESCRIPTION_END.length)
  return `${body.slice(0, start)}${section}${after}`
}

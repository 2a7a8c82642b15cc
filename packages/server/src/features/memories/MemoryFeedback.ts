/**
 * What a comment on GitHub gives Bosun to learn from:
 *
 * - `@<slug> remember <convention>` (a conversation comment on a pull request, or a reply in a
 *   review thread): an explicit convention, from a person who may give Bosun commands.
 * - a reason-coded 👎: GitHub sends no webhook for reactions, so the 👎 Bosun hears is a reply in
 *   a finding's thread that starts with 👎 (or `:-1:` / `:thumbsdown:`), optionally followed by a
 *   reason code (`false_positive`, `not_applicable`, `wont_fix`, `convention`, `noise`) and why.
 * - any other reply in a Bosun finding's thread: it may state a convention or explain why the
 *   finding is wrong. Replies of fewer than three words ("thanks", "fixed") are not worth a run.
 *
 * Quoted (`>`) lines and fenced code are not read, as for the `@slug` commands.
 */
import { Option } from "effect"

export const THUMBS_DOWN_REASONS = ["false_positive", "not_applicable", "wont_fix", "convention", "noise"] as const
export type ThumbsDownReason = (typeof THUMBS_DOWN_REASONS)[number]

export type Feedback =
  | { readonly _tag: "Remember"; readonly text: string }
  | { readonly _tag: "ThumbsDown"; readonly reason: ThumbsDownReason | null; readonly text: string }
  | { readonly _tag: "Reply"; readonly text: string }

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The comment's own lines: quoted lines and fenced code blocks left out. */
const ownLines = (body: string): ReadonlyArray<string> => {
  const lines: Array<string> = []
  let fenced = false
  for (const line of body.split(/\r?\n/)) {
    const trimmed = line.trimStart()
    if (/^(```|~~~)/.test(trimmed)) {
      fenced = !fenced
      continue
    }
    if (!fenced && !trimmed.startsWith(">")) lines.push(line)
  }
  return lines
}

/** The text after the first `@slug remember` of the comment's own lines (the rest of the comment included); None without one. */
export const rememberText = (body: string, slug: string): Option.Option<string> => {
  const lines = ownLines(body)
  const mention = new RegExp(`(?<![\\w@/.-])@${escapeRegExp(slug)}(?![\\w-])[ \\t]+remember\\b[:,]?`, "i")
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? ""
    const match = mention.exec(line)
    if (match === null) continue
    const rest = [line.slice(match.index + match[0].length), ...lines.slice(index + 1)].join("\n").trim()
    return Option.some(rest)
  }
  return Option.none()
}

const THUMBS_DOWN = /^(?:👎|:-1:|:thumbsdown:)\s*/u

const wordCount = (text: string) => text.split(/\s+/).filter((word) => /[\p{L}\p{N}]/u.test(word)).length

/**
 * What a reply in a Bosun finding's thread (`onFinding`) or elsewhere teaches; None when it
 * teaches nothing worth an agent run.
 */
export const feedbackOf = (body: string, slug: string, onFinding: boolean): Option.Option<Feedback> => {
  const remembered = rememberText(body, slug)
  if (Option.isSome(remembered)) return Option.some({ _tag: "Remember", text: remembered.value })
  if (!onFinding) return Option.none()
  const text = ownLines(body).join("\n").trim()
  const thumbs = THUMBS_DOWN.exec(text)
  if (thumbs !== null) {
    const rest = text.slice(thumbs[0].length)
    const code = /^([a-z_]+)\b[:\s-]*/i.exec(rest)
    const candidate = code?.[1]?.toLowerCase() ?? ""
    const reason = (THUMBS_DOWN_REASONS as ReadonlyArray<string>).includes(candidate)
      ? (candidate as ThumbsDownReason)
      : null
    const why = reason === null ? rest.trim() : rest.slice(code?.[0].length ?? 0).trim()
    return Option.some({ _tag: "ThumbsDown", reason, text: why })
  }
  return wordCount(text) >= 3 ? Option.some({ _tag: "Reply", text }) : Option.none()
}

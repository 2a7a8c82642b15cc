/**
 * What a GitHub comment asks of the App: the first `@<slug>` mention and the command after it, and
 * the comment's text without its mentions. Parsing only; what a command does is GithubCommands.ts.
 */
import { Option } from "effect"

export type Command = "review" | "pause" | "resume" | "remember"
const COMMANDS: ReadonlySet<string> = new Set<Command>(["review", "pause", "resume", "remember"])
const isCommand = (word: string): word is Command => COMMANDS.has(word)

export type Mention =
  | { readonly _tag: "Command"; readonly command: Command }
  | { readonly _tag: "Unknown"; readonly word: string }

/**
 * What a comment asks of `@slug`: the first mention followed by a known command (any case), else
 * the word after the first mention ("" when none follows); None without a mention. Quoted lines
 * (`>`) and fenced code blocks are not read: quoting or pasting a command gives none.
 */
export const parseMention = (body: string, slug: string): Option.Option<Mention> => {
  const escaped = slug.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  const mention = new RegExp(`(?<![\\w@/.-])@${escaped}(?![\\w-])(?:[ \\t]+([A-Za-z][\\w-]*))?`, "gi")
  let fenced = false
  let first: Option.Option<Mention> = Option.none()
  for (const line of body.split(/\r?\n/)) {
    const trimmed = line.trimStart()
    if (/^(```|~~~)/.test(trimmed)) {
      fenced = !fenced
      continue
    }
    if (fenced || trimmed.startsWith(">")) continue
    for (const match of trimmed.matchAll(mention)) {
      const word = (match[1] ?? "").toLowerCase()
      if (isCommand(word)) return Option.some({ _tag: "Command", command: word })
      if (Option.isNone(first)) first = Option.some({ _tag: "Unknown", word })
    }
  }
  return first
}

/** The comment without its mentions of `@slug`: what a work item's conversation keeps. */
export const withoutMentionOf = (body: string, slug: string) => {
  const escaped = slug.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  return body
    .replace(new RegExp(`(?<![\\w@/.-])@${escaped}(?![\\w-])`, "gi"), " ")
    .replace(/[ \t]+/g, " ")
    .trim()
}

/**
 * The review policy's decisions (docs/interface.md: Resources "review_policy"), pure so that they
 * are tested over generated inputs: whether a pull-request event starts a review, and which changed
 * files a review leaves out.
 *
 * - Events: opened → review_on_open, reopened → review_on_reopen, synchronize (a push) →
 *   review_on_push, ready_for_review → review_on_ready; any other action starts nothing. A draft
 *   is reviewed only with review_drafts; a paused repository (`enabled: false`) never.
 * - Authors: `excluded_authors` compares logins without case; a `[bot]` entry excludes that App's
 *   bot, and the entry `[bot]` alone excludes every bot account.
 * - Paths: `excluded_paths` are globs (picomatch, `**` across directories, dotfiles matched) read
 *   in order like `.gitignore`: a path is excluded when the last pattern that matches it is not a
 *   `!` negation. `!` patterns re-include what an earlier pattern excluded.
 */
import type { ReviewPolicy } from "@bosun/domain"
import picomatch from "picomatch"

export type ReviewAction = "opened" | "reopened" | "synchronize" | "ready_for_review" | (string & {})

export interface ReviewEvent {
  readonly action: ReviewAction
  readonly draft: boolean
  readonly authorLogin: string | null
  /** The repository's own switch (`PATCH .../repositories/{id}` `{enabled}`). */
  readonly repositoryEnabled: boolean
}

export type ReviewDecision = { readonly review: true } | { readonly review: false; readonly reason: string }

const policyFlag = (action: ReviewAction) => {
  switch (action) {
    case "opened":
      return "review_on_open" as const
    case "reopened":
      return "review_on_reopen" as const
    case "synchronize":
      return "review_on_push" as const
    case "ready_for_review":
      return "review_on_ready" as const
    default:
      return undefined
  }
}

/** Whether the author is one `excluded_authors` names. */
export const isExcludedAuthor = (excluded: ReadonlyArray<string>, login: string | null): boolean => {
  if (login === null) return false
  const lower = login.toLowerCase()
  return excluded.some((entry) => {
    const wanted = entry.toLowerCase()
    return wanted === lower || (wanted === "[bot]" && lower.endsWith("[bot]"))
  })
}

export const decideReview = (policy: ReviewPolicy, event: ReviewEvent): ReviewDecision => {
  if (!event.repositoryEnabled) return { review: false, reason: "reviews are paused for this repository" }
  const flag = policyFlag(event.action)
  if (flag === undefined) return { review: false, reason: `pull_request ${event.action} does not start a review` }
  if (!policy[flag]) return { review: false, reason: `${flag} is off` }
  if (event.draft && !policy.review_drafts)
    return { review: false, reason: "the pull request is a draft and review_drafts is off" }
  if (isExcludedAuthor(policy.excluded_authors, event.authorLogin)) {
    return { review: false, reason: `the author ${event.authorLogin} is in excluded_authors` }
  }
  return { review: true }
}

/** A matcher for `excluded_paths`: true when the path is left out of reviews. */
export const pathExclusion = (patterns: ReadonlyArray<string>): ((path: string) => boolean) => {
  const rules = patterns.map((pattern) => {
    const negated = pattern.startsWith("!")
    const glob = negated ? pattern.slice(1) : pattern
    return { negated, matches: picomatch(glob, { dot: true }) }
  })
  return (path) => {
    let excluded = false
    for (const rule of rules) {
      if (rule.matches(path)) excluded = !rule.negated
    }
    return excluded
  }
}

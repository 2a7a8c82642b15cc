/**
 * The comments Bosun posts on a pull request or an issue in answer to a delivery: their texts
 * only. When each is posted, and under which idempotency key, is the steps' business.
 */

export const tooManyFilesNotice = (changed: number, limit: number) =>
  `Bosun did not review this pull request: it changes ${changed} files, over this repository's limit of ${limit} (review_policy.max_changed_files). Split it, or raise the limit and push again.`

const commandList = (slug: string) =>
  `\`@${slug} review\` reviews this pull request now, \`@${slug} pause\` pauses Bosun's reviews of this repository, \`@${slug} resume\` resumes them, \`@${slug} remember <convention>\` proposes a convention for Bosun's reviews.`

export const notices = {
  help: (slug: string, word: string) =>
    `${word === "" ? `Bosun needs a command after \`@${slug}\`.` : `Bosun does not know the command \`${word}\`.`} ${commandList(slug)}`,
  refused: (slug: string, login: string, association: string) =>
    `@${login}, only the repository's owners, organization members and collaborators can give \`@${slug}\` commands (GitHub lists you as ${association}).`,
  paused: (slug: string) =>
    `Bosun's reviews are paused for this repository, so this pull request was not reviewed. Comment \`@${slug} resume\` to resume them.`,
  closed: () => "Bosun reviews open pull requests only; this one is closed.",
  pauseDone: (slug: string, login: string, already: boolean) =>
    `${already ? "Bosun's reviews of this repository were already paused" : `Bosun paused its reviews of this repository, as @${login} asked`}. Comment \`@${slug} resume\` to resume them.`,
  resumeDone: (login: string, already: boolean) =>
    already
      ? "Bosun's reviews of this repository were not paused; nothing changed."
      : `Bosun resumed its reviews of this repository, as @${login} asked.`,
  rememberEmpty: (slug: string) =>
    `Tell Bosun what to remember after the command: \`@${slug} remember <the convention, in a sentence>\`.`,
  rememberQueued: (login: string) =>
    `Thanks @${login}: Bosun will write this down as a proposed memory. An organization admin approves it in Bosun before reviews follow it.`
}

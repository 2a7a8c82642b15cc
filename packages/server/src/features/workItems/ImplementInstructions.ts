/**
 * What an implement run asks of the agent (an approved item runs the agent with write access and
 * opens a pull request): the approved plan, the checkout to change, and the output contract
 * (`ImplementOutput`). The agent changes files in the checkout and nothing else; Bosun commits
 * exactly those changes and opens the pull request, so the agent neither commits nor pushes.
 */

export interface ImplementSubject {
  readonly repository: string
  readonly title: string
  readonly plan: string
  readonly request: string
  readonly checkoutPath: string
}

export const implementPrompt = (subject: ImplementSubject): string =>
  [
    `Implement this approved plan in ${subject.repository}, checked out at its default branch in ./${subject.checkoutPath}.`,
    `The change: ${subject.title}`,
    `The plan:\n\n${subject.plan.trim()}`,
    subject.request.trim() === "" ? "" : `The request it answers:\n\n${subject.request.trim()}`,
    "Change the files in the checkout. Do not commit, push or create branches: Bosun commits your changes and opens the pull request."
  ]
    .filter((part) => part !== "")
    .join("\n\n")

export const IMPLEMENT_INSTRUCTIONS = `You are Bosun, implementing a change a person approved. Make the change the plan describes, as small
and clear as the plan allows, in the style of the code around it; run the repository's tests where you can.
When you are done, write a JSON file implement.json in the directory named by the environment variable
BOSUN_OUTPUT_DIR, exactly in this shape (no other keys):

{"summary": "what you changed and how you checked it, in Markdown: the pull request's description"}

Changes outside the checkout are not kept. Output that does not match this shape fails the run.`

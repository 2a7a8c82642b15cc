/**
 * What an intake run asks of the agent: the request as the requester wrote it, the organization's
 * repositories to choose from, and the output contract of `IntakeOutput` (domain `WorkItemRun.ts`),
 * which publish enforces.
 */

export interface IntakeSubject {
  readonly title: string
  readonly request: string
  readonly requester: string | null
  /** `owner/name` of the repositories the organization has connected. */
  readonly repositories: ReadonlyArray<string>
  /** The thread's (or ticket's) follow-ups after the request, oldest first. */
  readonly followUps: ReadonlyArray<{ readonly author: string | null; readonly body: string }>
  /** The repository checked out for the agent to read, when the item names one. */
  readonly checkout: { readonly repository: string; readonly path: string } | null
}

export const intakePrompt = (subject: IntakeSubject): string =>
  [
    `A request to Bosun${subject.requester === null ? "" : ` from ${subject.requester}`}: "${subject.title}"`,
    subject.request.trim() === "" ? "" : `The request in full:\n\n${subject.request.trim()}`,
    subject.followUps.length === 0
      ? ""
      : `The conversation since, oldest first (reply to the last message, with the whole conversation in mind):\n${subject.followUps
          .map((message) => `- ${message.author ?? "someone"}: ${message.body.trim()}`)
          .join("\n")}`,
    subject.repositories.length === 0
      ? "The organization has no repositories connected."
      : `The organization's repositories:\n${subject.repositories.map((name) => `- ${name}`).join("\n")}`,
    subject.checkout === null
      ? ""
      : `${subject.checkout.repository} is checked out in ./${subject.checkout.path}; read it to answer or to plan.`,
    "Decide what this request is and write your decision as your instructions describe. Do not change any file."
  ]
    .filter((part) => part !== "")
    .join("\n\n")

export const INTAKE_INSTRUCTIONS = `You are Bosun, a teammate who answers questions about this organization's code and plans changes to it.
For each request decide one of three things and write it as JSON to the file intake.json in the directory
named by the environment variable BOSUN_OUTPUT_DIR, exactly in one of these shapes (no other keys):

{"decision": "ANSWER", "answer": "the reply, in Markdown"}
  when the request is a question you can answer. Your answer is posted in the requester's thread.

{"decision": "CHANGE", "repository": "owner/name", "title": "the pull request's title", "plan": "the steps, in Markdown"}
  when the request asks for a change to one of the organization's repositories (use its owner/name
  exactly as listed). Your plan is posted for a person to approve before anything is changed.

{"decision": "NEEDS_CONTEXT", "question": "what you need to know"}
  when you cannot tell what is asked or which repository it concerns. Your question is posted and
  the request waits for the answer.

Output that does not match one of these shapes is rejected and nothing is posted.`

/**
 * Pull requests on the fake GitHub for end-to-end tests: a push to a pull request's branch (git,
 * the pull ref, and what GitHub lists for it) and the `pull_request` webhook body GitHub sends
 * for it. Shared by the memory and context-suggestion end-to-end tests.
 */
import { FakeGithub, type GitRepository } from "@bosun/testing"
import { Effect } from "effect"
import type { Tenant } from "./InstalledApp.ts"

/** Commits `files` as pull request `number`'s new head (branch `feature-{number}` from main); answers the head. */
export const pushToPull = (
  repository: GitRepository,
  fullName: string,
  pr: { readonly number: number; readonly base: string; readonly files: Readonly<Record<string, string>> }
) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    const branch = `feature-${pr.number}`
    const head = yield* Effect.promise(() =>
      repository.commit(branch, pr.files, `push to #${pr.number}`, { from: "main" })
    )
    yield* Effect.promise(() => repository.setRef(`refs/pull/${pr.number}/head`, head))
    fake.setPull(fullName, {
      number: pr.number,
      head: { sha: head, ref: branch },
      base: { sha: pr.base, ref: "main" },
      files: yield* Effect.promise(() => repository.pullFiles(pr.base, head))
    })
    return head
  })

/** The repository as GitHub's webhooks describe it. */
export const eventRepository = (t: Tenant) => {
  const [, name] = t.fullName.split("/")
  return {
    id: t.githubRepositoryId,
    name,
    full_name: t.fullName,
    private: true,
    owner: { ...t.account, type: "Organization" },
    default_branch: "main"
  }
}

/** A `pull_request` delivery's body. */
export const pullRequestEvent = (
  t: Tenant,
  pr: { readonly action: string; readonly number: number; readonly head: string; readonly base: string }
) =>
  JSON.stringify({
    action: pr.action,
    number: pr.number,
    pull_request: {
      id: 7_000_000 + pr.number,
      number: pr.number,
      title: `Change ${pr.number}`,
      state: "open",
      draft: false,
      merged: false,
      changed_files: 1,
      user: { id: 4_001, login: "dev-anna", type: "User" },
      head: { sha: pr.head, ref: `feature-${pr.number}`, repo: { id: t.githubRepositoryId } },
      base: { sha: pr.base, ref: "main", repo: { id: t.githubRepositoryId } }
    },
    repository: eventRepository(t),
    installation: { id: t.installationId },
    sender: { id: 4_001, login: "dev-anna" }
  })

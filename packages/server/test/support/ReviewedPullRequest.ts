/**
 * One pull request ready for a review by a server running in a process of its own: the fake
 * GitHub has the App, its installation, the repository over smart HTTP and the pull request;
 * Bosun's database has the organization, the App's credentials (sealed with the key the server
 * process gets) and the repository; then the agent connection to import and the webhook that
 * starts the review, both sent to the running server.
 */
import { generateKeyPairSync } from "node:crypto"
import * as path from "node:path"
import { FakeGithub, makeGitRepository } from "@bosun/testing"
import { sign } from "@octokit/webhooks-methods"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { RepositoriesRepo } from "../../src/features/repositories/RepositoriesRepo.ts"
import { GithubAppsRepo } from "../../src/outbound/github/GithubAppsRepo.ts"
import { signIn } from "./Identity.ts"

export interface ReviewedPullRequestOptions {
  readonly org: string
  /** Where the repository's git directory goes. */
  readonly root: string
  readonly appId: number
  readonly installationId: number
  readonly repositoryId: number
  readonly owner: { readonly id: number; readonly login: string; readonly type: "Organization" }
  readonly name: string
  readonly webhookSecret: string
  /** The pull request's one changed file. */
  readonly file: string
  readonly content: string
}

/** The changed file of the fixture's pull request, its content, and the review an agent profile writes of it. */
export const CART_FILE = "src/cart.ts"
export const CART_CONTENT = "export const total = (item) =>\n  item.price\n"
export const CART_REVIEW = {
  summary: "Adds the cart.",
  findings: [
    {
      path: CART_FILE,
      start_line: 2,
      end_line: 2,
      side: "RIGHT",
      severity: "HIGH",
      category: "correctness",
      title: "The total ignores the quantity",
      body: "Multiply by the quantity."
    }
  ]
}

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })

export const reviewedPullRequest = (options: ReviewedPullRequestOptions) =>
  Effect.gen(function* () {
    const fake = yield* FakeGithub
    const sql = yield* SqlClient.SqlClient
    const fullName = `${options.owner.login}/${options.name}`
    const clientId = `Iv1.${options.org}`
    fake.addApp({
      clientId,
      clientSecret: `${options.org}-secret`,
      appId: options.appId,
      publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
      slug: "bosun"
    })
    fake.addInstallation({
      id: options.installationId,
      appId: options.appId,
      account: options.owner,
      repositories: [fullName]
    })
    const git = yield* Effect.promise(() => makeGitRepository(path.join(options.root, "git"), fullName))
    fake.addGitRepository(fullName, git.dir)
    const base = yield* Effect.promise(() => git.commit("main", { "README.md": "store\n" }, "init"))
    const head = yield* Effect.promise(() =>
      git.commit("feature-1", { [options.file]: options.content }, "change", { from: "main" })
    )
    yield* Effect.promise(() => git.setRef("refs/pull/1/head", head))
    fake.setPull(fullName, {
      number: 1,
      head: { sha: head, ref: "feature-1" },
      base: { sha: base, ref: "main" },
      files: yield* Effect.promise(() => git.pullFiles(base, head))
    })

    yield* (yield* OrganizationsRepo).ensure(options.org)
    yield* sql`UPDATE organizations SET github_account_id = ${options.owner.id} WHERE id = ${options.org}`
    yield* (yield* GithubAppsRepo).upsert(options.org, {
      githubAppId: options.appId,
      slug: "bosun",
      clientId,
      clientSecret: Redacted.make(`${options.org}-secret`),
      privateKey: Redacted.make(privateKey.export({ type: "pkcs8", format: "pem" }).toString()),
      webhookSecret: Redacted.make(options.webhookSecret)
    })
    yield* (yield* RepositoriesRepo).upsert(options.org, {
      githubRepositoryId: options.repositoryId,
      owner: options.owner.login,
      name: options.name,
      defaultBranch: "main"
    })
    const admin = yield* signIn(`${options.org}-admin`, [[options.org, "ADMIN"]])

    /**
     * Reviews need an agent connection with credentials and a model in its catalog, even when a
     * custom profile reviews.
     */
    const importConnection = (port: number) =>
      Effect.promise(() =>
        fetch(`http://127.0.0.1:${port}/api/v1/organizations/${options.org}/opencode-connection/import`, {
          method: "PUT",
          headers: { cookie: admin.cookie, "content-type": "application/json" },
          body: JSON.stringify({
            auth: {
              fake: {
                type: "api",
                key: "sk-review-0123456789",
                npm: "@ai-sdk/openai-compatible",
                models: { "fake-coder": { name: "Fake Coder" } }
              }
            }
          })
        }).then(async (response) => ({ status: response.status, text: await response.text() }))
      )

    /** GitHub's `pull_request` `opened` delivery, signed; answers the server's status. */
    const openPullRequest = (port: number, deliveryId: string) =>
      Effect.promise(async () => {
        const body = JSON.stringify({
          action: "opened",
          number: 1,
          pull_request: {
            number: 1,
            title: "Change",
            state: "open",
            draft: false,
            merged: false,
            changed_files: 1,
            user: { id: 4_002, login: "dev-bo", type: "User" },
            head: { sha: head, ref: "feature-1" },
            base: { sha: base, ref: "main" }
          },
          repository: {
            id: options.repositoryId,
            name: options.name,
            full_name: fullName,
            owner: options.owner,
            default_branch: "main"
          },
          installation: { id: options.installationId }
        })
        const response = await fetch(`http://127.0.0.1:${port}/api/v1/github/webhooks`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-github-delivery": deliveryId,
            "x-github-event": "pull_request",
            "x-github-hook-installation-target-type": "integration",
            "x-github-hook-installation-target-id": String(options.appId),
            "x-hub-signature-256": await sign(options.webhookSecret, body)
          },
          body
        })
        return response.status
      })

    return { fake, fullName, head, base, admin, importConnection, openPullRequest }
  })

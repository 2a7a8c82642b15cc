/**
 * A local stand-in for GitHub that speaks the public wire format of the parts Bosun's sign-in
 * uses, laid out like GitHub Enterprise Server (OAuth at the root, REST under `/api/v3`), so the
 * real Octokit clients talk to it (test code only):
 * - `POST /login/oauth/access_token` (form or JSON): a known code for the right client id and
 *   secret gives `{access_token, token_type, scope}`, anything else `{error:
 *   "bad_verification_code", ...}` with status 200, as GitHub does;
 * - `GET /api/v3/user`, `GET /api/v3/user/installations`, `GET /api/v3/user/memberships/orgs/:org`
 *   for a token it issued; 401 `Bad credentials` otherwise;
 * - as the App (a JWT signed RS256 with a registered App's private key, checked against its public
 *   key, `iss` the App id, unexpired): `GET /api/v3/repos/:owner/:repo/installation` (404 where
 *   the App is not installed) and `POST /api/v3/app/installations/:id/access_tokens` (an
 *   installation token valid one hour);
 * - with an installation token: `GET /api/v3/repos/:owner/:repo/branches/:branch` for the
 *   installation's repositories.
 * Every request is recorded so tests can assert what was sent.
 */
import { createPublicKey, randomBytes, verify } from "node:crypto"
import { createServer, type IncomingMessage } from "node:http"
import type { AddressInfo } from "node:net"
import { Context, Effect, Layer } from "effect"

export interface FakeGithubUser {
  readonly id: number
  readonly login: string
  readonly name: string | null
  readonly avatar_url: string
  readonly installations: ReadonlyArray<{
    readonly id: number
    readonly account: { readonly id: number; readonly login: string; readonly type: "User" | "Organization" }
  }>
  /** Role per GitHub organization login; an organization missing here answers 404. */
  readonly orgRoles: Readonly<Record<string, "admin" | "member">>
}

export interface FakeGithubApp {
  readonly clientId: string
  readonly clientSecret: string
  /** The App id and its public key (PEM): JWTs the App signs are accepted. */
  readonly appId?: number
  readonly publicKey?: string
}

export interface FakeGithubInstallation {
  readonly id: number
  readonly appId: number
  readonly account: { readonly id: number; readonly login: string; readonly type: "User" | "Organization" }
  /** `owner/name` of each repository it reaches. */
  readonly repositories: ReadonlyArray<string>
}

/** The App id a JWT claims, when its RS256 signature checks out under that App's key and it has not expired. */
const verifyAppJwt = (authorization: string | undefined, publicKeys: ReadonlyMap<number, string>) => {
  const jwt = /^bearer (.+)$/i.exec(authorization ?? "")?.[1]
  const [header, payload, signature] = jwt?.split(".") ?? []
  if (header === undefined || payload === undefined || signature === undefined) return undefined
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { iss?: unknown; exp?: unknown }
  const appId = Number(claims.iss)
  const key = publicKeys.get(appId)
  if (key === undefined || typeof claims.exp !== "number" || claims.exp * 1000 < Date.now()) return undefined
  const valid = verify(
    "RSA-SHA256",
    Buffer.from(`${header}.${payload}`),
    createPublicKey(key),
    Buffer.from(signature, "base64url")
  )
  return valid ? appId : undefined
}

export interface RecordedRequest {
  readonly method: string
  readonly path: string
  readonly authorization: string | undefined
  readonly body: string
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = ""
    req.on("data", (chunk: Buffer) => (body += chunk.toString()))
    req.on("end", () => resolve(body))
  })

export class FakeGithub extends Context.Service<
  FakeGithub,
  {
    /** `http://127.0.0.1:<port>`: the OAuth host; the REST API is `${url}/api/v3`. */
    readonly url: string
    readonly apiUrl: string
    readonly requests: ReadonlyArray<RecordedRequest>
    /** Registers the App whose credentials the token exchange (and, with a key, its JWTs) accepts. */
    readonly addApp: (app: FakeGithubApp) => void
    /** Installs an App on an account's repositories. */
    readonly addInstallation: (installation: FakeGithubInstallation) => void
    /** Points `branch` of `owner/name` at `sha`. */
    readonly setBranch: (repository: string, branch: string, sha: string) => void
    /** How many installation tokens were issued so far. */
    readonly issuedInstallationTokens: () => number
    /** A one-time authorization code for `user`, as GitHub hands it to the callback. */
    readonly issueCode: (clientId: string, user: FakeGithubUser) => string
    /** Fail every REST call with this status (simulating an outage); undefined to stop. */
    readonly failWith: (status: number | undefined) => void
  }
>()("bosun/testing/FakeGithub") {
  static readonly layer = Layer.effect(
    FakeGithub,
    Effect.acquireRelease(
      Effect.promise(async () => {
        const apps = new Map<string, string>()
        const appKeys = new Map<number, string>()
        const installations = new Map<number, FakeGithubInstallation>()
        const installationTokens = new Map<string, FakeGithubInstallation>()
        const branches = new Map<string, string>()
        const codes = new Map<string, { clientId: string; user: FakeGithubUser }>()
        const tokens = new Map<string, FakeGithubUser>()
        const requests: Array<RecordedRequest> = []
        let failure: number | undefined
        const server = createServer(async (req, res) => {
          const body = await readBody(req)
          const url = new URL(req.url ?? "/", "http://fake")
          requests.push({
            method: req.method ?? "",
            path: url.pathname,
            authorization: req.headers.authorization,
            body
          })
          const json = (status: number, value: unknown) => {
            res.writeHead(status, { "content-type": "application/json; charset=utf-8" })
            res.end(JSON.stringify(value))
          }
          if (req.method === "POST" && url.pathname === "/login/oauth/access_token") {
            const params: Record<string, string> = req.headers["content-type"]?.includes("json")
              ? (JSON.parse(body) as Record<string, string>)
              : Object.fromEntries(new URLSearchParams(body))
            const issued = codes.get(params.code ?? "")
            if (
              issued === undefined ||
              issued.clientId !== params.client_id ||
              apps.get(params.client_id ?? "") !== params.client_secret
            ) {
              return json(200, {
                error: "bad_verification_code",
                error_description: "The code passed is incorrect or expired.",
                error_uri: "https://docs.github.com/apps/troubleshooting"
              })
            }
            codes.delete(params.code ?? "")
            const token = `ghu_${randomBytes(18).toString("hex")}`
            tokens.set(token, issued.user)
            return json(200, { access_token: token, token_type: "bearer", scope: "" })
          }
          if (failure !== undefined) return json(failure, { message: "Service unavailable" })
          const repoInstallation = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)\/installation$/.exec(url.pathname)
          const accessTokens = /^\/api\/v3\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname)
          if (repoInstallation !== null || accessTokens !== null) {
            const appId = verifyAppJwt(req.headers.authorization, appKeys)
            if (appId === undefined) {
              return json(401, { message: "A JSON web token could not be decoded" })
            }
            if (repoInstallation !== null && req.method === "GET") {
              const repository = `${repoInstallation[1]}/${repoInstallation[2]}`
              const found = [...installations.values()].find(
                (installation) => installation.appId === appId && installation.repositories.includes(repository)
              )
              if (found === undefined) return json(404, { message: "Not Found" })
              return json(200, {
                id: found.id,
                app_id: found.appId,
                account: found.account,
                target_type: found.account.type
              })
            }
            const installation = installations.get(Number(accessTokens?.[1]))
            if (req.method !== "POST" || installation === undefined || installation.appId !== appId) {
              return json(404, { message: "Not Found" })
            }
            const token = `ghs_${randomBytes(18).toString("hex")}`
            installationTokens.set(token, installation)
            return json(201, {
              token,
              expires_at: new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d{3}Z$/, "Z"),
              permissions: { contents: "read", metadata: "read" },
              repository_selection: "selected"
            })
          }
          const branch = /^\/api\/v3\/repos\/([^/]+)\/([^/]+)\/branches\/(.+)$/.exec(url.pathname)
          if (branch !== null && req.method === "GET") {
            const installation = installationTokens.get((req.headers.authorization ?? "").replace(/^token /i, ""))
            if (installation === undefined) return json(401, { message: "Bad credentials" })
            const repository = `${branch[1]}/${branch[2]}`
            const sha = branches.get(`${repository}#${decodeURIComponent(branch[3] ?? "")}`)
            if (!installation.repositories.includes(repository) || sha === undefined) {
              return json(404, { message: "Branch not found" })
            }
            return json(200, { name: decodeURIComponent(branch[3] ?? ""), commit: { sha }, protected: false })
          }
          const user = tokens.get((req.headers.authorization ?? "").replace(/^(token|bearer) /i, ""))
          if (user === undefined) return json(401, { message: "Bad credentials" })
          if (req.method === "GET" && url.pathname === "/api/v3/user") {
            return json(200, {
              id: user.id,
              login: user.login,
              name: user.name,
              avatar_url: user.avatar_url,
              type: "User"
            })
          }
          if (req.method === "GET" && url.pathname === "/api/v3/user/installations") {
            return json(200, { total_count: user.installations.length, installations: user.installations })
          }
          const membership = /^\/api\/v3\/user\/memberships\/orgs\/([^/]+)$/.exec(url.pathname)
          if (req.method === "GET" && membership !== null) {
            const org = decodeURIComponent(membership[1] ?? "")
            const role = user.orgRoles[org]
            if (role === undefined) return json(404, { message: "Not Found" })
            return json(200, { state: "active", role, organization: { login: org } })
          }
          return json(404, { message: "Not Found" })
        })
        await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
        const { port } = server.address() as AddressInfo
        const url = `http://127.0.0.1:${port}`
        return {
          server,
          service: FakeGithub.of({
            url,
            apiUrl: `${url}/api/v3`,
            requests,
            addApp: (app) => {
              apps.set(app.clientId, app.clientSecret)
              if (app.appId !== undefined && app.publicKey !== undefined) appKeys.set(app.appId, app.publicKey)
            },
            addInstallation: (installation) => installations.set(installation.id, installation),
            setBranch: (repository, branch, sha) => branches.set(`${repository}#${branch}`, sha),
            issuedInstallationTokens: () => installationTokens.size,
            issueCode: (clientId, user) => {
              const code = randomBytes(10).toString("hex")
              codes.set(code, { clientId, user })
              return code
            },
            failWith: (status) => {
              failure = status
            }
          })
        }
      }),
      ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
    ).pipe(Effect.map(({ service }) => service))
  )
}

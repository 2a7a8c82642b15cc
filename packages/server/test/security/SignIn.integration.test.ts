/**
 * The sign-in entry point tells nobody which organizations exist: `GET /auth/github/login` with
 * the id of an organization that has an App, of one without, and of none at all answers alike.
 */
import { generateKeyPairSync } from "node:crypto"
import { FakeGithub } from "@bosun/testing"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { OrganizationsRepo } from "../../src/features/identity/OrganizationsRepo.ts"
import { layerTestServer, request, TEST_BOOTSTRAP_TOKEN } from "../support/TestServer.ts"

const PRIVATE_KEY = generateKeyPairSync("rsa", { modulusLength: 2048 })
  .privateKey.export({ type: "pkcs8", format: "pem" })
  .toString()

const Server = Layer.unwrap(
  Effect.map(FakeGithub, (fake) => layerTestServer({ settings: { githubApiUrl: new URL(fake.apiUrl) } }))
).pipe(Layer.provideMerge(FakeGithub.layer))

/** What a prober can compare: the status, where it leads (without the random state), which cookie it sets. */
const answerTo = (organizationId: string) =>
  Effect.gen(function* () {
    const response = yield* request(`/api/v1/auth/github/login?organization_id=${organizationId}`, {
      redirect: "manual"
    })
    const location = new URL(response.headers.get("location") ?? "http://invalid/")
    const state = location.searchParams.get("state")
    location.searchParams.delete("state")
    return {
      status: response.status,
      location: location.href,
      stateLength: state?.length ?? 0,
      cookies: response.headers.getSetCookie().map((cookie) => cookie.split("=")[0]),
      body: response.text
    }
  })

layer(Server, { excludeTestServices: true })("sign-in probing", (it) => {
  it.effect(
    "an organization with an App, one without and an unknown id get the same answer: 302 to the same authorize URL",
    () =>
      Effect.gen(function* () {
        const configured = yield* request("/api/v1/organizations/probe-real/github-app", {
          method: "PUT",
          headers: { authorization: `Bearer ${TEST_BOOTSTRAP_TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({
            client_id: "Iv1.probe",
            client_secret: "probe-client-secret",
            github_app_id: 91,
            github_app_slug: "bosun-probe",
            private_key: PRIVATE_KEY,
            webhook_secret: "probe-webhook-secret"
          })
        })
        assert.strictEqual(configured.status, 200, configured.text)
        yield* (yield* OrganizationsRepo).ensure("probe-without-app")

        const real = yield* answerTo("probe-real")
        assert.strictEqual(real.status, 302, real.body)
        assert.include(real.location, "client_id=Iv1.probe")
        assert.strictEqual(real.stateLength, 43)
        assert.deepStrictEqual(real.cookies, ["bosun_oauth_state"])
        assert.deepStrictEqual(yield* answerTo("probe-without-app"), real)
        assert.deepStrictEqual(yield* answerTo("probe-does-not-exist"), real)
      })
  )
})

/**
 * `X-Request-ID` choice (docs/interface.md: Errors 3): reuse exactly the values matching
 * `^[A-Za-z0-9._-]{1,128}$`, replace everything else with a generated id that matches it.
 */
import { RequestIdPattern } from "@bosun/domain"
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { isApiPath, resolveRequestId } from "../../../src/platform/http/RequestPipeline.ts"

const allowed = fc.constantFrom(..."abcxyzABCXYZ0123456789._-".split(""))

describe("resolveRequestId", () => {
  it("reuses every id of 1..128 allowed characters (property)", () => {
    fc.assert(
      fc.property(
        fc.array(allowed, { minLength: 1, maxLength: 128 }).map((cs) => cs.join("")),
        (id) => {
          assert.strictEqual(resolveRequestId(id), id)
        }
      )
    )
  })

  it("replaces anything else with a fresh id that matches the pattern (property)", () => {
    const bad = fc.oneof(
      fc.constant(""),
      fc.array(allowed, { minLength: 129, maxLength: 300 }).map((cs) => cs.join("")),
      fc.string({ minLength: 1, maxLength: 50 }).filter((s) => !RequestIdPattern.test(s))
    )
    fc.assert(
      fc.property(bad, (id) => {
        const chosen = resolveRequestId(id)
        assert.notStrictEqual(chosen, id)
        assert.match(chosen, RequestIdPattern)
      })
    )
  })

  it("generates an id when none is sent", () => {
    assert.match(resolveRequestId(undefined), RequestIdPattern)
    assert.notStrictEqual(resolveRequestId(undefined), resolveRequestId(undefined))
  })
})

describe("isApiPath", () => {
  it("sees /api paths the way the router matches them", () => {
    for (const path of [
      "/api",
      "/api/v1/x",
      "/api?x=1",
      "//api/v1",
      "/API/v1",
      "/Api/V1/x",
      "/%61pi/v1",
      "/api%2Fv1"
    ]) {
      assert.isTrue(isApiPath(path), path)
    }
    for (const path of ["/", "/healthz", "/readyz", "/apis", "/apiv1", "/dashboard/api", "/%zz"]) {
      assert.isFalse(isApiPath(path), path)
    }
  })
})

/**
 * The Linear webhook's pure parts, over generated inputs: a body's own hex HMAC verifies and any
 * change of body, secret or signature does not; `@name` mentions are found as words of their own.
 */
import { createHmac } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { mentions } from "../../../src/inbound/linear/LinearInbox.ts"
import { linearSignatureMatches } from "../../../src/inbound/linear/LinearWebhooksHttp.ts"

const hmac = (secret: string, body: string) => createHmac("sha256", secret).update(body).digest("hex")

describe("Linear-Signature", () => {
  it("a body's own signature verifies, in either letter case", () =>
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), (secret, body) => {
        assert.isTrue(linearSignatureMatches(secret, body, hmac(secret, body)))
        assert.isTrue(linearSignatureMatches(secret, body, hmac(secret, body).toUpperCase()))
      })
    ))

  it("another body, another secret, or a malformed signature does not", () =>
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string(), fc.string({ minLength: 1 }), (secret, body, extra) => {
        assert.isFalse(linearSignatureMatches(secret, body + extra, hmac(secret, body)))
        assert.isFalse(linearSignatureMatches(secret + extra, body, hmac(secret, body)))
        assert.isFalse(linearSignatureMatches(secret, body, hmac(secret, body).slice(1)))
        assert.isFalse(linearSignatureMatches(secret, body, `sha256=${hmac(secret, body)}`))
      })
    ))
})

describe("mentions", () => {
  it("finds @name as a word of its own, in any case, anywhere in the text", () =>
    fc.assert(
      fc.property(
        fc.constantFrom("", "hi ", "(", "\n"),
        fc.constantFrom("", " please", "!", ", thanks"),
        (before, after) => {
          assert.isTrue(mentions(`${before}@bosun${after}`, "bosun"))
          assert.isTrue(mentions(`${before}@BOSUN${after}`, "bosun"))
        }
      )
    ))

  it("does not take a longer name, an e-mail address or a missing name for a mention", () => {
    assert.isFalse(mentions("@bosunbot help", "bosun"))
    assert.isFalse(mentions("@bosun-dev help", "bosun"))
    assert.isFalse(mentions("write to ops@bosun.dev", "bosun"))
    assert.isFalse(mentions("@bosun help", null))
    assert.isFalse(mentions("bosun help", "bosun"))
    assert.isTrue(mentions("cc @b.o+s help", "b.o+s"))
  })
})

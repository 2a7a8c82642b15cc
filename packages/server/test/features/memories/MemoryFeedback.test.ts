/**
 * What a comment gives Bosun to learn from: `@slug remember`, a reason-coded 👎 reply and other
 * replies in a finding's thread; quoted and fenced text is not read, and replies too short to state
 * anything are not worth a run.
 */
import { describe, expect, it } from "@effect/vitest"
import { Option } from "effect"
import * as fc from "fast-check"
import { feedbackOf, rememberText, THUMBS_DOWN_REASONS } from "../../../src/features/memories/MemoryFeedback.ts"

describe("memory feedback", () => {
  it("takes what follows @slug remember, the rest of the comment included", () => {
    expect(rememberText("@bosun remember: use db.query\nwith parameters", "bosun")).toEqual(
      Option.some("use db.query\nwith parameters")
    )
    expect(rememberText("Please @Bosun REMEMBER no default exports", "bosun")).toEqual(
      Option.some("no default exports")
    )
    expect(rememberText("@bosun remember", "bosun")).toEqual(Option.some(""))
    expect(rememberText("@bosun review", "bosun")).toEqual(Option.none())
    expect(rememberText("email@bosun remember this", "bosun")).toEqual(Option.none())
    expect(rememberText("@bosun-bot remember this", "bosun")).toEqual(Option.none())
  })

  it("does not read quoted lines or fenced code", () => {
    expect(rememberText("> @bosun remember x", "bosun")).toEqual(Option.none())
    expect(rememberText("```\n@bosun remember x\n```", "bosun")).toEqual(Option.none())
    expect(feedbackOf("> we always use db.query here\nok", "bosun", true)).toEqual(Option.none())
  })

  it("reads a 👎 reply's reason code and why", () => {
    expect(feedbackOf("👎 false_positive: the id is an integer here", "bosun", true)).toEqual(
      Option.some({ _tag: "ThumbsDown", reason: "false_positive", text: "the id is an integer here" })
    )
    expect(feedbackOf(":-1: wont_fix - legacy module", "bosun", true)).toEqual(
      Option.some({ _tag: "ThumbsDown", reason: "wont_fix", text: "legacy module" })
    )
    expect(feedbackOf("👎 this is how we log", "bosun", true)).toEqual(
      Option.some({ _tag: "ThumbsDown", reason: null, text: "this is how we log" })
    )
  })

  it("learns from a reply in a finding's thread of three words or more, and from nothing else without remember", () => {
    expect(feedbackOf("we always use parameterized queries through db.query here", "bosun", true)).toEqual(
      Option.some({ _tag: "Reply", text: "we always use parameterized queries through db.query here" })
    )
    expect(feedbackOf("thanks, fixed", "bosun", true)).toEqual(Option.none())
    expect(feedbackOf("we always use parameterized queries", "bosun", false)).toEqual(Option.none())
    expect(feedbackOf("@bosun remember tabs", "bosun", false)).toEqual(Option.some({ _tag: "Remember", text: "tabs" }))
  })

  it("every reason code is read as itself, in any case, whatever follows", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...THUMBS_DOWN_REASONS),
        fc.constantFrom("👎", ":-1:", ":thumbsdown:"),
        fc.boolean(),
        fc.stringMatching(/^[a-z][a-z ]{0,40}$/),
        (reason, thumb, upper, why) => {
          const code = upper ? reason.toUpperCase() : reason
          const found = feedbackOf(`${thumb} ${code}: ${why}`, "bosun", true)
          expect(found).toEqual(Option.some({ _tag: "ThumbsDown", reason, text: why.trim() }))
        }
      )
    )
  })

  it("a quoted command is never read, whatever surrounds it", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.string({ maxLength: 60 }), (before, after) => {
        const clean = (text: string) => text.replace(/@/g, "").replace(/\r?\n/g, " ")
        const body = `${clean(before)}\n> @bosun remember ${clean(after)}\n`
        expect(Option.isNone(rememberText(body, "bosun"))).toBe(true)
      })
    )
  })
})

/**
 * The first screen's two answers — `GET /me` and the first page of the pull-request list —
 * read from the responses `early.ts` asked for while the bundle loaded, without the HTTP client
 * stack, which the first screen then does not need to load (budget: bench/README.md "Dashboard budget").
 * Each body is decoded with its endpoint's own success Schema from the contract (the domain's
 * `MeResponse` and `PullRequestPage`, which the API groups declare), and an error
 * response with the contract's error envelope and classes (`failure.ts`), so a screen cannot
 * tell these answers from `call`'s. No early response for the URL: `undefined`, and the screen
 * calls the API as usual.
 */
import { MeResponse } from "@bosun/domain/Identity"
import { PullRequestPage } from "@bosun/domain/PullRequest"
import { Schema } from "effect"
import { firstListPath, ME_PATH } from "../firstScreen.ts"
import { takeEarly } from "./earlyResponses.ts"
import { failureOfResponse, noAnswer, unexpected } from "./failure.ts"

const reader = <S extends Schema.Decoder<unknown>>(success: S) => {
  const decode = Schema.decodeUnknownPromise(success)
  const read = async (early: Promise<Response>): Promise<S["Type"]> => {
    const response = await early.catch(() => {
      throw noAnswer()
    })
    const body: unknown = await response.json().catch(() => undefined)
    if (!response.ok) throw failureOfResponse(response.status, body)
    return decode(body).catch((error: unknown) => {
      throw unexpected(error)
    })
  }
  return (path: string): Promise<S["Type"]> | undefined => {
    const early = takeEarly(new URL(path, window.location.origin).href)
    return early === undefined ? undefined : read(early)
  }
}

// The success Schemas `IdentityApi.me` and `PullRequestsApi.list` declare, the same objects.
const readMe = reader(MeResponse)
const readPullRequests = reader(PullRequestPage)

/** `GET /me` as `early.ts` asked for it, if it did. */
export const earlyMe = () => readMe(ME_PATH)

/** The organization's unfiltered first page of pull requests as `early.ts` asked for it, if it did. */
export const earlyPullRequests = (organization: string) => readPullRequests(firstListPath(organization))

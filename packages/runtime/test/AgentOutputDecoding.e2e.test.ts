/**
 * How the real runtime process decodes what an agent prints: UTF-8 read as a stream, so a
 * character whose bytes arrive in two pipe reads reaches the run's events whole, and invalid bytes
 * become U+FFFD exactly as the WHATWG decoder replaces them, on stdout and on stderr alike.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { RunEvent, RunState } from "@bosun/domain"
import {
  awaitEnd,
  call,
  makeFixtures,
  type RuntimeProcess,
  readTail,
  runRequest,
  startRuntime
} from "@bosun/testing/RuntimeProcess"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"

const fixtures = makeFixtures()

/** 30,000 euro signs (3 bytes each: E2 82 AC), 90 KB: more than a 64 KiB pipe read holds. */
const euros = "€".repeat(30_000)
const eurosFile = path.join(fixtures.root, "euros.txt")
fs.writeFileSync(eurosFile, `${euros}\n`, { mode: 0o644 })

/** Bytes with a stray continuation pair, and a character cut off by the end of the stream. */
const invalidLine = Buffer.from([...Buffer.from("ok "), 0xff, 0xfe, ...Buffer.from(" end")])
const cutOff = Buffer.from([...Buffer.from("cut "), 0xe2, 0x82])

const profiles = {
  // The line goes out three times: split by hand after the first byte of a character (40,000 =
  // 3 × 13,333 + 1) and after the second (60,001), with pauses so each piece is a read of its own;
  // then in one write, which a 64 KiB pipe splits after 65,536 bytes (3 × 21,845 + 1).
  euros: {
    command: [
      fixtures.script(
        "euros.sh",
        `head -c 40000 "$EUROS"
sleep 0.2
tail -c +40001 "$EUROS" | head -c 20001
sleep 0.2
tail -c +60002 "$EUROS"
cat "$EUROS"`
      )
    ],
    env: { EUROS: eurosFile }
  },
  invalid: {
    command: [fixtures.script("invalid.sh", "printf 'ok \\377\\376 end\\n'\nprintf 'cut \\342\\202'")]
  },
  // stderr is reported when the agent fails: the same split character, and an invalid byte.
  complainer: {
    command: [
      fixtures.script(
        "complainer.sh",
        `printf 'price: \\342' >&2
sleep 0.2
printf '\\202\\254 each\\n' >&2
printf 'bad \\377 byte\\n' >&2
exit 3`
      )
    ]
  }
}

const decodeState = Schema.decodeUnknownSync(RunState)
const isEvent = Schema.is(RunEvent)

let runtime: RuntimeProcess

beforeAll(async () => {
  runtime = await startRuntime({
    BOSUN_RUNTIME_AGENTS: JSON.stringify(profiles),
    BOSUN_RUNTIME_DATA_DIR: path.join(fixtures.root, "data")
  })
})

afterAll(async () => {
  await runtime?.stop()
})

/** Runs `profile` to its end; its final state and its events. */
const run = async (profile: string) => {
  const key = { run_id: `decode-${profile}`, attempt_id: `decode-${profile}:1` }
  const started = await call(
    runtime.base,
    "POST",
    "/v1/runs",
    runRequest(fixtures, { ...key, agent: { kind: "CUSTOM", profile } })
  )
  expect(started.status).toBe(201)
  const final = decodeState(await awaitEnd(runtime.base, key.attempt_id))
  const events = (await readTail(`${runtime.base}/v1/runs/${key.attempt_id}/events?after=0`)).lines.filter(isEvent)
  return { final, events }
}

describe("agent output decoding", () => {
  it("delivers a 90 KB line of 3-byte characters split across pipe reads as exactly that text", async () => {
    const { final, events } = await run("euros")
    expect(final.status).toBe("SUCCEEDED")
    const outputs = events.filter((event) => event.type === "agent.output")
    expect(outputs).toHaveLength(2)
    for (const output of outputs) {
      const line = (output.data as { readonly line: string }).line
      expect(line.indexOf("\uFFFD"), "the first U+FFFD").toBe(-1)
      expect(line.length).toBe(30_000)
      expect(line).toBe(euros)
    }
  })

  it("replaces invalid bytes and a character cut off by the end of output with U+FFFD as the WHATWG decoder does", async () => {
    const { final, events } = await run("invalid")
    expect(final.status).toBe("SUCCEEDED")
    const lines = events
      .filter((event) => event.type === "agent.output")
      .map((event) => (event.data as { readonly line: string }).line)
    expect(lines).toHaveLength(2)
    expect(lines[0]).toBe(new TextDecoder().decode(invalidLine))
    expect(lines[0]).toBe("ok \uFFFD\uFFFD end")
    expect(lines[1]).toBe(new TextDecoder().decode(cutOff))
    expect(lines[1]).toBe("cut \uFFFD")
  })

  it("decodes stderr as a stream too: the failed run's stderr lines keep a split character and replace a bad byte", async () => {
    const { final, events } = await run("complainer")
    expect(final.status).toBe("FAILED")
    expect(final.exit_code).toBe(3)
    const stderr = events.filter((event) => event.type === "agent.stderr")
    expect(stderr).toHaveLength(1)
    expect(stderr[0]?.data).toEqual({
      lines: [
        "price: € each",
        new TextDecoder().decode(Buffer.from([...Buffer.from("bad "), 0xff, ...Buffer.from(" byte")]))
      ]
    })
    expect(stderr[0]?.data).toEqual({ lines: ["price: € each", "bad \uFFFD byte"] })
  })
})

/**
 * Reads a `/metrics` answer in the Prometheus text exposition format (0.0.4) into samples, so
 * tests assert metric values by name and labels rather than by matching text.
 */

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export const parseExposition = (text: string): ReadonlyArray<Sample> =>
  text
    .split("\n")
    .filter((line) => line.length > 0 && !line.startsWith("#"))
    .map((line) => {
      const match = SAMPLE.exec(line)
      if (match === null) throw new Error(`not a Prometheus sample line: ${line}`)
      const labels: Record<string, string> = {}
      for (const [, key, raw] of (match[2] ?? "").matchAll(LABEL)) {
        if (key !== undefined) labels[key] = (raw ?? "").replace(/\\n/g, "\n").replace(/\\(["\\])/g, "$1")
      }
      return { name: match[1] ?? "", labels, value: Number(match[3]) }
    })

/** The samples named `name` whose labels include every one of `labels`. */
export const samples = (all: ReadonlyArray<Sample>, name: string, labels: Readonly<Record<string, string>> = {}) =>
  all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))

/** The one sample named `name` with `labels`; undefined when there is none, an error when several match. */
export const sampleValue = (
  all: ReadonlyArray<Sample>,
  name: string,
  labels: Readonly<Record<string, string>> = {}
): number | undefined => {
  const found = samples(all, name, labels)
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value
}

/** Scrapes `url` and parses it; checks the content type Prometheus expects. */
export const scrape = async (url: string): Promise<ReadonlyArray<Sample>> => {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) })
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`)
  const type = response.headers.get("content-type") ?? ""
  if (!type.startsWith("text/plain; version=0.0.4")) throw new Error(`${url} answered content-type ${type}`)
  return parseExposition(await response.text())
}

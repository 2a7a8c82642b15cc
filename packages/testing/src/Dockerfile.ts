/**
 * A Dockerfile read as text, for the tests of `infra/*.Dockerfile`: no Docker engine runs here, so
 * each image is checked by its instructions — the final stage's base image, user and entrypoint,
 * what it installs, and that what it copies exists.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The repository's root directory. */
export const repositoryRoot = fileURLToPath(new URL("../../../", import.meta.url))

export interface Dockerfile {
  /** Every instruction, its continuation lines joined, comments and blank lines dropped. */
  readonly instructions: ReadonlyArray<string>
  /** The instructions by stage, each starting with its `FROM`. */
  readonly stages: ReadonlyArray<ReadonlyArray<string>>
  /** The final stage: the image that ships. */
  readonly final: ReadonlyArray<string>
}

/** Reads `relativePath` (from the repository root) as a Dockerfile. */
export const readDockerfile = (relativePath: string): Dockerfile => {
  const instructions = fs
    .readFileSync(path.join(repositoryRoot, relativePath), "utf8")
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
  const stages = instructions.reduce<Array<Array<string>>>((all, line) => {
    if (line.startsWith("FROM ")) all.push([line])
    else all[all.length - 1]?.push(line)
    return all
  }, [])
  return { instructions, stages, final: stages[stages.length - 1] ?? [] }
}

/** The repository paths a stage's `COPY` instructions take from the build context (not `--from=`). */
export const copiedSources = (instructions: ReadonlyArray<string>): ReadonlyArray<string> =>
  instructions
    .filter((line) => line.startsWith("COPY ") && !line.includes("--from="))
    .flatMap((line) =>
      line
        .split(/\s+/)
        .filter((part) => !part.startsWith("--"))
        .slice(1, -1)
    )

/**
 * Helm for tests (rendering the Helm chart with no cluster and no network): the real `helm`
 * binary — v3.8.1 linux-amd64, which the npm package `@aws-cdk/asset-kubectl-v20` ships inside its
 * `lib/layer.zip` — extracted once into `node_modules/.cache/bosun-helm/`, and `helm template`
 * run on a chart with its values given as an object. Nothing is re-implemented: the manifests a
 * test reads are the ones `helm install` would send. The binary exists for Linux x64 only;
 * elsewhere `helmBinary()` says why there is none.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import * as path from "node:path"
import * as zlib from "node:zlib"
import * as YAML from "yaml"
import { repositoryRoot } from "./Dockerfile.ts"

const PACKAGE = "@aws-cdk/asset-kubectl-v20"
const ENTRY = "helm/helm"

/** One entry of a zip archive, inflated and checked against its CRC-32 (no zip64: the archive is 25 MB). */
const readZipEntry = (archive: Buffer, name: string): Buffer => {
  let end = archive.length - 22
  while (end >= 0 && archive.readUInt32LE(end) !== 0x06054b50) end--
  if (end < 0) throw new Error("not a zip archive: no end of central directory")
  let at = archive.readUInt32LE(end + 16)
  for (let i = archive.readUInt16LE(end + 10); i > 0; i--) {
    if (archive.readUInt32LE(at) !== 0x02014b50) throw new Error("corrupt zip central directory")
    const method = archive.readUInt16LE(at + 10)
    const crc = archive.readUInt32LE(at + 16)
    const compressed = archive.readUInt32LE(at + 20)
    const size = archive.readUInt32LE(at + 24)
    const nameLength = archive.readUInt16LE(at + 28)
    const next = at + 46 + nameLength + archive.readUInt16LE(at + 30) + archive.readUInt16LE(at + 32)
    if (archive.toString("utf8", at + 46, at + 46 + nameLength) === name) {
      const local = archive.readUInt32LE(at + 42)
      const start = local + 30 + archive.readUInt16LE(local + 26) + archive.readUInt16LE(local + 28)
      const raw = archive.subarray(start, start + compressed)
      const data = method === 0 ? raw : method === 8 ? zlib.inflateRawSync(raw) : undefined
      if (data === undefined) throw new Error(`${name}: unsupported zip compression method ${method}`)
      if (data.length !== size || zlib.crc32(data) !== crc) throw new Error(`${name}: size or CRC-32 mismatch`)
      return data
    }
    at = next
  }
  throw new Error(`${name} is not in the archive`)
}

export type HelmBinary =
  /** `version`: what the binary says it is (`v3.8.1`). */
  { readonly path: string; readonly version: string } | { readonly missing: string }

/** The `helm` binary, extracted on first use (atomically: parallel test files may race to it). */
export const helmBinary = (): HelmBinary => {
  if (process.platform !== "linux" || process.arch !== "x64") {
    return { missing: `${PACKAGE} ships helm for linux-amd64 only, not ${process.platform}-${process.arch}` }
  }
  const require = createRequire(import.meta.url)
  let main: string
  try {
    main = require.resolve(PACKAGE)
  } catch {
    return { missing: `${PACKAGE} is not installed (npm install)` }
  }
  const packageDir = path.dirname(path.dirname(main))
  const { version } = JSON.parse(fs.readFileSync(path.join(packageDir, "package.json"), "utf8")) as { version: string }
  const binary = path.join(repositoryRoot, "node_modules", ".cache", "bosun-helm", `${PACKAGE}@${version}`, "helm")
  if (!fs.existsSync(binary)) {
    const data = readZipEntry(fs.readFileSync(path.join(packageDir, "lib", "layer.zip")), ENTRY)
    fs.mkdirSync(path.dirname(binary), { recursive: true })
    const partial = `${binary}.${process.pid}.tmp`
    fs.writeFileSync(partial, data, { mode: 0o755 })
    fs.renameSync(partial, binary)
  }
  const said = spawnSync(binary, ["version", "--template", "{{ .Version }}"], { encoding: "utf8" })
  if (said.status !== 0) return { missing: `${binary} does not run: ${said.stderr || said.error?.message}` }
  return { path: binary, version: said.stdout.trim() }
}

/** A Kubernetes object as rendered. */
export interface Manifest {
  readonly apiVersion: string
  readonly kind: string
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [key: string]: unknown }
  readonly [key: string]: unknown
}

export type HelmRender =
  | { readonly ok: true; readonly manifests: ReadonlyArray<Manifest>; readonly output: string }
  | { readonly ok: false; readonly error: string }

export interface HelmTemplateOptions {
  /** The chart's directory. */
  readonly chart: string
  readonly release: string
  readonly namespace: string
  /** Values over the chart's values.yaml (`-f`). */
  readonly values?: unknown
  /** `Capabilities.KubeVersion` (helm's own default otherwise). */
  readonly kubeVersion?: string
}

/** Runs helm with `values` as a values file; helm keeps no state of its own (its homes are a temp dir). */
const runHelm = (helm: string, args: ReadonlyArray<string>, values: unknown) => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "bosun-helm-"))
  try {
    const valuesFile = path.join(home, "values.json")
    fs.writeFileSync(valuesFile, JSON.stringify(values ?? {}))
    const result = spawnSync(helm, [...args, "-f", valuesFile], {
      encoding: "utf8",
      env: {
        PATH: process.env.PATH ?? "",
        HOME: home,
        HELM_CONFIG_HOME: home,
        HELM_CACHE_HOME: home,
        HELM_DATA_HOME: home
      }
    })
    if (result.error !== undefined) throw result.error
    return result
  } finally {
    fs.rmSync(home, { recursive: true, force: true })
  }
}

/**
 * `helm template`: the manifests, parsed as YAML 1.1 like the Kubernetes API server's decoder
 * (an unquoted `yes` is a boolean there too) with duplicate keys refused; or helm's error.
 */
export const helmTemplate = (helm: string, options: HelmTemplateOptions): HelmRender => {
  const args = ["template", options.release, options.chart, "--namespace", options.namespace]
  if (options.kubeVersion !== undefined) args.push("--kube-version", options.kubeVersion)
  const result = runHelm(helm, args, options.values)
  if (result.status !== 0) return { ok: false, error: result.stderr.trim() }
  const manifests = YAML.parseAllDocuments(result.stdout, { version: "1.1", uniqueKeys: true }).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`helm rendered invalid YAML: ${doc.errors[0]?.message}`)
    const manifest: unknown = doc.toJS()
    return manifest === null ? [] : [manifest as Manifest]
  })
  return { ok: true, manifests, output: result.stdout }
}

/** `helm lint --strict` (warnings fail too): whether it passed, and what it printed. */
export const helmLint = (helm: string, chart: string, values?: unknown) => {
  const result = runHelm(helm, ["lint", chart, "--strict"], values)
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}`.trim() }
}

/**
 * Kubernetes manifests checked offline against the API's own schemas, strictly — as
 * `kubectl apply --validate=strict` does — from two npm packages generated from the Kubernetes
 * OpenAPI spec:
 * - types, required fields, enums and formats (quantities, int-or-string, ...): the ajv
 *   validators of `kubernetes-models` (`kubernetes-models/_schemas/IoK8sApi<Group><Version><Kind>`);
 * - unknown fields, which those validators let through: every object's keys against the field
 *   list of its type in the official client's models (`@kubernetes/client-node`, OpenAPI of
 *   Kubernetes 1.36), walked down the same tree.
 * A kind neither package knows is a problem too, never a silent pass.
 */
import * as KubernetesClient from "@kubernetes/client-node"

interface AjvError {
  readonly instancePath: string
  readonly keyword: string
  readonly params: Record<string, unknown>
}
type Validator = ((data: unknown) => boolean) & { errors?: ReadonlyArray<AjvError> | null }

interface Attribute {
  readonly baseName: string
  readonly type: string
}
type Model = { readonly getAttributeTypeMap?: () => ReadonlyArray<Attribute> }
const models = KubernetesClient as unknown as Readonly<Record<string, Model | undefined>>

const capitalize = (word: string) => `${word.charAt(0).toUpperCase()}${word.slice(1)}`

/** `apps/v1` → `Apps` and `V1`; the core group (`v1`) is `Core`; `rbac.authorization.k8s.io/v1` → `Rbac`. */
const groupAndVersion = (apiVersion: string) => {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["core", apiVersion]
  return { group: capitalize((group ?? "").split(".")[0] ?? ""), version: capitalize(version ?? "") }
}

const validators = new Map<string, Promise<Validator | undefined>>()
const validatorOf = (apiVersion: string, kind: string) => {
  const { group, version } = groupAndVersion(apiVersion)
  const name = `IoK8sApi${group}${version}${kind}`
  let found = validators.get(name)
  if (found === undefined) {
    found = import(`kubernetes-models/_schemas/${name}`).then(
      (module: { validate?: Validator }) => module.validate,
      () => undefined
    )
    validators.set(name, found)
  }
  return found
}

const describeError = (error: AjvError) => {
  const where = error.instancePath === "" ? "/" : error.instancePath
  if (error.keyword === "required") return `${where}: required field ${String(error.params.missingProperty)} is missing`
  return `${where}: ${error.keyword} ${JSON.stringify(error.params)}`
}

/** Keys that are not fields of `type`, at any depth, as JSON pointers. */
const unknownFields = (value: unknown, type: string, at: string, problems: Array<string>) => {
  if (value === null || typeof value !== "object") return
  if (type.startsWith("Array<") && type.endsWith(">")) {
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) unknownFields(item, type.slice(6, -1), `${at}/${i}`, problems)
    }
    return
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type)
  if (map?.[1] !== undefined) {
    for (const [key, item] of Object.entries(value)) unknownFields(item, map[1], `${at}/${key}`, problems)
    return
  }
  // Scalars, `any`, `IntOrString`, `Date`: nothing below to check (ajv checked their types).
  const attributes = models[type]?.getAttributeTypeMap?.()
  if (attributes === undefined || Array.isArray(value)) return
  for (const [key, item] of Object.entries(value)) {
    const attribute = attributes.find((a) => a.baseName === key)
    if (attribute === undefined) problems.push(`${at}/${key}: unknown field (${type} has no field "${key}")`)
    else unknownFields(item, attribute.type, `${at}/${key}`, problems)
  }
}

/** What is wrong with one manifest; empty when the API server would accept it as it is. */
export const kubernetesSchemaProblems = async (manifest: unknown): Promise<ReadonlyArray<string>> => {
  if (manifest === null || typeof manifest !== "object") return ["not an object"]
  const { apiVersion, kind } = manifest as { apiVersion?: unknown; kind?: unknown }
  if (typeof apiVersion !== "string" || typeof kind !== "string") return ["apiVersion and kind are required"]
  const validate = await validatorOf(apiVersion, kind)
  const root = `${groupAndVersion(apiVersion).version}${kind}`
  if (validate === undefined || models[root]?.getAttributeTypeMap === undefined) {
    return [`no schema for ${apiVersion} ${kind}`]
  }
  const problems = validate(manifest) ? [] : (validate.errors ?? []).map(describeError)
  unknownFields(manifest, root, "", problems)
  return problems
}

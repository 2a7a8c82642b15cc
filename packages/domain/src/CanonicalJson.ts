/**
 * A stable JSON text of a value: object keys sorted at every level, so equal values give equal
 * texts. The server fingerprints agent credentials with it; the runtime fingerprints run requests
 * for idempotent start.
 */
export const canonicalJson = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonicalJson).join(",")}]`
    : typeof value === "object" && value !== null
      ? `{${Object.keys(value)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`)
          .join(",")}}`
      : JSON.stringify(value)

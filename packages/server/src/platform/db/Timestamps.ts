/**
 * Postgres `timestamptz` values as the API writes them: ISO 8601 in UTC, null stays null.
 */
export const iso = (value: Date | null): string | null => value?.toISOString() ?? null

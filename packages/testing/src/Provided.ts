/**
 * What the global setup hands to test files, typed. Vitest's own `ProvidedContext` augmentation
 * does not reach its re-exported interface in vitest 5, so keys and types are declared here.
 */
import { inject } from "vitest"
import type { TestProject } from "vitest/node"

export interface BosunProvided {
  /** A Postgres URL whose role may create and drop databases. */
  readonly "bosun.pgAdminUrl": string
  /** A Redis URL, or null when none could be found or started. */
  readonly "bosun.redisUrl": string | null
  /** Why Redis is missing, when it is. */
  readonly "bosun.redisMissing": string | null
  /** The endpoint of the s3rver process the global setup started (path-style, S3RVER/S3RVER). */
  readonly "bosun.s3Endpoint": string
}

export const provided = <K extends keyof BosunProvided>(key: K): BosunProvided[K] =>
  inject(key as never) as BosunProvided[K]

export const provide = <K extends keyof BosunProvided>(project: TestProject, key: K, value: BosunProvided[K]) =>
  project.provide(key as never, value as never)

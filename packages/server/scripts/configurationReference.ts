/**
 * `npm run docs:config`: writes `docs/configuration-reference.md` from `src/platform/config/Settings.ts`.
 * The rendering lives beside the settings so `ConfigurationReference.test.ts` can compare the file
 * with what this would write.
 */
import { writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { renderConfigurationReference } from "../src/platform/config/Settings.ts"

const target = fileURLToPath(new URL("../../../docs/configuration-reference.md", import.meta.url))
writeFileSync(target, renderConfigurationReference())
process.stdout.write(`wrote ${target}\n`)

/** The running Bosun version, from the server package's manifest. */
import manifest from "../../package.json" with { type: "json" }

export const BOSUN_VERSION: string = manifest.version

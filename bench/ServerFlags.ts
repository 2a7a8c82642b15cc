/**
 * The Node flags `npm start` runs the server with (package.json's `start` script), so that the
 * benchmarks measure the server as it is started: a 16 MiB young-generation semi-space, which
 * `npm run bench:scheduler` measured at peak RSS 292 MB against 477 MB with V8's default (64 MiB on
 * this machine), at the same CPU per run and per delivery.
 */
export const SERVER_NODE_FLAGS: ReadonlyArray<string> = ["--max-semi-space-size=16"]

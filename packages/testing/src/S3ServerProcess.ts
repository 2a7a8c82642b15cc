/**
 * Runs s3rver (a real S3-protocol server) as its own process for the tests: argv is
 * `<port> <directory> <bucket>`; prints `ready` once listening on 127.0.0.1. It runs apart from
 * vitest because its paginated listings need Node's legacy OpenSSL provider (DES continuation
 * tokens), which the parent starts it with.
 */
import S3rver from "s3rver"

const [port, directory, bucket] = process.argv.slice(2)
const server = new S3rver({
  port: Number(port),
  address: "127.0.0.1",
  directory: directory ?? "",
  silent: true,
  configureBuckets: [{ name: bucket ?? "bosun-test", configs: [] }]
})
await server.run()
process.stdout.write("ready\n")
process.on("SIGTERM", () => {
  server.close().then(() => process.exit(0))
})

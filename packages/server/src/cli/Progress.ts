/**
 * The progress line of `bosun secrets rotate`, on stderr: redrawn in place on a terminal, one
 * line per change (at most every 2 s) when stderr is a file or a pipe.
 */
import type { SecretRotationRun } from "@bosun/domain"

const WIDTH = 30

export const progressLine = (run: SecretRotationRun): string => {
  const target = run.dry_run ? run.total_secrets : run.processed_secrets + run.remaining
  const done = run.dry_run
    ? run.status === "SUCCEEDED" || run.status === "FAILED"
      ? run.total_secrets
      : 0
    : run.processed_secrets
  const ratio = target === 0 ? (run.status === "QUEUED" ? 0 : 1) : Math.min(done / target, 1)
  const filled = Math.round(ratio * WIDTH)
  const bar = `${"#".repeat(filled)}${"-".repeat(WIDTH - filled)}`
  const what = run.dry_run
    ? `${run.total_secrets} envelopes checked, ${run.remaining} under an older key`
    : `${run.processed_secrets}/${target} re-sealed`
  return `[${bar}] ${Math.round(ratio * 100)
    .toString()
    .padStart(3)}% ${run.status.padEnd(9)} ${what}, ${run.failed_secrets} failed`
}

export const makeProgress = (stream: NodeJS.WriteStream) => {
  const tty = stream.isTTY === true
  let last = ""
  let lastAt = 0
  return {
    update: (run: SecretRotationRun) => {
      const line = progressLine(run)
      if (tty) {
        stream.write(`\r${line}\u001b[K`)
      } else if (line !== last && Date.now() - lastAt >= 2000) {
        stream.write(`${line}\n`)
        lastAt = Date.now()
      }
      last = line
    },
    done: (run: SecretRotationRun) => {
      const line = progressLine(run)
      stream.write(tty ? `\r${line}\u001b[K\n` : line !== last || lastAt === 0 ? `${line}\n` : "")
    }
  }
}

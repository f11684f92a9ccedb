import type { TracedChainRunResult } from "../index.ts";

/**
 * The exit codes of `isochain`, stated in its usage text and the README:
 *
 *   0  done: the chain ended ok, the replay was identical, the trace command ran
 *   1  the chain ended in error, the replay diverged, or the run's trace is incomplete
 *   2  could not do what was asked: a command-line mistake, or a script, tool module, trace or
 *      store that cannot be used (the message says which); also when a write to the output failed
 *   3  the chain is suspended, waiting for an approval (`replay --resume --decision` continues it)
 *
 * A closed output (EPIPE: `| head` stopped reading) changes none of these: the command ends
 * quietly with its own code (see terminal-text.ts).
 */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_SUSPENDED = 3;

/**
 * The exit code of a run (or a resumed run). A run whose trace is incomplete (`traceError`)
 * failed whatever its status: its later calls were refused, and a suspended one cannot be resumed.
 */
export function runExitCode(run: TracedChainRunResult): number {
  if (run.traceError) return EXIT_FAILED;
  if (run.status === "ok") return EXIT_OK;
  return run.status === "suspended" ? EXIT_SUSPENDED : EXIT_FAILED;
}

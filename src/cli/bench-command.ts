/**
 * `isochain bench [options]`: the benchmark suite of a source checkout (`benchmarks/run.ts`,
 * the same as `npm run bench -- [options]`), run in a child Node process with this terminal.
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { EXIT_USAGE } from "./exit-codes.ts";
import { writeErr } from "./terminal-text.ts";

/** The suite's entry, two folders up from this file (`src/cli/` in a checkout). */
const BENCH_ENTRY = fileURLToPath(new URL("../../benchmarks/run.ts", import.meta.url));

/**
 * Runs the suite with `args` and answers its exit code (1 for a child killed by a signal), or
 * {@link EXIT_USAGE} when this installation has no suite (a published package ships none).
 */
export function benchCommand(args: readonly string[]): Promise<number> {
  if (!existsSync(BENCH_ENTRY)) {
    writeErr(
      "isochain bench: this installation has no benchmark suite (benchmarks/run.ts ships with the source, not the package). " +
        "Clone the repository, run npm ci there, then isochain bench or npm run bench.\n",
    );
    return Promise.resolve(EXIT_USAGE);
  }
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--no-node-snapshot", BENCH_ENTRY, ...args], { stdio: "inherit" });
    child.on("error", (error) => {
      writeErr(`isochain bench: could not start the suite: ${error.message}\n`);
      resolve(EXIT_USAGE);
    });
    child.on("close", (code) => resolve(code ?? 1));
  });
}

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

/**
 * Where the suite's entry may be: two folders up from this file (`src/cli/` in a checkout), or
 * three (`dist/src/cli/`, the built command of a checkout).
 */
const BENCH_ENTRIES = ["../../benchmarks/run.ts", "../../../benchmarks/run.ts"].map((path) => fileURLToPath(new URL(path, import.meta.url)));

/**
 * Runs the suite with `args` and answers its exit code (1 for a child killed by a signal), or
 * {@link EXIT_USAGE} when this installation has no suite (a published package ships none).
 */
export function benchCommand(args: readonly string[]): Promise<number> {
  const entry = BENCH_ENTRIES.find((path) => existsSync(path));
  if (entry === undefined) {
    writeErr(
      `isochain bench: this installation has no benchmark suite (looked for ${BENCH_ENTRIES.join(" and ")}; it ships with the ` +
        "source, not the package). Clone the repository, run npm ci there, then isochain bench or npm run bench.\n",
    );
    return Promise.resolve(EXIT_USAGE);
  }
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--no-node-snapshot", entry, ...args], { stdio: "inherit" });
    child.on("error", (error) => {
      writeErr(`isochain bench: could not start the suite: ${error.message}\n`);
      resolve(EXIT_USAGE);
    });
    child.on("close", (code) => resolve(code ?? 1));
  });
}

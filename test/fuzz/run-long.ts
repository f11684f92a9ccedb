/**
 * Long mode of the chain fuzzer: `node test/fuzz/run-long.ts --runs 100000 --seed 42`
 * (`npm run fuzz -- --runs 100000 --seed 42`). Options: `--runs N` (default 1000), `--seed S`
 * (default random; printed so a run can be replayed), `--driver in-process|process`,
 * `--path P` (replay one failing case fast-check reported). Exits 1 on the first broken property,
 * printing the counterexample and how to replay it. Re-runs itself with `--no-node-snapshot`
 * (isolated-vm asks for it) when started without.
 */
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import fc from "fast-check";
import { ChainFuzzer, fuzzCase } from "./chain-fuzz.ts";

if (!process.execArgv.includes("--no-node-snapshot")) {
  const child = spawnSync(process.execPath, ["--no-node-snapshot", ...process.execArgv, ...process.argv.slice(1)], { stdio: "inherit" });
  process.exit(child.status ?? 1);
}

const USAGE = "usage: npm run fuzz -- [--runs N] [--seed S] [--driver in-process|process] [--path P]";
let values: { runs: string; seed?: string | undefined; driver: string; path?: string | undefined; help?: boolean | undefined };
try {
  ({ values } = parseArgs({
    options: {
      runs: { type: "string", default: "1000" },
      seed: { type: "string" },
      driver: { type: "string", default: "in-process" },
      path: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  }));
} catch (error) {
  console.error(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  console.log(`${USAGE}\n  --runs N    cases to run (default 1000)\n  --seed S    fast-check seed (default random, printed)\n  --driver D  in-process (default) or process\n  --path P    replay one failing case (with its --seed)`);
  process.exit(0);
}
const runs = Number(values.runs);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed) || (values.driver !== "in-process" && values.driver !== "process")) {
  console.error(USAGE);
  process.exit(2);
}

console.log(`isochain chain fuzz: ${runs} runs, seed ${seed}, driver ${values.driver}`);
const fuzzer = new ChainFuzzer({ driver: values.driver });
const started = performance.now();
let done = 0;
const details = await fc.check(
  fc.asyncProperty(fuzzCase, async (input) => {
    await fuzzer.check(input);
    done++;
    if (done % 1000 === 0) {
      const rate = done / ((performance.now() - started) / 1000);
      console.log(`  ${done} runs (${rate.toFixed(0)}/s, rss ${(process.memoryUsage.rss() / 2 ** 20).toFixed(0)} MiB)`);
    }
  }),
  { numRuns: runs, seed, endOnFailure: true, ...(values.path === undefined ? {} : { path: values.path }) },
);
await fuzzer.close();
console.log(`statuses: ${JSON.stringify(Object.fromEntries(fuzzer.statuses))}`);
if (details.failed) {
  console.error(fc.defaultReportMessage(details) ?? "property failed");
  console.error(`replay: node test/fuzz/run-long.ts --seed ${seed} --path ${details.counterexamplePath ?? ""} --runs ${runs}`);
  process.exit(1);
}
console.log(`ok: ${details.numRuns} runs in ${((performance.now() - started) / 1000).toFixed(1)} s`);
process.exit(0);

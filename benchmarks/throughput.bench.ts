/**
 * Sustained throughput: one-call chains run back to back by 2 and by 8 concurrent callers (no
 * pause for the pool to refill). One iteration = 32 chains shared by the callers; figures are
 * chains per second (median) with the per-chain time behind them.
 * Targets: >= 1500 chains/s in-process (`isochain`), >= 400 chains/s through the process
 * driver (`isochain-process`), at both concurrencies.
 * @module
 */
import type { BenchFile, Scenario } from "./harness.ts";
import { SCRIPTS } from "./support/fixtures.ts";
import { concurrentScenario, openIsochain, openNodeVm, openRawIvm } from "./support/script-scenarios.ts";

const GROUP = "throughput";
const CHAINS_PER_RUN = 32;

const scenarios: Scenario[] = [2, 8].flatMap((concurrency) => [
  concurrentScenario({
    name: `node-vm/sustained-c${concurrency}`,
    group: GROUP,
    concurrency,
    chainsPerRun: CHAINS_PER_RUN,
    description: `${concurrency} callers, node:vm`,
    open: () => openNodeVm(SCRIPTS.oneCall),
  }),
  concurrentScenario({
    name: `raw-ivm/sustained-c${concurrency}`,
    group: GROUP,
    baseline: `node-vm/sustained-c${concurrency}`,
    concurrency,
    chainsPerRun: CHAINS_PER_RUN,
    description: `${concurrency} callers, raw isolated-vm (pool of 2)`,
    open: () => openRawIvm(SCRIPTS.oneCall),
  }),
  concurrentScenario({
    name: `isochain/sustained-c${concurrency}`,
    group: GROUP,
    baseline: `raw-ivm/sustained-c${concurrency}`,
    target: { label: ">= 1500 /s", minPerSecond: 1500 },
    concurrency,
    chainsPerRun: CHAINS_PER_RUN,
    description: `${concurrency} callers, ToolChainTool.run (default pool)`,
    open: () => openIsochain(SCRIPTS.oneCall, "ok"),
  }),
  concurrentScenario({
    name: `isochain-process/sustained-c${concurrency}`,
    group: GROUP,
    baseline: `isochain/sustained-c${concurrency}`,
    target: { label: ">= 400 /s", minPerSecond: 400 },
    concurrency,
    chainsPerRun: CHAINS_PER_RUN,
    description: `${concurrency} callers, ToolChainTool.run on the process driver (default children)`,
    open: () => openIsochain(SCRIPTS.oneCall, "ok", { driver: "process" }),
  }),
]);

export default { scenarios } satisfies BenchFile;

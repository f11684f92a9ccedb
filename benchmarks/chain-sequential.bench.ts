/**
 * 50 sequential tool calls in one warm chain, and the derived cost of each further call:
 * (sequential-50 - one-call) / 49, from medians measured in the same interleaved rounds.
 * Targets: <= 25 µs per further call in-process; through the process driver <= 1.5 x the bare
 * host <-> child round trip measured in the same run (`child-process/per-sequential-call`).
 * @module
 */
import type { BenchFile, DerivedFigure, Target } from "./harness.ts";
import { CHAIN_GROUP, chainPathScenarios } from "./support/chain-path-scenarios.ts";
import { SCRIPTS } from "./support/fixtures.ts";

function perCall(runner: string, baseline?: string, target?: Target): DerivedFigure {
  return {
    name: `${runner}/per-sequential-call`,
    group: CHAIN_GROUP,
    ...(baseline === undefined ? {} : { baseline: `${baseline}/per-sequential-call` }),
    ...(target === undefined ? {} : { target }),
    description: "(sequential-50 - one-call) / 49",
    compute: (median) => {
      const many = median(`${runner}/sequential-50`);
      const one = median(`${runner}/one-call`);
      return many === undefined || one === undefined ? undefined : (many - one) / 49;
    },
  };
}

export default {
  scenarios: chainPathScenarios({ path: "sequential-50", script: SCRIPTS.sequential50, expected: 1, calls: 50, parallel: false }),
  derived: [
    perCall("node-vm"),
    perCall("raw-ivm", "node-vm"),
    perCall("child-process", "node-vm"),
    perCall("isochain", "raw-ivm", { label: "<= 25 µs", maxNs: 25e3 }),
    perCall("isochain-sync-drive", "isochain"),
    perCall("isochain-process", "child-process", { label: "<= 1.5x round trip", maxRatio: 1.5 }),
  ],
} satisfies BenchFile;

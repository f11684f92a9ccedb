/**
 * 50 tool calls in flight at once (`Promise.all`) in one warm chain.
 * Target (isochain): median <= 1.0 ms.
 * @module
 */
import type { BenchFile } from "./harness.ts";
import { chainPathScenarios } from "./support/chain-path-scenarios.ts";
import { SCRIPTS } from "./support/fixtures.ts";

export default {
  scenarios: chainPathScenarios({
    path: "parallel-50",
    script: SCRIPTS.parallel50,
    expected: 1,
    target: { label: "<= 1.0 ms", maxNs: 1.0e6 },
    calls: 50,
    parallel: true,
  }),
} satisfies BenchFile;

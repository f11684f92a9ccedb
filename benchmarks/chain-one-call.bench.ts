/**
 * One warm chain with one tool call: `return (await tools.echo({ n: 1 })).status;`.
 * Target (isochain, in-process driver): median <= 0.25 ms.
 * @module
 */
import type { BenchFile } from "./harness.ts";
import { chainPathScenarios } from "./support/chain-path-scenarios.ts";
import { SCRIPTS } from "./support/fixtures.ts";

export default {
  scenarios: chainPathScenarios({
    path: "one-call",
    script: SCRIPTS.oneCall,
    expected: "ok",
    target: { label: "<= 0.25 ms", maxNs: 0.25e6 },
    calls: 1,
    parallel: false,
  }),
} satisfies BenchFile;

/**
 * A tool returning 1 MiB: `const r = await tools.big({}); return r.artifactRef ? 1 : 0;`.
 * isochain runs with a `MemoryBlobStore`, so the result is offloaded and the script sees a ref
 * (returns 1); the baselines have no store and carry the whole string into the script (return
 * 0); the child-process floor ships 1 MiB host -> child and gets an ack back.
 * Targets: in-process offloaded <= 1.0 ms; process driver offloaded <= 1.5 ms and inline
 * (`maxInlineResultBytes` 2 MiB: the script gets the whole text, returns 0) <= 5 ms.
 * @module
 */
import { ChildProcessEcho } from "./baselines/child-process-echo.ts";
import type { BenchFile, Scenario } from "./harness.ts";
import { BIG_RESULT, SCRIPTS } from "./support/fixtures.ts";
import { isochainScenario, nodeVmScenario, rawIvmScenario } from "./support/script-scenarios.ts";

const GROUP = "large-result";
let child: ChildProcessEcho | undefined;

const childScenario: Scenario = {
  name: "child-process/result-1mib",
  group: GROUP,
  baseline: "node-vm/result-1mib",
  description: "1 MiB JSON string host -> child over a pipe, ack back",
  async setup() {
    child = await ChildProcessEcho.start();
  },
  run: () => child?.request("ack", BIG_RESULT),
  async teardown() {
    await child?.close();
  },
};

export default {
  scenarios: [
    nodeVmScenario({ name: "node-vm/result-1mib", group: GROUP, script: SCRIPTS.bigResult, expected: 0, description: "node:vm: the string is shared, not copied" }),
    rawIvmScenario({
      name: "raw-ivm/result-1mib",
      group: GROUP,
      script: SCRIPTS.bigResult,
      expected: 0,
      baseline: "node-vm/result-1mib",
      description: "raw isolated-vm: 1 MiB JSON copied into the isolate and parsed",
    }),
    childScenario,
    isochainScenario({
      name: "isochain/result-1mib",
      group: GROUP,
      script: SCRIPTS.bigResult,
      expected: 1,
      baseline: "raw-ivm/result-1mib",
      target: { label: "<= 1.0 ms", maxNs: 1.0e6 },
      description: "isochain: offloaded to a MemoryBlobStore, the script gets a ref",
    }),
    isochainScenario({
      name: "isochain-process/result-1mib",
      group: GROUP,
      script: SCRIPTS.bigResult,
      expected: 1,
      driver: "process",
      baseline: "child-process/result-1mib",
      target: { label: "<= 1.5 ms", maxNs: 1.5e6 },
      description: "isochain, process driver: offloaded on the host, only the ref crosses the pipe",
    }),
    isochainScenario({
      name: "isochain-process/result-1mib-inline",
      group: GROUP,
      script: SCRIPTS.bigResult,
      expected: 0,
      driver: "process",
      inlineResults: true,
      baseline: "child-process/result-1mib",
      target: { label: "<= 5 ms", maxNs: 5e6 },
      description: "isochain, process driver, maxInlineResultBytes 2 MiB: the whole 1 MiB crosses the pipe into the isolate",
    }),
  ],
} satisfies BenchFile;

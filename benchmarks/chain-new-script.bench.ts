/**
 * The one-call chain of `chain-one-call.bench.ts` with a new script text every time, as a model
 * writes a new script for each chain: the figure then includes compiling it (isochain: the host's
 * TypeScript compile and checks, and the isolate's compile; raw isolated-vm: the isolate's
 * compile). No target: the warm-chain target is with the compile cached; this is what a
 * chain costs without that.
 * @module
 */
import type { BenchFile } from "./harness.ts";
import { isochainScenario, rawIvmScenario } from "./support/script-scenarios.ts";
import { SCRIPTS } from "./support/fixtures.ts";

const GROUP = "new-script";
const PATH = "one-call-new-script";

export default {
  scenarios: [
    rawIvmScenario({
      name: `raw-ivm/${PATH}`,
      group: GROUP,
      script: SCRIPTS.oneCall,
      expected: "ok",
      freshScript: true,
      description: "hand-written isolated-vm runner, warm pool, a new script text each run (compiled in the isolate)",
    }),
    isochainScenario({
      name: `isochain/${PATH}`,
      group: GROUP,
      script: SCRIPTS.oneCall,
      expected: "ok",
      baseline: `raw-ivm/${PATH}`,
      freshScript: true,
      description: "ToolChainTool.run, in-process driver, a new script text each run (host compile + isolate compile)",
    }),
    isochainScenario({
      name: `isochain-process/${PATH}`,
      group: GROUP,
      script: SCRIPTS.oneCall,
      expected: "ok",
      baseline: `raw-ivm/${PATH}`,
      driver: "process",
      freshScript: true,
      description: "ToolChainTool.run, process driver, a new script text each run",
    }),
  ],
} satisfies BenchFile;

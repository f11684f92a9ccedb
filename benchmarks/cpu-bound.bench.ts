/**
 * CPU-bound script, no calls: count the primes below 200 000 by trial division (17 984). Shows
 * what isolation costs compiled code (expected: ~nothing; the same V8 JIT runs it everywhere).
 * @module
 */
import type { BenchFile } from "./harness.ts";
import { PRIME_COUNT_BELOW_200K, SCRIPTS } from "./support/fixtures.ts";
import { isochainScenario, nodeVmScenario, rawIvmScenario } from "./support/script-scenarios.ts";

const GROUP = "cpu";
const common = { group: GROUP, script: SCRIPTS.primes, expected: PRIME_COUNT_BELOW_200K } as const;

export default {
  scenarios: [
    nodeVmScenario({ ...common, name: "node-vm/primes-200k", description: "node:vm, same isolate" }),
    rawIvmScenario({ ...common, name: "raw-ivm/primes-200k", baseline: "node-vm/primes-200k", description: "raw isolated-vm" }),
    isochainScenario({ ...common, name: "isochain/primes-200k", baseline: "raw-ivm/primes-200k", description: "isochain chain (CPU limit armed)" }),
  ],
} satisfies BenchFile;

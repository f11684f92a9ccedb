/**
 * The runners of one chain hot path (node:vm floor, raw isolated-vm floor, child-process
 * round trips, isochain with the in-process driver, isochain with the process driver), all in
 * group `"chain"` so the one-call, sequential and parallel files
 * are interleaved together and the derived per-call figure compares like with like.
 * @module
 */
import { ChildProcessEcho } from "../baselines/child-process-echo.ts";
import type { Scenario, Target } from "../harness.ts";
import { isochainScenario, nodeVmScenario, rawIvmScenario } from "./script-scenarios.ts";

/** The group of every chain-path scenario. */
export const CHAIN_GROUP = "chain";

/** One chain hot path. */
export interface ChainPath {
  /** e.g. `"one-call"`; scenario names are `<runner>/<path>`. */
  readonly path: string;
  readonly script: string;
  readonly expected: unknown;
  readonly target?: Target;
  /** Tool calls the script makes (the child-process floor does as many round trips). */
  readonly calls: number;
  readonly parallel: boolean;
}

/** Targets of the process driver (`isochain-process/<path>`), by path. */
const PROCESS_TARGETS: Readonly<Record<string, Target>> = {
  "one-call": { label: "<= 1.5 ms", maxNs: 1.5e6 },
  "parallel-50": { label: "<= 3 ms", maxNs: 3e6 },
};

/**
 * Idle time before each iteration of the `child-process-idle` variant, ms: about what a process
 * driver chain waits between chains (the child prepares its next context, ~1 ms), so the
 * round trip starts from idle CPUs, as a chain's first hop does.
 */
const IDLE_BEFORE_MS = 1;

/**
 * `calls` round trips to a child process, one after another or all in flight at once; with
 * `idle`, after {@link IDLE_BEFORE_MS} of idle time (untimed): on a small VM, waking an idle CPU
 * costs more than the round trip itself (measured here: 50 µs back to back, ~200 µs after 1 ms idle).
 */
function childScenario({ path, calls, parallel }: ChainPath, idle = false): Scenario {
  let child: ChildProcessEcho | undefined;
  return {
    name: `${idle ? "child-process-idle" : "child-process"}/${path}`,
    group: CHAIN_GROUP,
    baseline: `node-vm/${path}`,
    description: `${calls} echo round trip(s) host <-> child over stdio pipes${parallel ? ", pipelined" : ""}${idle ? `, each run after ${IDLE_BEFORE_MS} ms idle` : ""}`,
    ...(idle ? { between: () => new Promise<void>((resolve) => setTimeout(resolve, IDLE_BEFORE_MS)) } : {}),
    async setup() {
      child = await ChildProcessEcho.start();
    },
    async run() {
      const c = child;
      if (c === undefined) return;
      if (parallel) await Promise.all(Array.from({ length: calls }, (_, n) => c.request("echo", { n })));
      else for (let n = 0; n < calls; n++) await c.request("echo", { n });
    },
    async teardown() {
      await child?.close();
    },
  };
}

/**
 * node-vm, raw-ivm, child-process, isochain, isochain-sync-drive (the in-process chain with the
 * sandbox child's synchronous drive: what the asynchronous drive costs), isochain-no-spin (the
 * in-process chain without the host's spin: what the spin buys) and isochain-process scenarios
 * of `chain`.
 */
export function chainPathScenarios(chain: ChainPath): Scenario[] {
  const { path, script, expected, target } = chain;
  /** The same chain on another in-process driver, as a reference beside `isochain/<path>`. */
  const isochainReference = (runner: string, driver: "sync-drive" | "in-process-no-spin", what: string): Scenario =>
    isochainScenario({
      name: `${runner}/${path}`,
      group: CHAIN_GROUP,
      script,
      expected,
      baseline: `isochain/${path}`,
      description: `ToolChainTool.run, ${what}: ${path}`,
      driver,
    });
  return [
    nodeVmScenario({ name: `node-vm/${path}`, group: CHAIN_GROUP, script, expected, description: `node:vm, same isolate: ${path}` }),
    rawIvmScenario({
      name: `raw-ivm/${path}`,
      group: CHAIN_GROUP,
      script,
      expected,
      baseline: `node-vm/${path}`,
      description: `hand-written isolated-vm runner, warm pool: ${path}`,
    }),
    childScenario(chain),
    childScenario(chain, true),
    isochainScenario({
      name: `isochain/${path}`,
      group: CHAIN_GROUP,
      script,
      expected,
      baseline: `raw-ivm/${path}`,
      description: `ToolChainTool.run, in-process driver, warm pool: ${path}`,
      ...(target === undefined ? {} : { target }),
    }),
    isochainReference(
      "isochain-sync-drive",
      "sync-drive",
      "isolates driven synchronously on the host thread (a reference, not offered: no heap limit, holds the event loop)",
    ),
    isochainReference("isochain-no-spin", "in-process-no-spin", "in-process driver with spinWaitUs 0 (the host thread sleeps at once after each hand-off to the isolate)"),
    isochainScenario({
      name: `isochain-process/${path}`,
      group: CHAIN_GROUP,
      script,
      expected,
      baseline: `child-process/${path}`,
      description: `ToolChainTool.run, process driver (2 warm children), warm: ${path}`,
      driver: "process",
      ...(PROCESS_TARGETS[path] === undefined ? {} : { target: PROCESS_TARGETS[path] }),
    }),
  ];
}

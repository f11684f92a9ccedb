/**
 * The machine's idle penalty, measured in the same run as everything else: the same trivial
 * isolated-vm calls back to back and after 1 ms of untimed idle time.
 *
 * A chain is a string of hops (host -> isolate thread -> host, or host -> child -> host), and
 * every hop lands on a thread that has just been waiting. On a small VM a CPU that went idle
 * comes back slowly and with cold caches, so the same work costs many times more after a wait
 * than in a tight loop. These figures put a number on that for the machine the suite runs on:
 * it is the floor under every "warm chain" figure, which runs after a pause, as real chains do.
 *
 * - `ivm/apply-sync`: `Reference.applySync` of a function returning its argument, on the
 *   calling thread (what the process driver's child does per entry).
 * - `ivm/apply`: the same through `apply` (a task on the isolate's thread and back: one
 *   in-process hop).
 * - `…-idle`: each iteration after 1 ms idle; the ratio is the penalty.
 * @module
 */
import ivm from "isolated-vm";
import type { BenchFile, Scenario } from "./harness.ts";

const GROUP = "idle";
const IDLE_MS = 1;

let isolate: ivm.Isolate | undefined;
let context: ivm.Context | undefined;
let identity: ivm.Reference<(value: number) => number> | undefined;

async function setup(): Promise<void> {
  if (identity !== undefined) return;
  isolate = new ivm.Isolate({ memoryLimit: 32 });
  context = await isolate.createContext();
  identity = (await context.eval("(value) => value", { reference: true })) as ivm.Reference<(value: number) => number>;
}

function teardown(): void {
  if (isolate === undefined) return;
  identity?.release();
  context?.release();
  if (!isolate.isDisposed) isolate.dispose();
  isolate = undefined;
  context = undefined;
  identity = undefined;
}

const idle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, IDLE_MS));

function scenario(sync: boolean, afterIdle: boolean): Scenario {
  const base = sync ? "ivm/apply-sync" : "ivm/apply";
  return {
    name: afterIdle ? `${base}-idle` : base,
    group: GROUP,
    ...(afterIdle ? { baseline: base } : {}),
    description: `${sync ? "applySync" : "apply"} of an identity function in a warm isolate${afterIdle ? `, each after ${IDLE_MS} ms idle` : ", back to back"}`,
    setup,
    run: sync ? () => identity?.applySync(undefined, [1]) : () => identity?.apply(undefined, [1]),
    ...(afterIdle ? { between: idle } : {}),
    teardown,
  };
}

export default {
  scenarios: [scenario(true, false), scenario(true, true), scenario(false, false), scenario(false, true)],
} satisfies BenchFile;

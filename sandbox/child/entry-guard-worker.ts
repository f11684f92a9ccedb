/**
 * The guard's worker thread (see `entry-guard.ts`): while awake it polls every `GUARD_POLL_MS`,
 * and during an entry samples the resident memory and the clock; past the cap or the deadline
 * it writes one line to stderr (synchronously: the main thread, which owns `process.stderr`, is
 * blocked) and ends the process with SIGKILL. So does a host gone during an entry (the process
 * was handed to another parent): a child computing cannot see its pipe close, and would burn a
 * core until its CPU deadline. After `GUARD_IDLE_POLLS` polls without an entry it sleeps until an
 * entry wakes it.
 * @module
 */
import { writeSync } from "node:fs";
import { workerData } from "node:worker_threads";
import {
  GUARD_DEADLINE_OFFSET,
  GUARD_IDLE_POLLS,
  GUARD_INT_SLOTS,
  GUARD_LINE_PREFIX,
  GUARD_POLL_MS,
  GUARD_SLOT,
  type GuardReason,
} from "./entry-guard.ts";

const buffer = workerData as SharedArrayBuffer;
const state = new Int32Array(buffer, 0, GUARD_INT_SLOTS);
const deadline = new Float64Array(buffer, GUARD_DEADLINE_OFFSET, 1);
/** The host. When it dies the process is handed to another parent (init, a subreaper). */
const hostPid = process.ppid;

function end(reason: GuardReason): never {
  try {
    writeSync(2, `\n${GUARD_LINE_PREFIX} ${reason}\n`);
  } finally {
    process.kill(process.pid, "SIGKILL");
  }
  // SIGKILL does not return; this keeps the type checker honest.
  throw new Error("unreachable");
}

let idlePolls = 0;
for (;;) {
  const current = Atomics.load(state, GUARD_SLOT.state);
  if (current === 2) break;
  if (current === 0) {
    Atomics.wait(state, GUARD_SLOT.state, 0);
    idlePolls = 0;
    continue;
  }
  Atomics.wait(state, GUARD_SLOT.state, 1, GUARD_POLL_MS);
  if (Atomics.load(state, GUARD_SLOT.inEntry) === 1) {
    idlePolls = 0;
    if (process.memoryUsage.rss() > state[GUARD_SLOT.rssCapMb]! * 1_048_576) end("memory");
    if (Date.now() > deadline[0]!) end("cpu");
    // Nobody is left to read a reason: just go.
    if (process.ppid !== hostPid) process.kill(process.pid, "SIGKILL");
  } else if (++idlePolls >= GUARD_IDLE_POLLS && Atomics.compareExchange(state, GUARD_SLOT.state, 1, 0) === 1) {
    // Asleep from now on, unless an entry began meanwhile (its `enter` saw us awake and did not wake us).
    if (Atomics.load(state, GUARD_SLOT.inEntry) === 1) Atomics.store(state, GUARD_SLOT.state, 1);
  }
}

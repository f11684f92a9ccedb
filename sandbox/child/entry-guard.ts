/**
 * The sandbox child's guard over synchronous entries into its isolate. The child drives its
 * isolate on its main thread (see `sync-isolate-runner.ts`), which is fast but has two blind
 * spots that a thread of its own can see past:
 *
 * - isolated-vm does not enforce an isolate's heap limit while the isolate runs on the main
 *   thread (laverdet/isolated-vm#460): a heap-growth loop would take memory without bound.
 * - A script stuck where V8 does not check for interrupts (a huge builtin call, a GC thrash)
 *   does not see the entry's timeout.
 *
 * So a worker thread ({@link ./entry-guard-worker.ts}) watches every entry: while one is in
 * progress it samples the process's resident memory every {@link GUARD_POLL_MS} ms, and ends the
 * process (SIGKILL, after writing one line to stderr that the host reads back as the outcome:
 * `MemoryLimitError` or `CpuLimitError`) when the memory passes the run's cap or the entry
 * outlives its deadline by {@link GUARD_GRACE_MS}. The cap is the child's resident memory when
 * it became ready, plus twice the run's `memoryLimitMb`, plus {@link RSS_SLACK_MB}: generous
 * for a script that uses its whole heap (V8 commits more than it uses), and a hard bound on
 * one that does not stop. Between entries nothing of the isolate can
 * run.
 *
 * The main thread talks to the worker through one SharedArrayBuffer, with no message and, while
 * a chain runs, no system call per entry: {@link EntryGuard.enter} stores the deadline and the
 * cap and raises the entry flag, {@link EntryGuard.leave} lowers it. The worker polls while it
 * is awake; after {@link GUARD_IDLE_POLLS} polls with no entry it goes to sleep on a futex, and
 * the next `enter` wakes it (the only futex wake, once per idle spell rather than once per entry:
 * on a 2-core machine a thread switch per call is not free).
 * @module
 */
import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { EntryWatch } from "../sync-isolate-runner.ts";

/** How often the worker samples memory and time during an entry, ms. */
export const GUARD_POLL_MS = 10;
/** How long past an entry's own timeout the guard waits before it ends the process, ms. */
export const GUARD_GRACE_MS = 1_000;
/** The line prefix the guard writes to stderr before it ends the process. */
export const GUARD_LINE_PREFIX = "isochain-sandbox-guard:";
/** What the guard names when it ends the process. */
export type GuardReason = "memory" | "cpu";

/** Polls with no entry after which the worker sleeps until the next entry wakes it. */
export const GUARD_IDLE_POLLS = 50;

/** Slots of the shared state (Int32 view). */
export const GUARD_SLOT = Object.freeze({
  /** The worker: 0 asleep, 1 awake (polling), 2 shut down. */
  state: 0,
  /** Resident-memory cap of the current entry, MiB. */
  rssCapMb: 1,
  /** 1 while the main thread is inside an entry. */
  inEntry: 2,
});
/** Byte offset of the deadline (Float64, epoch ms) in the shared buffer. */
export const GUARD_DEADLINE_OFFSET = 16;
/** Size of the shared buffer, bytes. */
export const GUARD_BUFFER_BYTES = 24;
/** Int32 slots before the deadline. */
export const GUARD_INT_SLOTS = 3;

/** The worker file next to this one: `.ts` in the source tree, `.js` when built. */
const WORKER_FILE = new URL(`./entry-guard-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

/** Resident memory allowed beyond the baseline and twice the heap limit, MiB. */
const RSS_SLACK_MB = 64;

/** The main-thread side of the guard; see the module comment. */
export class EntryGuard implements EntryWatch {
  readonly #state: Int32Array;
  readonly #deadline: Float64Array;
  readonly #worker: Worker;
  #baselineMb = 0;

  /** Starts the worker thread. It does not keep the process alive. */
  constructor() {
    const buffer = new SharedArrayBuffer(GUARD_BUFFER_BYTES);
    this.#state = new Int32Array(buffer, 0, GUARD_INT_SLOTS);
    this.#deadline = new Float64Array(buffer, GUARD_DEADLINE_OFFSET, 1);
    this.#worker = new Worker(WORKER_FILE, { workerData: buffer, stdout: false, stderr: false });
    this.#worker.unref();
  }

  /** Takes the process's resident memory now as the baseline of every cap (call once warm). */
  measureBaseline(): void {
    this.#baselineMb = process.memoryUsage.rss() / 1_048_576;
  }

  enter(deadline: number, memoryLimitMb: number): void {
    this.#deadline[0] = deadline + GUARD_GRACE_MS;
    this.#state[GUARD_SLOT.rssCapMb] = Math.ceil(this.#baselineMb + 2 * memoryLimitMb + RSS_SLACK_MB);
    // The flag first, then the wake-up: a worker falling asleep re-reads the flag after it
    // marked itself asleep, so one of the two always sees the other (both are seq-cst).
    Atomics.store(this.#state, GUARD_SLOT.inEntry, 1);
    if (Atomics.compareExchange(this.#state, GUARD_SLOT.state, 0, 1) === 0) Atomics.notify(this.#state, GUARD_SLOT.state);
  }

  leave(): void {
    Atomics.store(this.#state, GUARD_SLOT.inEntry, 0);
  }

  /** Stops the worker. */
  close(): void {
    Atomics.store(this.#state, GUARD_SLOT.state, 2);
    Atomics.notify(this.#state, GUARD_SLOT.state);
    void this.#worker.terminate();
  }
}

/** The guard's reason in a stderr tail, if the guard ended the process. */
export function guardReasonIn(stderr: string): GuardReason | undefined {
  const match = new RegExp(`${GUARD_LINE_PREFIX} (memory|cpu)`).exec(stderr);
  return match === null ? undefined : (match[1] as GuardReason);
}

/**
 * A short busy wait of the event loop while a run waits on its sandbox.
 *
 * When a thread has handed the sandbox its work (the host: a start or a batch of results to an
 * isolate or a child; a sandbox child: a batch of calls to the host) and has nothing else to do,
 * Node's event loop blocks in `epoll_wait` and the thread sleeps; on a virtual machine its CPU
 * halts, and the answer lands on a thread that must first be woken (an interrupt, a VM entry)
 * and then runs cold. Measured on the 2-core VMs of the reference runs: a trivial isolated-vm
 * call costs 1-4 µs back to back and 5-24 µs after 1 ms idle, host code right after a wake-up
 * runs 5-10x slower than hot, and a bare child echo round trip is 20-50 µs back to back against
 * 40-270 µs after 1 ms idle. So after each hand-off the loop is kept turning (one `setImmediate`
 * after another, each turn polling I/O without blocking) until the answer is in, the budget of
 * µs is spent, or the run ends: the answer is picked up by an awake thread.
 *
 * Measured (interleaved A/B, in-process driver, 2 000 chains each): a one-call chain -16 to
 * -18%, 20 sequential calls -46%, with the process's CPU time per chain +4% and -17%
 * (a spin is cheaper than the wake-ups it replaces); through sandbox children, with the child
 * spinning too while its script waits on the host: -18% and -45%.
 *
 * The price is CPU, bounded by the budget per hand-off, and paid only while a core is free for
 * it: {@link SpinWait.begin} does nothing (and stops a spin under way) unless the runs in flight
 * in this process, each of which keeps a core busy with its isolate or child, leave one for the
 * spinning thread (`os.availableParallelism()`). Nothing waits on the spin: I/O, timers and
 * immediates run on every turn, as they would have. `availableParallelism()` counts the CPUs
 * the process may run on, not a container's CPU quota: under a quota below the CPU count, set
 * `spinWaitUs` to 0 (or lower) on the driver.
 * @module
 */
import { availableParallelism } from "node:os";

/** Default budget of one spin, µs: longer than an isolate's or a child's answer usually takes. */
export const DEFAULT_SPIN_WAIT_US = 1000;

/** Largest `spinWaitUs` accepted, µs: a spin is for answers that come within a millisecond or so. */
export const MAX_SPIN_WAIT_US = 1_000_000;

/** Checks a `spinWaitUs` option. @returns the reason it is unusable, or `undefined` */
export function spinWaitProblem(spinWaitUs: unknown): string | undefined {
  if (spinWaitUs === undefined || isSpinWaitUs(spinWaitUs)) return undefined;
  return `spinWaitUs must be a number of µs from 0 (never spin) to ${MAX_SPIN_WAIT_US}; got ${String(spinWaitUs)}.`;
}

/** True for a usable spin budget, µs: a number from 0 to {@link MAX_SPIN_WAIT_US}. */
export function isSpinWaitUs(value: unknown): value is number {
  return typeof value === "number" && value >= 0 && value <= MAX_SPIN_WAIT_US;
}

/** One spin of the event loop at a time, shared by every run of the process. */
export class SpinWait {
  /** Cores the spin may count on. */
  readonly cores: number;
  /** Runs in flight in this process, of any driver. */
  #runs = 0;
  /** `performance.now()` past which the loop stops turning; 0 when stopped. */
  #deadline = 0;
  #turning = false;
  #turns = 0;
  readonly #turn = (): void => {
    if (this.#deadline !== 0 && performance.now() < this.#deadline) {
      this.#turns++;
      // Ref'd on purpose: an unref'd immediate lets libuv block in its poll phase, which is the
      // sleep this is here to avoid.
      setImmediate(this.#turn);
      return;
    }
    this.#turning = false;
  };

  constructor(cores: number = availableParallelism()) {
    this.cores = cores;
  }

  /** True while the loop is kept turning. */
  get spinning(): boolean {
    return this.#turning && this.#deadline !== 0;
  }

  /** Event-loop turns the current (or last) spin has taken. */
  get turns(): number {
    return this.#turns;
  }

  /** Runs in flight, as counted by {@link runStarted} and {@link runEnded}. */
  get runs(): number {
    return this.#runs;
  }

  /** A run started: its isolate or child keeps a core busy until {@link runEnded}. */
  runStarted(): void {
    this.#runs++;
  }

  /** A run counted by {@link runStarted} ended. */
  runEnded(): void {
    if (this.#runs > 0) this.#runs--;
  }

  /** True when the runs in flight leave a core for a spinning thread. */
  get coreFree(): boolean {
    return this.#runs + 1 <= this.cores;
  }

  /**
   * Keeps the event loop turning for up to `budgetUs` µs from now (a spin under way is extended),
   * when a core is free for it ({@link coreFree}); when none is, stops any spin under way (a
   * budget of 0 changes nothing). Returns whether it spins.
   */
  begin(budgetUs: number): boolean {
    // No budget: this caller does not spin, and leaves a spin of another run alone.
    if (!(budgetUs > 0)) return false;
    if (!this.coreFree) {
      this.#deadline = 0;
      return false;
    }
    this.#deadline = performance.now() + budgetUs / 1000;
    if (!this.#turning) {
      this.#turning = true;
      this.#turns = 0;
      setImmediate(this.#turn);
    }
    return true;
  }

  /** Stops the spin: the answer it waited for is in, or the run ended. */
  end(): void {
    this.#deadline = 0;
  }
}

/** The process's spin; see the module comment. */
export const spinWait = new SpinWait();

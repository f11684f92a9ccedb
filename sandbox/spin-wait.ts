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
 *
 * Nor does that count see other processes. On a machine whose cores are taken by other work, a
 * spinning thread only competes with the isolate or child whose answer it waits for: on a 2-core
 * VM beside one busy process, interleaved A/B of the spin without and with what follows, a
 * one-call chain took 1.30 against 0.35 ms, and 50 calls through a child 80.1 against 8.4 ms. So
 * where Linux reports CPU pressure (PSI: the process's own cgroup's `cpu.pressure` under cgroup
 * v2, which sees a container's quota too, else the machine's `/proc/pressure/cpu`), the share of
 * time some task waited for a CPU is read at most every {@link PRESSURE_WINDOW_MS} as spins
 * begin: over {@link BUSY_STALL_SHARE} in {@link BUSY_WINDOWS} windows in a row, no spin begins for a quiet period
 * ({@link MIN_QUIET_MS}, doubled up to {@link MAX_QUIET_MS} while the pressure is found again
 * right after each). The same runs alone stay well under it (5-23%, the process driver's
 * children included); beside one busy process, 31-50%. Where neither file can be read (another
 * OS, PSI turned off), spins go on as counted above.
 * @module
 */
import { closeSync, openSync, readFileSync, readSync } from "node:fs";
import { availableParallelism } from "node:os";

/** Default budget of one spin, µs: longer than an isolate's or a child's answer usually takes. */
export const DEFAULT_SPIN_WAIT_US = 1000;

/** Shortest window over which CPU pressure is judged, ms (see the module comment). */
export const PRESSURE_WINDOW_MS = 200;

/** Windows longer than this, ms (the process was idle), start over instead of being judged. */
const MAX_PRESSURE_WINDOW_MS = 10 * PRESSURE_WINDOW_MS;

/** Share of a window in which some task waited for a CPU above which spins stop (see the module comment). */
export const BUSY_STALL_SHARE = 0.35;

/** Windows in a row over {@link BUSY_STALL_SHARE} that start a quiet period. */
export const BUSY_WINDOWS = 2;

/** The first quiet period after CPU pressure was found, ms. */
export const MIN_QUIET_MS = 1_000;

/** The longest quiet period, ms: the machine is looked at again at least this often. */
export const MAX_QUIET_MS = 16_000;

/**
 * The machine's total CPU stall time so far, µs (PSI's `some total`), or `undefined` where it is
 * not reported.
 */
export type StallClock = () => number | undefined;

/**
 * A {@link StallClock} on the process's cgroup v2 `cpu.pressure`, or else `/proc/pressure/cpu`:
 * the first of them that reads as PSI, found at the first read and kept open. Once neither can
 * be read it answers `undefined` for good, its descriptor closed.
 */
export function procPressureStallClock(): StallClock {
  let fd: number | undefined;
  let unavailable = false;
  const buffer = Buffer.alloc(256);
  const readTotal = (): number | undefined => {
    const read = readSync(fd as number, buffer, 0, buffer.length, 0);
    // The first line: "some avg10=0.00 avg60=0.00 avg300=0.00 total=123456"
    const total = /^some .*?total=(\d+)/.exec(buffer.toString("latin1", 0, read));
    return total === null ? undefined : Number(total[1]);
  };
  return () => {
    if (unavailable) return undefined;
    try {
      if (fd === undefined) {
        for (const path of pressurePaths()) {
          try {
            fd = openSync(path, "r");
            if (readTotal() !== undefined) break;
          } catch {
            // not there, or not PSI: the next
          }
          if (fd !== undefined) closeSync(fd);
          fd = undefined;
        }
      }
      if (fd !== undefined) {
        const total = readTotal();
        if (total !== undefined) return total;
      }
    } catch {
      // not readable any more: spins go on as counted
    }
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
    unavailable = true;
    return undefined;
  };
}

/** Where to read CPU pressure, best first: the process's cgroup v2 `cpu.pressure`, then the machine's. */
function pressurePaths(): string[] {
  let cgroups = "";
  try {
    cgroups = readFileSync("/proc/self/cgroup", "latin1");
  } catch {
    // no cgroups here
  }
  const own = cgroupPressurePath(cgroups);
  return own === undefined ? ["/proc/pressure/cpu"] : [own, "/proc/pressure/cpu"];
}

/**
 * The `cpu.pressure` file of the cgroup v2 group named in `/proc/self/cgroup`'s text (its
 * `0::<path>` line), or `undefined` under cgroup v1 only. The root group has none of its own: the
 * machine's file then serves.
 */
export function cgroupPressurePath(procSelfCgroup: string): string | undefined {
  const line = /^0::(\/.*)$/m.exec(procSelfCgroup);
  const group = line?.[1]?.trim();
  if (group === undefined || group === "/" || group.includes("\0") || group.split("/").includes("..")) return undefined;
  return `/sys/fs/cgroup${group}/cpu.pressure`;
}

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
  /** `now()` past which the loop stops turning; 0 when stopped. */
  #deadline = 0;
  #turning = false;
  #turns = 0;
  #stallClock: StallClock;
  readonly #now: () => number;
  /** When the current pressure window began (`now()`), and the stall total then, µs; 0 before the first read. */
  #windowAt = 0;
  #stallAt = 0;
  /** No spin begins before this `now()`. */
  #quietUntil = 0;
  /** The last quiet period, ms. */
  #quietMs = 0;
  /** Judged windows in a row over {@link BUSY_STALL_SHARE}. */
  #busyWindows = 0;
  #quietPeriods = 0;
  readonly #turn = (): void => {
    if (this.#deadline !== 0 && this.#now() < this.#deadline) {
      this.#turns++;
      // Ref'd on purpose: an unref'd immediate lets libuv block in its poll phase, which is the
      // sleep this is here to avoid.
      setImmediate(this.#turn);
      return;
    }
    this.#turning = false;
  };

  /**
   * @param cores - cores the spin may count on
   * @param machine - `stallClock`: the machine's CPU stall time (see the module comment; `() => undefined` judges by the
   *   count of runs alone); `now`: the time, ms (`performance.now`)
   */
  constructor(cores: number = availableParallelism(), machine: { readonly stallClock?: StallClock; readonly now?: () => number } = {}) {
    this.cores = cores;
    this.#stallClock = machine.stallClock ?? procPressureStallClock();
    this.#now = machine.now ?? performanceNow;
  }

  /** Quiet periods begun because the machine's CPUs were found busy (see the module comment). */
  get quietPeriods(): number {
    return this.#quietPeriods;
  }

  /** True during a quiet period: no spin begins. */
  get quiet(): boolean {
    return this.#now() < this.#quietUntil;
  }

  /** @internal Replaces the stall clock (tests that need a spin whatever the machine is doing). */
  setStallClock(stallClock: StallClock): void {
    this.#stallClock = stallClock;
    this.#windowAt = 0;
    this.#quietUntil = 0;
    this.#busyWindows = 0;
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
    const now = this.#now();
    if (!this.coreFree || this.#machineBusy(now)) {
      this.#deadline = 0;
      return false;
    }
    this.#deadline = now + budgetUs / 1000;
    if (!this.#turning) {
      this.#turning = true;
      this.#turns = 0;
      setImmediate(this.#turn);
    }
    return true;
  }

  /**
   * True during a quiet period, or when the window just closed had CPUs too busy (which starts
   * one). Reads the stall clock at most once per {@link PRESSURE_WINDOW_MS}.
   */
  #machineBusy(now: number): boolean {
    if (now < this.#quietUntil) return true;
    const sinceWindow = now - this.#windowAt;
    if (sinceWindow < PRESSURE_WINDOW_MS && this.#windowAt >= this.#quietUntil) return false;
    const stall = this.#stallClock();
    // Not judged: the first read, a window that spans an idle process, or one that began before
    // the last quiet period ended (the next window is of spins again).
    const judged = this.#windowAt !== 0 && this.#windowAt >= this.#quietUntil && sinceWindow <= MAX_PRESSURE_WINDOW_MS && stall !== undefined;
    const share = judged ? (stall - this.#stallAt) / (sinceWindow * 1000) : 0;
    this.#windowAt = stall === undefined ? 0 : now;
    this.#stallAt = stall ?? 0;
    // One busy window now and then is the machine's own noise (about 1 in 27 of them runs over the
    // share with the process driver alone here); a run of them is other work.
    this.#busyWindows = share > BUSY_STALL_SHARE ? this.#busyWindows + 1 : 0;
    if (this.#busyWindows < BUSY_WINDOWS) return false;
    this.#busyWindows = 0;
    // Found again in the first windows after the last quiet period: twice as long; later: from the start.
    const again = this.#quietUntil !== 0 && now - this.#quietUntil <= (BUSY_WINDOWS + 2) * PRESSURE_WINDOW_MS;
    this.#quietMs = again ? Math.min(2 * this.#quietMs, MAX_QUIET_MS) : MIN_QUIET_MS;
    this.#quietUntil = now + this.#quietMs;
    this.#quietPeriods++;
    return true;
  }

  /** Stops the spin: the answer it waited for is in, or the run ended. */
  end(): void {
    this.#deadline = 0;
  }
}

function performanceNow(): number {
  return performance.now();
}

/** The process's spin; see the module comment. */
export const spinWait = new SpinWait();

/**
 * The script's clock. `Date.now()` and `new Date()` read `clockStart + elapsed`, where `elapsed`
 * is the whole milliseconds of real time since the run started, never decreasing. So a replay
 * starts from the same instant as the original run (the trace records `clockStart`), while time
 * still moves forward inside one run (durations measured by a script stay meaningful).
 *
 * Elapsed time itself is not replayed: a script that branches on sub-run durations can diverge
 * on replay. `Intl.DateTimeFormat#format()` without an argument still reads V8's own clock.
 * @module
 */

/** The virtual clock of one context. */
export interface VirtualClock {
  /** Restarts the clock at `clockStart` (epoch ms), counting from now. */
  start(clockStart: number): void;
  /** The virtual time, epoch ms. */
  now(): number;
}

/** Replaces `Date` on `target` with a virtual-time version and returns its clock. */
export function installVirtualClock(target: typeof globalThis): VirtualClock {
  const RealDate = target.Date;
  const realNow = RealDate.now;
  const floor = Math.floor;
  let origin = realNow();
  let base = origin;
  let last = 0;
  const now = (): number => {
    const elapsed = floor(realNow() - origin);
    if (elapsed > last) last = elapsed;
    return base + last;
  };
  const VirtualDate = function Date(this: unknown, ...args: unknown[]): unknown {
    if (new.target === undefined) return new RealDate(now()).toString();
    return Reflect.construct(RealDate, args.length === 0 ? [now()] : args, new.target);
  } as unknown as DateConstructor;
  Object.defineProperty(VirtualDate, "prototype", { value: RealDate.prototype, writable: false });
  Object.defineProperty(VirtualDate, "length", { value: 7 });
  Object.defineProperty(VirtualDate, "now", { value: now, writable: true, configurable: true });
  Object.defineProperty(VirtualDate, "parse", { value: RealDate.parse, writable: true, configurable: true });
  Object.defineProperty(VirtualDate, "UTC", { value: RealDate.UTC, writable: true, configurable: true });
  Object.defineProperty(RealDate.prototype, "constructor", { value: VirtualDate, writable: true, configurable: true });
  Object.defineProperty(target, "Date", { value: VirtualDate, writable: true, configurable: true });
  return {
    start(clockStart: number): void {
      origin = realNow();
      base = clockStart;
      last = 0;
    },
    now,
  };
}

/**
 * The script's clock. `Date.now()` and `new Date()` read `clockStart + elapsed`, where `elapsed`
 * is the whole milliseconds of real time since the run started, never decreasing; time moves
 * forward inside one run, so durations a script measures stay meaningful.
 *
 * Every reading is recorded (as `elapsed`, run-length encoded: `[elapsed, count, ...]`), the host
 * logs the readings in the trace ahead of the calls that follow them, and a replay hands them
 * back: the replayed script reads the same times in the same order, so a timestamp it computes
 * and passes to a tool matches the recording even when the replay runs faster than the original.
 * Once the recorded readings are used up, the clock goes on in real time from the recorded run's
 * timeline, or, for a resume (`liveAt`), from the time of the resume, never going back.
 * Readings past {@link MAX_CLOCK_READINGS} distinct runs are not recorded (a replay of such a
 * run reads live time from there).
 *
 * `Intl.DateTimeFormat#format()` and `#formatToParts()` without a date read this clock too (V8's
 * own would leak real time into a run whose caller chose its clock, unrecorded).
 * @module
 */

import { MAX_CLOCK_READINGS } from "../src/bridge/protocol.ts";
import { withNullPrototype } from "./null-prototype.ts";

/** The virtual clock of one context. */
export interface VirtualClock {
  /**
   * Restarts the clock at `clockStart` (epoch ms), counting from now; `replay` (run-length
   * encoded elapsed readings, as {@link sendReadings} hands them over) is read back first, and
   * after them the clock reads on from `liveAt` (epoch ms, a resume's time) when it is later.
   */
  start(clockStart: number, replay?: readonly number[], liveAt?: number): void;
  /** The virtual time, epoch ms. */
  now(): number;
  /**
   * Hands the readings since the last call (`[elapsed, count, ...]`) to `send`, which must copy
   * them (the array is emptied and kept for the next readings); does nothing when there are none.
   * Returns whether there were any.
   */
  sendReadings(send: (readings: readonly number[]) => void): boolean;
}

/** Replaces `Date` on `target` with a virtual-time version and returns its clock. */
export function installVirtualClock(target: typeof globalThis): VirtualClock {
  const RealDate = target.Date;
  const realNow = RealDate.now;
  const floor = Math.floor;
  let origin = realNow();
  let base = origin;
  let last = 0;
  // Arrays made here, as the prelude loads, and kept: each array with a null prototype costs a
  // fresh context a new map, so none is made on a run's path.
  const noReplay: readonly number[] = withNullPrototype([]);
  let replay: readonly number[] = noReplay;
  /** Next run of `replay` to read, and how many readings of it are left. */
  let replayAt = 0;
  let replayLeft = 0;
  /** Added to the real time elapsed once the replay is read (see `start`'s `liveAt`), ms. */
  let liveJump = 0;
  /**
   * Readings not sent yet, run-length encoded; written by index (a script can replace `push`)
   * into an array with no prototype (see `null-prototype.ts`), as is `replay`, read past its end.
   */
  const readings: number[] = withNullPrototype([]);
  let recordedRuns = 0;
  const record = (elapsed: number): void => {
    const at = readings.length;
    if (at > 0 && readings[at - 2] === elapsed) {
      readings[at - 1] = (readings[at - 1] as number) + 1;
    } else if (recordedRuns < MAX_CLOCK_READINGS) {
      recordedRuns++;
      readings[at] = elapsed;
      readings[at + 1] = 1;
    }
  };
  const now = (): number => {
    let elapsed: number;
    if (replayLeft > 0) {
      elapsed = replay[replayAt] as number;
      if (--replayLeft === 0) {
        replayAt += 2;
        replayLeft = (replay[replayAt + 1] as number | undefined) ?? 0;
      }
      if (elapsed > last) last = elapsed;
    } else {
      elapsed = floor(realNow() - origin) + liveJump;
      if (elapsed > last) last = elapsed;
      elapsed = last;
    }
    record(elapsed);
    return base + elapsed;
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
  const DateTimeFormat = target.Intl?.DateTimeFormat as typeof Intl.DateTimeFormat | undefined;
  if (DateTimeFormat !== undefined) {
    const proto = DateTimeFormat.prototype;
    const format = Object.getOwnPropertyDescriptor(proto, "format")?.get;
    const formatToParts = proto.formatToParts;
    if (format !== undefined) {
      Object.defineProperty(proto, "format", {
        get(this: Intl.DateTimeFormat) {
          const bound = format.call(this) as (date?: Date | number) => string;
          return (date?: Date | number): string => bound(date === undefined ? now() : date);
        },
        configurable: true,
      });
    }
    Object.defineProperty(proto, "formatToParts", {
      value: function formatToPartsAt(this: Intl.DateTimeFormat, date?: Date | number) {
        return formatToParts.call(this, date === undefined ? now() : date);
      },
      writable: true,
      configurable: true,
    });
  }
  return {
    start(clockStart: number, replayed: readonly number[] = [], liveAt?: number): void {
      origin = realNow();
      base = clockStart;
      liveJump = typeof liveAt === "number" && liveAt > clockStart ? floor(liveAt - clockStart) : 0;
      last = 0;
      replay = replayed.length === 0 ? noReplay : withNullPrototype(replayed as number[]);
      replayAt = 0;
      replayLeft = (replayed[1] as number | undefined) ?? 0;
      readings.length = 0;
      recordedRuns = 0;
    },
    now,
    sendReadings(send: (readings: readonly number[]) => void): boolean {
      if (readings.length === 0) return false;
      try {
        send(readings);
      } finally {
        readings.length = 0;
      }
      return true;
    },
  };
}

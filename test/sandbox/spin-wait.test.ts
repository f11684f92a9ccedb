import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import { sandboxLimitsFromPolicy } from "../../sandbox/limits.ts";
import { ProcessSandboxDriver } from "../../sandbox/process-driver.ts";
import { isHostMessage, PROCESS_MESSAGE_KIND } from "../../sandbox/process-protocol.ts";
import type { SandboxDriver, SandboxRunRequest } from "../../sandbox/sandbox-driver.ts";
import {
  BUSY_STALL_SHARE,
  BUSY_WINDOWS,
  cgroupPressurePath,
  MAX_QUIET_MS,
  MAX_SPIN_WAIT_US,
  MIN_QUIET_MS,
  PRESSURE_WINDOW_MS,
  procPressureStallClock,
  SpinWait,
  spinWait,
  spinWaitProblem,
} from "../../sandbox/spin-wait.ts";
import { compileScript } from "../../src/compile/index.ts";
import { isChainRuntimeError, resolveChainPolicy, type InvocationResult } from "../../src/kernel/index.ts";

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function request(source: string, onToolCall: SandboxRunRequest["onToolCall"], overrides: Partial<SandboxRunRequest> = {}): SandboxRunRequest {
  const compiled = compileScript(source);
  if (!compiled.ok) throw new Error(compiled.error.message);
  return {
    chainId: "spin",
    script: compiled.code,
    scriptName: "chain.js",
    toolNames: ["echo"],
    maxToolCalls: 5,
    limits: sandboxLimitsFromPolicy(resolveChainPolicy({ totalTimeoutMs: 3_000, cpuTimeMs: 200 })),
    seed: 1,
    clockStart: 0,
    onToolCall,
    ...overrides,
  };
}

/** A machine that reports no CPU pressure: spins are judged by the count of runs alone. */
const NO_PRESSURE = { stallClock: (): undefined => undefined };

/** A machine whose CPU stall time and clock the test moves. */
function fakeMachine(): { stall: number; time: number; readonly stallClock: () => number; readonly now: () => number; pass(ms: number, stallShare: number): void } {
  const machine = {
    stall: 0,
    time: 1_000,
    stallClock: () => machine.stall,
    now: () => machine.time,
    pass(ms: number, stallShare: number) {
      machine.time += ms;
      machine.stall += ms * 1000 * stallShare;
    },
  };
  return machine;
}

const echo = (): Promise<InvocationResult> => Promise.resolve({ status: "ok", text: "{}", structured: { n: 1 } });

describe("SpinWait", () => {
  it("keeps the event loop turning until the budget is spent", async () => {
    const spin = new SpinWait(4, NO_PRESSURE);
    const started = performance.now();
    expect(spin.begin(50_000)).toBe(true);
    expect(spin.spinning).toBe(true);
    // Each turn is a setImmediate: the loop polls I/O without blocking, again and again.
    await expect.poll(() => spin.turns, { interval: 1, timeout: 1_000 }).toBeGreaterThan(5);
    expect(spin.spinning).toBe(true);
    await expect.poll(() => spin.spinning, { interval: 5, timeout: 2_000 }).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(50);
    const turns = spin.turns;
    await sleep(5);
    expect(spin.turns).toBe(turns); // stopped: the loop may sleep again
  });

  it("stops at end(), and does not spin with a budget of 0", async () => {
    const spin = new SpinWait(4, NO_PRESSURE);
    spin.begin(MAX_SPIN_WAIT_US);
    spin.end();
    expect(spin.spinning).toBe(false);
    await new Promise((resolve) => setImmediate(resolve));
    const turns = spin.turns;
    await sleep(5);
    expect(spin.turns).toBe(turns); // the loop stopped turning
    expect(spin.begin(0)).toBe(false);
    expect(spin.spinning).toBe(false);
  });

  it("spins only while the runs in flight leave a core free, and stops a spin when they take it", () => {
    const spin = new SpinWait(2, NO_PRESSURE);
    spin.runStarted();
    expect(spin.coreFree).toBe(true);
    expect(spin.begin(MAX_SPIN_WAIT_US)).toBe(true);
    spin.runStarted(); // a second isolate or child now needs the other core
    expect(spin.coreFree).toBe(false);
    expect(spin.begin(MAX_SPIN_WAIT_US)).toBe(false);
    expect(spin.spinning).toBe(false);
    spin.runEnded();
    spin.runEnded();
    spin.runEnded(); // never below zero
    expect(spin.runs).toBe(0);
    const oneCore = new SpinWait(1, NO_PRESSURE);
    oneCore.runStarted();
    expect(oneCore.begin(MAX_SPIN_WAIT_US)).toBe(false); // one core: the run's own
  });

  it("names what is wrong with a spinWaitUs option", () => {
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, MAX_SPIN_WAIT_US + 1, "500", null]) {
      expect(spinWaitProblem(bad)).toMatch(/spinWaitUs must be a number of µs from 0 \(never spin\) to 1000000; got /);
    }
    for (const good of [undefined, 0, 1, 1_000, MAX_SPIN_WAIT_US]) expect(spinWaitProblem(good)).toBeUndefined();
    expect(() => new InProcessSandboxDriver({ spinWaitUs: -5 })).toThrow(expect.objectContaining({ code: "ARGUMENT_INVALID" }));
    let thrown: unknown;
    try {
      new ProcessSandboxDriver({ spinWaitUs: Number.NaN });
    } catch (error) {
      thrown = error;
    }
    expect(isChainRuntimeError(thrown) && thrown.code).toBe("ARGUMENT_INVALID");
  });

  it("carries a child's budget in the run message, checked like the option", () => {
    const run = {
      kind: PROCESS_MESSAGE_KIND.run,
      chainId: "c",
      script: "x",
      scriptName: "chain.js",
      toolNames: [],
      maxToolCalls: 1,
      limits: { memoryLimitMb: 64, cpuTimeMs: 100, totalTimeoutMs: 100, maxOutputBytes: 10, maxArgumentBytes: 10 },
      seed: 1,
      clockStart: 0,
    };
    expect(isHostMessage(run)).toBe(true);
    expect(isHostMessage({ ...run, spinWaitUs: 1_000 })).toBe(true);
    expect(isHostMessage({ ...run, spinWaitUs: -1 })).toBe(false);
    expect(isHostMessage({ ...run, spinWaitUs: "1000" })).toBe(false);
    const results = { kind: PROCESS_MESSAGE_KIND.results, results: [0, "{}", null] };
    expect(isHostMessage(results)).toBe(true);
    expect(isHostMessage({ ...results, spinWaitUs: 0 })).toBe(true);
    expect(isHostMessage({ ...results, spinWaitUs: Number.POSITIVE_INFINITY })).toBe(false);
  });

  it("a budget of 0 leaves another run's spin alone; a run that takes the last core stops it", () => {
    const spin = new SpinWait(4, NO_PRESSURE);
    spin.runStarted();
    expect(spin.begin(MAX_SPIN_WAIT_US)).toBe(true);
    expect(spin.begin(0)).toBe(false); // a driver configured not to spin
    expect(spin.spinning).toBe(true);
    spin.runStarted();
    spin.runStarted();
    spin.runStarted(); // four runs: no core left for a spinning thread
    expect(spin.begin(MAX_SPIN_WAIT_US)).toBe(false);
    expect(spin.spinning).toBe(false);
  });
});

describe("SpinWait on a machine busy with other work", () => {
  /** Starts a spin and stops it at once (as an answer would): whether it began. */
  const tryBegin = (spin: SpinWait): boolean => {
    const began = spin.begin(MAX_SPIN_WAIT_US);
    spin.end();
    return began;
  };

  it("stops spinning for a quiet period when tasks waited for a CPU over its share of windows in a row", () => {
    const machine = fakeMachine();
    const spin = new SpinWait(4, machine);
    expect(BUSY_WINDOWS).toBe(2);
    expect(tryBegin(spin)).toBe(true); // the first read opens a window
    machine.pass(PRESSURE_WINDOW_MS, BUSY_STALL_SHARE - 0.1);
    expect(tryBegin(spin)).toBe(true); // a busy machine, but the spin's core is there
    machine.pass(PRESSURE_WINDOW_MS, 0.9);
    expect(tryBegin(spin)).toBe(true); // one busy window alone: the machine's noise
    machine.pass(PRESSURE_WINDOW_MS, 0.1);
    expect(tryBegin(spin)).toBe(true); // and the run of them starts over
    machine.pass(PRESSURE_WINDOW_MS, 0.9);
    expect(tryBegin(spin)).toBe(true);
    machine.pass(PRESSURE_WINDOW_MS / 2, 1);
    expect(tryBegin(spin)).toBe(true); // judged once a window is long enough, not before
    machine.pass(PRESSURE_WINDOW_MS / 2, 0.6);
    expect(tryBegin(spin)).toBe(false); // the second busy window in a row
    expect(spin.quiet).toBe(true);
    expect(spin.quietPeriods).toBe(1);
    machine.pass(MIN_QUIET_MS - 1, 0);
    expect(tryBegin(spin)).toBe(false); // still quiet, whatever the machine does meanwhile
    machine.pass(1, 0);
    expect(spin.quiet).toBe(false);
    expect(tryBegin(spin)).toBe(true); // a new window, of spins again
    machine.pass(PRESSURE_WINDOW_MS, 0.9);
    expect(tryBegin(spin)).toBe(true); // a fresh run of busy windows is needed
  });

  it("doubles the quiet period while the pressure comes back right after each, up to its cap, and starts over later", () => {
    const machine = fakeMachine();
    const spin = new SpinWait(4, machine);
    tryBegin(spin);
    const quietPeriods: number[] = [];
    for (let i = 0; i < 7; i++) {
      machine.pass(PRESSURE_WINDOW_MS, 0.9);
      expect(tryBegin(spin)).toBe(true);
      machine.pass(PRESSURE_WINDOW_MS, 0.9);
      expect(tryBegin(spin)).toBe(false);
      const started = machine.time;
      while (spin.quiet) machine.pass(10, 0.9);
      quietPeriods.push(machine.time - started);
      expect(tryBegin(spin)).toBe(true); // spins again, and judges the next window
    }
    expect(quietPeriods).toEqual([MIN_QUIET_MS, 2 * MIN_QUIET_MS, 4 * MIN_QUIET_MS, 8 * MIN_QUIET_MS, MAX_QUIET_MS, MAX_QUIET_MS, MAX_QUIET_MS]);
    // Calm for a while, then busy again: the first quiet period again.
    for (let i = 0; i < 5; i++) {
      machine.pass(PRESSURE_WINDOW_MS, 0);
      expect(tryBegin(spin)).toBe(true);
    }
    machine.pass(PRESSURE_WINDOW_MS, 0.9);
    expect(tryBegin(spin)).toBe(true);
    machine.pass(PRESSURE_WINDOW_MS, 0.9);
    const started = machine.time;
    expect(tryBegin(spin)).toBe(false);
    while (spin.quiet) machine.pass(10, 0.9);
    expect(machine.time - started).toBe(MIN_QUIET_MS);
  });

  it("does not judge a window that spans an idle process, nor a machine that reports no pressure", () => {
    const machine = fakeMachine();
    const spin = new SpinWait(4, machine);
    tryBegin(spin);
    machine.pass(60_000, 0.9); // a minute without chains on a busy machine: no window of the spins
    expect(tryBegin(spin)).toBe(true);
    machine.pass(PRESSURE_WINDOW_MS, 0.9);
    expect(tryBegin(spin)).toBe(true);
    machine.pass(PRESSURE_WINDOW_MS, 0.9);
    expect(tryBegin(spin)).toBe(false);
    const unreported = new SpinWait(4, { stallClock: () => undefined, now: machine.now });
    for (let i = 0; i < 5; i++) {
      machine.pass(PRESSURE_WINDOW_MS, 1);
      expect(tryBegin(unreported)).toBe(true);
    }
    expect(unreported.quietPeriods).toBe(0);
  });

  it("prefers the process's own cgroup v2 group for CPU pressure, and the machine's file under v1 or in the root group", () => {
    expect(cgroupPressurePath("0::/system.slice/app.service\n")).toBe("/sys/fs/cgroup/system.slice/app.service/cpu.pressure");
    expect(cgroupPressurePath("12:cpu,cpuacct:/\n0::/docker/abc\n")).toBe("/sys/fs/cgroup/docker/abc/cpu.pressure");
    expect(cgroupPressurePath("0::/\n")).toBeUndefined(); // the root group: /proc/pressure/cpu
    expect(cgroupPressurePath("9:cpu:/\n8:pids:/\n")).toBeUndefined(); // cgroup v1 only
    expect(cgroupPressurePath("0::/a/../../etc\n")).toBeUndefined();
    expect(cgroupPressurePath("")).toBeUndefined();
  });

  it("reads the stall total where Linux reports CPU pressure, and nothing elsewhere", () => {
    const read = procPressureStallClock();
    const first = read();
    if (first === undefined) return; // no PSI here: the spin judges by the count of runs alone
    expect(Number.isSafeInteger(first)).toBe(true);
    expect(read()).toBeGreaterThanOrEqual(first);
  });

  it.skipIf(spinWait.cores < 2)("keeps a driver's run from spinning during a quiet period", async () => {
    const machine = fakeMachine();
    spinWait.setStallClock(machine.stallClock);
    const driver = new InProcessSandboxDriver({ poolSize: 1, spinWaitUs: MAX_SPIN_WAIT_US });
    try {
      await driver.warm();
      expect(spinWait.begin(MAX_SPIN_WAIT_US)).toBe(true); // opens a window
      spinWait.end();
      for (let window = 0; window < BUSY_WINDOWS; window++) {
        await sleep(PRESSURE_WINDOW_MS + 5);
        machine.stall += (PRESSURE_WINDOW_MS + 5) * 1000; // every µs of it, some task waited for a CPU
        if (window < BUSY_WINDOWS - 1) {
          expect(spinWait.begin(MAX_SPIN_WAIT_US)).toBe(true);
          spinWait.end();
        }
      }
      const running = driver.run(request("return (await tools.echo({})).status;", echo));
      expect(spinWait.quiet).toBe(true);
      expect(spinWait.spinning).toBe(false); // posted, and the host's loop left to sleep
      expect((await running).status).toBe("ok");
    } finally {
      spinWait.setStallClock(NO_PRESSURE.stallClock);
      await driver.close();
    }
  });
});

describe.skipIf(spinWait.cores < 2)("the in-process driver's spin", () => {
  let driver: InProcessSandboxDriver;
  beforeAll(async () => {
    // Whatever else the machine runs meanwhile (other test files): spins judged by the count of runs.
    spinWait.setStallClock(NO_PRESSURE.stallClock);
    driver = new InProcessSandboxDriver({ poolSize: 1, spinWaitUs: MAX_SPIN_WAIT_US });
    await driver.warm();
  });
  afterAll(async () => {
    await driver.close();
  });

  it("spins from the start to the call frame, and from the result to the done frame", async () => {
    const seenAtCall: boolean[] = [];
    const onToolCall = (): Promise<InvocationResult> => {
      seenAtCall.push(spinWait.spinning);
      return echo();
    };
    await driver.warm();
    const running = driver.run(request("return (await tools.echo({})).status;", onToolCall));
    // Posted and spinning before run() even returned: the pool had the context ready.
    expect(spinWait.spinning).toBe(true);
    expect(spinWait.runs).toBe(1);
    const outcome = await running;
    expect(outcome.status).toBe("ok");
    expect(seenAtCall).toEqual([false]); // the call frame ended the spin: the host has work
    expect(spinWait.spinning).toBe(false);
    expect(spinWait.runs).toBe(0);
  });

  it("does not spin with spinWaitUs 0", async () => {
    const still = new InProcessSandboxDriver({ poolSize: 1, spinWaitUs: 0 });
    await still.warm();
    const running = still.run(request("return 1;", echo));
    expect(spinWait.runs).toBe(1);
    expect(spinWait.spinning).toBe(false);
    expect((await running).status).toBe("ok");
    await still.close();
  });

  it("does not spin beside another run on a 2-core machine", async () => {
    const other = new InProcessSandboxDriver({ poolSize: 1, spinWaitUs: MAX_SPIN_WAIT_US });
    await other.warm();
    let release: (() => void) | undefined;
    const first = driver.run(request("return (await tools.echo({})).status;", () => new Promise((resolve) => (release = () => void resolve({ status: "ok", text: "{}" })))));
    await expect.poll(() => release).toBeDefined();
    const second = other.run(request("return 2;", echo));
    expect(spinWait.runs).toBe(2);
    expect(spinWait.spinning).toBe(spinWait.cores > 2);
    release?.();
    expect((await Promise.all([first, second])).map((outcome) => outcome.status)).toEqual(["ok", "ok"]);
    expect(spinWait.runs).toBe(0);
    await other.close();
  });

  it("counts every run out again, whatever ended it", async () => {
    const controller = new AbortController();
    const outcomes = [
      await driver.run(request("throw new Error('boom');", echo)),
      await driver.run(request("for (;;) {}", echo, { limits: { ...request("", echo).limits, cpuTimeMs: 30 } })),
      await driver.run(request("return 'x'.repeat(1e9);", echo)),
      await driver.run(
        request("await tools.echo({}); return 1;", () => {
          controller.abort();
          return new Promise(() => undefined);
        }, { signal: controller.signal }),
      ),
      await driver.run(request("await new Promise(() => {});", echo)),
    ];
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["error", "timeout", "error", "cancelled", "error"]);
    expect(spinWait.runs).toBe(0);
    expect(spinWait.spinning).toBe(false);
  });
});

describe("the process driver's count of runs in flight", () => {
  let driver: SandboxDriver;
  beforeAll(async () => {
    driver = new ProcessSandboxDriver({ processes: 1, memoryLimitMb: 64 });
    await driver.warm?.();
  });
  afterAll(async () => {
    await driver.close();
  });

  it("counts a chain while its child works on it, and again after a kill", async () => {
    let runsAtCall = -1;
    const outcome = await driver.run(
      request("return (await tools.echo({})).status;", () => {
        runsAtCall = spinWait.runs;
        return echo();
      }),
    );
    expect(outcome.status).toBe("ok");
    expect(runsAtCall).toBe(1);
    expect(spinWait.runs).toBe(0);
    const limits = { ...request("", echo).limits, cpuTimeMs: 50, totalTimeoutMs: 200 };
    const killed = await driver.run(request("for (;;) {}", echo, { limits }));
    expect(["error", "timeout"]).toContain(killed.status);
    expect(spinWait.runs).toBe(0);
  });
});

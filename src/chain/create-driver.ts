import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import { ProcessSandboxDriver } from "../../sandbox/process-driver.ts";
import type { SandboxDriver } from "../../sandbox/sandbox-driver.ts";
import { ChainRuntimeError } from "../kernel/index.ts";

/**
 * Which sandbox runs chains: a built-in kind, or a driver instance you manage yourself.
 * `"process"` (the default of `ToolChainTool`) runs each chain in a supervised child process,
 * so a crash inside V8 takes down a disposable child, never the host; `"in-process"` keeps the
 * isolates in this process for the lowest latency.
 */
export type DriverChoice = "process" | "in-process" | SandboxDriver;

/**
 * The sandbox pool of a `ToolChainTool` in one option (`pool`): a size, `{ size?, driver? }`, or
 * a driver instance. The same as `poolSize` and `driver`, which it stands for.
 */
export type PoolChoice = number | { readonly size?: number; readonly driver?: DriverChoice } | SandboxDriver;

/**
 * `driver` and `poolSize` from a `pool` option, checked: a number is the size, an object with a
 * `run` method a driver, any other object `{ size?, driver? }`. `undefined` fields were not given.
 * Throws `ChainRuntimeError` `ARGUMENT_INVALID` for a value none of those.
 */
export function readPoolChoice(owner: string, pool: unknown): { readonly driver?: DriverChoice; readonly poolSize?: number } {
  if (typeof pool === "number") return { poolSize: pool };
  if (typeof pool === "object" && pool !== null && !Array.isArray(pool)) {
    if (typeof (pool as Partial<SandboxDriver>).run === "function") return { driver: pool as SandboxDriver };
    const { size, driver, ...rest } = pool as { size?: unknown; driver?: unknown };
    const unknown = Object.keys(rest)[0];
    if (unknown === undefined) {
      return { ...(size === undefined ? {} : { poolSize: size as number }), ...(driver === undefined ? {} : { driver: driver as DriverChoice }) };
    }
    throw new ChainRuntimeError("ARGUMENT_INVALID", `${owner} options.pool has no field ${JSON.stringify(unknown)} (fields: size, driver).`, {
      details: { argument: "pool", field: unknown },
    });
  }
  throw new ChainRuntimeError(
    "ARGUMENT_INVALID",
    `${owner} options.pool must be a size (a number), { size?, driver? } or a SandboxDriver; got ${pool === null ? "null" : Array.isArray(pool) ? "an array" : typeof pool}.`,
    { details: { argument: "pool" } },
  );
}

/** Pool settings for the built-in drivers. */
export interface DriverSettings {
  /** Warm isolates (`"in-process"`) or warm child processes (`"process"`). */
  readonly poolSize: number;
  readonly memoryLimitMb: number;
}

/**
 * Builds the driver for a choice; an instance is returned as it is. Throws `ChainRuntimeError`
 * `SANDBOX_FAILED` for an unknown kind.
 */
export function createSandboxDriver(choice: DriverChoice, settings: DriverSettings): SandboxDriver {
  if (typeof choice !== "string") return choice;
  if (choice === "process") return new ProcessSandboxDriver({ processes: settings.poolSize, memoryLimitMb: settings.memoryLimitMb });
  if (choice === "in-process") return new InProcessSandboxDriver({ poolSize: settings.poolSize, memoryLimitMb: settings.memoryLimitMb });
  throw new ChainRuntimeError("SANDBOX_FAILED", `Unknown sandbox driver ${JSON.stringify(choice)}: use "process", "in-process" or a SandboxDriver.`);
}

/**
 * True for isochain's own drivers, which a chain can count on for two things a driver from
 * elsewhere is not known to do:
 * - each bounds a run by `totalTimeoutMs` in its queue and again once it runs (a watchdog, a kill
 *   timer), so a chain need not stand a backstop of its own while one runs;
 * - each delivers nothing for a result marked `neverAnswered`; another may copy results (a remote
 *   sandbox, a wrapper), losing the mark, so such a call is held until the run ends instead.
 */
export function isOwnDriver(driver: SandboxDriver): boolean {
  return driver instanceof InProcessSandboxDriver || driver instanceof ProcessSandboxDriver;
}

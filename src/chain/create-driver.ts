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

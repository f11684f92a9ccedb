import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import type { SandboxDriver } from "../../sandbox/sandbox-driver.ts";

/** Which sandbox runs chains: a built-in kind, or a driver instance you manage yourself. */
export type DriverChoice = "in-process" | SandboxDriver;

/** Pool settings for the built-in drivers. */
export interface DriverSettings {
  readonly poolSize: number;
  readonly memoryLimitMb: number;
}

/** Builds the driver for a choice; an instance is returned as it is. */
export function createSandboxDriver(choice: DriverChoice, settings: DriverSettings): SandboxDriver {
  if (typeof choice !== "string") return choice;
  return new InProcessSandboxDriver({ poolSize: settings.poolSize, memoryLimitMb: settings.memoryLimitMb });
}

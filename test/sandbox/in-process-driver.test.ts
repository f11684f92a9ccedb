import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import { runSandboxDriverContract } from "../contracts/sandbox-driver.contract.ts";

runSandboxDriverContract("InProcessSandboxDriver", { create: () => new InProcessSandboxDriver({ poolSize: 2, memoryLimitMb: 64 }) });

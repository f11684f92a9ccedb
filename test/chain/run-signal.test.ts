/**
 * What signal a ToolChainTool hands its sandbox: on the driver it made, a run that nothing inside
 * can stop gets only the caller's signal (or none), so a plain chain costs no controller and no
 * listener; on a driver it was given (which its close() cannot close), every run gets one of its
 * own, which close() fires.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import {
  defineTool,
  MemoryTraceStore,
  type SandboxDriver,
  type SandboxRunOutcome,
  type SandboxRunRequest,
  ToolChainTool,
  Toolbox,
} from "../../src/index.ts";

/** A driver that records each request and answers `1` without running anything. */
class RecordingDriver implements SandboxDriver {
  readonly kind = "recording";
  readonly requests: SandboxRunRequest[] = [];

  run(request: SandboxRunRequest): Promise<SandboxRunOutcome> {
    this.requests.push(request);
    return Promise.resolve({ status: "ok", returnJson: "1", wallMs: 0, cpuMs: 0, heapBytes: 0 });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

const toolbox = new Toolbox([defineTool({ name: "echo", description: "Echo.", inputSchema: { type: "object" }, execute: (args) => args })]);

describe("ToolChainTool run signal", () => {
  afterEach(() => vi.restoreAllMocks());

  it("on the driver it made, gives a plain run no signal, and a cancellable one exactly the caller's", async () => {
    const run = vi.spyOn(InProcessSandboxDriver.prototype, "run");
    const chain = new ToolChainTool({ toolbox, driver: "in-process", poolSize: 1 });
    try {
      expect((await chain.run("return 1;")).status).toBe("ok");
      const controller = new AbortController();
      expect((await chain.run("return 1;", { signal: controller.signal })).status).toBe("ok");
      expect(run.mock.calls[0]?.[0].signal).toBeUndefined();
      expect(run.mock.calls[1]?.[0].signal).toBe(controller.signal);
    } finally {
      await chain.close();
    }
  });

  it("on a driver it was given, gives every run a signal of its own, which close() fires", async () => {
    const driver = new RecordingDriver();
    const chain = new ToolChainTool({ toolbox, driver });
    expect((await chain.run("return 1;")).status).toBe("ok");
    const controller = new AbortController();
    expect((await chain.run("return 1;", { signal: controller.signal })).status).toBe("ok");
    const own = driver.requests[0]?.signal;
    expect(own).toBeInstanceOf(AbortSignal);
    expect(driver.requests[1]?.signal).not.toBe(controller.signal);
    controller.abort();
    expect(driver.requests[1]?.signal?.aborted).toBe(true);
    expect(own?.aborted).toBe(false);
  });

  it("gives a run in suspend mode a signal of its own (a suspension stops it), joined with the caller's", async () => {
    const driver = new RecordingDriver();
    const chain = new ToolChainTool({ toolbox, driver, traceStore: new MemoryTraceStore(), approvalMode: "suspend" });
    await chain.run("return 1;");
    const controller = new AbortController();
    await chain.run("return 1;", { signal: controller.signal });
    const own = driver.requests[0]?.signal;
    const joined = driver.requests[1]?.signal;
    expect(own).toBeInstanceOf(AbortSignal);
    expect(joined).toBeInstanceOf(AbortSignal);
    expect(joined).not.toBe(controller.signal);
    controller.abort();
    expect(joined?.aborted).toBe(true);
    expect(own?.aborted).toBe(false);
  });
});

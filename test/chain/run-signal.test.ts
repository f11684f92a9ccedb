/**
 * What signal a ToolChainTool hands its sandbox: a run that nothing inside can stop gets only
 * the caller's signal (or none), so a plain chain costs no controller and no listener.
 */
import { describe, expect, it } from "vitest";
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
  it("gives a plain run no signal, and a cancellable one exactly the caller's", async () => {
    const driver = new RecordingDriver();
    const chain = new ToolChainTool({ toolbox, driver });
    expect((await chain.run("return 1;")).status).toBe("ok");
    const controller = new AbortController();
    expect((await chain.run("return 1;", { signal: controller.signal })).status).toBe("ok");
    expect(driver.requests[0]?.signal).toBeUndefined();
    expect(driver.requests[1]?.signal).toBe(controller.signal);
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

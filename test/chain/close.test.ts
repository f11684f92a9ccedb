/**
 * `close()` ends the runs in flight and resolves once they have settled: their results built,
 * traces ended and hooks fired, so the usual shutdown (`await chain.close(); await
 * traceStore.close()`) loses no trace's end. Called from inside a run it does not wait for that
 * run; on a driver the tool was given, it ends the runs through their signals and leaves the
 * driver open.
 */
import { describe, expect, it } from "vitest";
import { InProcessSandboxDriver } from "../../sandbox/in-process-driver.ts";
import { defineTool, isChainRuntimeError, MemoryTraceStore, ToolChainTool, type TracedChainRunResult } from "../../src/index.ts";

function gate(): { tool: ReturnType<typeof defineTool>; entered: () => number } {
  let entered = 0;
  const tool = defineTool({
    name: "wait",
    description: "Waits until its signal fires.",
    inputSchema: { type: "object", properties: {} } as const,
    execute: (_args, ctx) => {
      entered++;
      return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve("stopped"), { once: true }));
    },
  });
  return { tool, entered: () => entered };
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(check()).toBe(true);
}

describe.each(["in-process", "process"] as const)("close() (%s driver)", (driver) => {
  it("resolves after the runs in flight settled, each trace ended", async () => {
    const store = new MemoryTraceStore();
    const { tool, entered } = gate();
    const chain = new ToolChainTool({ tools: [tool], traceStore: store, driver, poolSize: 1 });
    const settled: (TracedChainRunResult | undefined)[] = [undefined, undefined, undefined];
    const runs = settled.map((_, index) => chain.run("await tools.wait({});\nreturn 1;", { chainId: `run-${index}` }).then((run) => (settled[index] = run)));
    await until(() => entered() === 3);
    await chain.close();
    expect(settled.every((run) => run !== undefined && run.status === "error")).toBe(true);
    await store.close();
    for (let index = 0; index < 3; index++) expect((await store.load(`run-${index}`)).outcome?.status).toBe("error");
    await Promise.all(runs);
  }, 30_000);

  it("does not wait for the run it is called from (a tool, a TOOL_END hook): no deadlock", async () => {
    const chains: ToolChainTool[] = [];
    const closer = defineTool({
      name: "closer",
      description: "Closes its own chain tool.",
      inputSchema: { type: "object", properties: {} } as const,
      execute: async () => {
        await chains[0]?.close();
        return "closed";
      },
    });
    chains.push(new ToolChainTool({ tools: [closer], driver, poolSize: 1 }));
    const started = performance.now();
    // The run's sandbox is stopped under it (its status says so); the point is that it ends.
    const fromTool = await (chains[0] as ToolChainTool).run("await tools.closer({});\nreturn 1;");
    expect(fromTool.callTrace.map((record) => record.tool)).toEqual(["closer"]);

    const { tool } = gate();
    const echo = defineTool({ name: "echo", description: "Echoes.", inputSchema: { type: "object", properties: {} } as const, execute: () => "echo" });
    let inHook: Promise<void> | undefined;
    const hooked: ToolChainTool = new ToolChainTool({
      tools: [echo, tool],
      driver,
      poolSize: 1,
      hooks: {
        TOOL_END: async () => {
          inHook ??= hooked.close();
          await inHook;
        },
      },
    });
    const fromHook = await hooked.run("await tools.echo({});\nreturn 2;");
    await hooked.close();
    // Well inside the 5 s a stuck run would be given.
    expect(performance.now() - started).toBeLessThan(4_000);
    expect(fromHook.callTrace.map((record) => record.tool)).toEqual(["echo"]);
  }, 30_000);

  it("makes warm() throw CHAIN_CLOSED, as run() does", async () => {
    const chain = new ToolChainTool({ tools: [], driver, poolSize: 1 });
    await chain.close();
    await expect(chain.warm()).rejects.toSatisfy((error: unknown) => isChainRuntimeError(error) && error.code === "CHAIN_CLOSED");
  });
});

describe("close() on a driver the tool was given", () => {
  it("ends the tool's runs through their signals and leaves the driver open for others", async () => {
    const driver = new InProcessSandboxDriver({ poolSize: 1 });
    const { tool, entered } = gate();
    const chain = new ToolChainTool({ tools: [tool], driver });
    const other = new ToolChainTool({ tools: [], driver });
    try {
      const looping = chain.run("while (true) {}");
      const waiting = chain.run("await tools.wait({});\nreturn 1;");
      await until(() => entered() === 1);
      await chain.close();
      expect((await looping).status).toBe("cancelled");
      const waited = await waiting;
      expect(waited.status).toBe("cancelled");
      expect(waited.error).toMatchObject({ name: "CancelledError", message: expect.stringContaining("its ToolChainTool was closed before it finished") });
      expect((await other.run("return 3;")).returnValue).toBe(3);
    } finally {
      await other.close();
      await driver.close();
    }
  }, 30_000);
});

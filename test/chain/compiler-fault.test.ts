import { afterAll, describe, expect, it, vi } from "vitest";
import type * as CompileModule from "../../src/compile/compile-script.ts";
import { ChainRuntimeError } from "../../src/kernel/index.ts";

// esbuild that cannot run (its process refused: out of descriptors, say) rejects the compile of
// a script that needs it. The test forges that for scripts holding a marker, and holds the
// rejection until it is told, so a run can be abandoned while it waits.
const fault = vi.hoisted(() => ({ release: Promise.resolve() }));
vi.mock("../../src/compile/compile-script.ts", async (importOriginal) => {
  const real = await importOriginal<typeof CompileModule>();
  return {
    ...real,
    compileScriptAsync: (source: string, options?: CompileModule.CompileOptions) => {
      if (!source.includes("/* esbuild down */")) return real.compileScriptAsync(source, options);
      return fault.release.then(() => {
        throw new ChainRuntimeError("COMPILE_FAILED", "esbuild could not compile the script: esbuild's process did not start: spawn esbuild EMFILE");
      });
    },
  };
});

const { MemoryTraceStore, ToolChainTool, Toolbox, defineTool } = await import("../../src/index.ts");

describe("a compile esbuild cannot run", () => {
  const echo = defineTool({ name: "echo", description: "echo", inputSchema: { type: "object" } as const, execute: (args: Record<string, unknown>) => args });
  const traceStore = new MemoryTraceStore();
  const chain = new ToolChainTool({ toolbox: new Toolbox([echo]), traceStore, driver: "in-process", policy: { totalTimeoutMs: 200 } });
  afterAll(() => chain.close());

  it("throws COMPILE_FAILED, as compileScript does, once the trace has its end", async () => {
    const error = await chain.run("/* esbuild down */\nreturn 1", { chainId: "compiler-down" }).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: "COMPILE_FAILED", message: expect.stringMatching(/EMFILE/) as string });
    const trace = await traceStore.load("compiler-down");
    expect(trace.outcome).toMatchObject({ status: "error", error: { phase: "compile", message: expect.stringMatching(/^The script compiler could not run: .*EMFILE/) as string } });
  });

  it("ends the trace of a run abandoned while it waited for the compiler, as its caller was answered", async () => {
    const { promise, resolve } = Promise.withResolvers<void>();
    fault.release = promise;
    const run = await chain.run("/* esbuild down */\nreturn 2", { chainId: "abandoned-compile" });
    expect(run.status).toBe("timeout");
    expect(run.error?.message).toMatch(/the compiler \(esbuild\) did not settle/);
    resolve(); // the compile fails after the run was answered
    await vi.waitFor(async () => expect((await traceStore.load("abandoned-compile")).outcome?.status).toBe("timeout"));
  }, 15_000);
});

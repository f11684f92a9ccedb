import { afterAll, describe, expect, it, vi } from "vitest";
import type * as CompileModule from "../../src/compile/compile-script.ts";

// The chain starts a new script before V8 has checked it. When V8 then refuses the type
// stripper's output and esbuild's code compiles, nothing of the first attempt ran, and the chain
// runs esbuild's code. The stripper's output is wrong only where the stripper has a bug, so the
// test forges one: the deferred compile hands out code V8 refuses.
const forged = vi.hoisted(() => ({ on: false }));
vi.mock("../../src/compile/compile-script.ts", async (importOriginal) => {
  const real = await importOriginal<typeof CompileModule>();
  return {
    ...real,
    compileScriptAsync: (source: string, options?: CompileModule.CompileOptions) => {
      const compiling = real.compileScriptAsync(source, options);
      if (!forged.on || compiling instanceof Promise || !real.isDeferredCompile(compiling)) return compiling;
      const good = compiling.confirm();
      return { result: { ...compiling.result, code: "(async function __chain__() {\nreturn );\n})" }, confirm: () => good };
    },
  };
});

const { ToolChainTool, Toolbox, defineTool } = await import("../../src/index.ts");

describe.each(["in-process", "process"] as const)("a deferred compile V8 refuses (%s driver)", (driver) => {
  let calls = 0;
  const echo = defineTool({
    name: "echo",
    description: "echo",
    inputSchema: { type: "object" } as const,
    execute: (args: Record<string, unknown>) => {
      calls++;
      return args;
    },
  });
  const chain = new ToolChainTool({ toolbox: new Toolbox([echo]), driver });
  afterAll(() => chain.close());

  it("runs the checked code instead, once, with nothing of the first attempt left", async () => {
    forged.on = true;
    try {
      const run = await chain.run(`const r = await tools.echo({ n: ${Math.random()} });\nconsole.log("once");\nreturn r.status;`);
      expect(run.status).toBe("ok");
      expect(run.returnValue).toBe("ok");
      expect(run.outputText).toBe("once\n");
      expect(run.callTrace).toHaveLength(1);
      expect(calls).toBe(1);
    } finally {
      forged.on = false;
    }
  });
});

/**
 * esbuild's time grows with the square of the errors and warnings it reports, and a script can
 * make it report thousands in a few KB: a chain's compile is bounded (ESBUILD_TIME_LIMIT_MS) and
 * esbuild's warnings are off, so no script holds the compiler, or the host's memory, for long.
 */
import { afterAll, describe, expect, it } from "vitest";
import { defineTool, ESBUILD_TIME_LIMIT_MS, Toolbox, ToolChainTool } from "../../src/index.ts";

const echo = defineTool({ name: "echo", description: "Echoes.", inputSchema: { type: "object" } as const, execute: async (args) => args });
const chain = new ToolChainTool({ toolbox: new Toolbox([echo]), driver: "in-process" });
afterAll(() => chain.close());

describe("a chain's compile on esbuild", () => {
  it("stops a script whose errors would keep esbuild busy for minutes, with a compile error that says so; other chains compile meanwhile", async () => {
    const started = performance.now();
    const hostile = chain.run(`enum E { A }\n${"let v = 1;\n".repeat(60_000)}return 1`);
    let hostileEnded = false;
    void hostile.then(() => (hostileEnded = true));
    const typed = await chain.run("enum Color { Red = 1 }\nconst got = await tools.echo({ c: Color.Red });\nreturn got.structured");
    expect(typed).toMatchObject({ status: "ok", returnValue: { c: 1 } });
    expect(hostileEnded).toBe(false); // compiled while esbuild was busy with the other
    const run = await hostile;
    expect(run.status).toBe("error");
    expect(run.error).toEqual({
      phase: "compile",
      name: "CompileError",
      message:
        `The compiler (esbuild) was stopped after ${ESBUILD_TIME_LIMIT_MS / 1000} s on this script: its time grows with the square of ` +
        "the errors it finds (here thousands: redeclarations, duplicate labels or parameters, ...). Fix the repeated mistake.",
    });
    expect(performance.now() - started).toBeLessThan(ESBUILD_TIME_LIMIT_MS + 10_000);
  }, 60_000);

  it("compiles a valid script esbuild would warn about thousands of times (one long line of duplicate keys)", async () => {
    const run = await chain.run(`enum E { A }\nconst a = {${"x: 1,".repeat(8_000)}};\nreturn a.x + E.A`);
    expect(run).toMatchObject({ status: "ok", returnValue: 1 });
  }, 60_000);
});

/**
 * esbuild's time grows with the square of the errors and warnings it reports, and a script can
 * make it report thousands in a few KB: a chain's compile is bounded (ESBUILD_TIME_LIMIT_MS) and
 * esbuild's warnings are off, so no script holds the compiler, or the host's memory, for long.
 */
import { afterAll, describe, expect, it, onTestFinished } from "vitest";
import { setEsbuildAnswerBound, stopEsbuildService } from "../../src/kernel/esbuild-service.ts";
import { defineTool, ESBUILD_TIME_LIMIT_MS, MAX_ESBUILD_ANSWER_BYTES, Toolbox, ToolChainTool } from "../../src/index.ts";

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

  it("stops a script whose errors each carry a copy of one long line before the host reads them, with a compile error that says so", async () => {
    // 160 redeclarations on one 50 KB line: esbuild's report would be ~8 MB, over a bound lowered
    // to 2 MiB for this test. At the real bound (24 MiB) such a report takes esbuild 1.3-3 s to
    // write on a 2-core VM, so which bound stops it first would depend on the machine's speed;
    // unbounded, a ~75 MB one took the host ~500 MiB of buffers and strings at its peak.
    const previous = setEsbuildAnswerBound(2 * 2 ** 20);
    stopEsbuildService(); // the bound is read by the watch of a new process
    onTestFinished(() => {
      setEsbuildAnswerBound(previous);
      stopEsbuildService();
    });
    const pad = `/*${"p".repeat(300)}*/`;
    const script = `enum E { A }\n${`let v = 1;${pad}`.repeat(160)}\nreturn 1`;
    const before = process.memoryUsage().arrayBuffers;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 1);
    const run = await chain.run(script);
    clearInterval(sampler);
    expect(run.error).toEqual({
      phase: "compile",
      name: "CompileError",
      message:
        `The compiler (esbuild) was stopped on this script: its report was over ${MAX_ESBUILD_ANSWER_BYTES / 2 ** 20} MiB. Each error it finds carries a copy of its whole ` +
        "line, so many errors on a long line make it that large (redeclarations, duplicate labels or parameters, ...); so would compiled " +
        "code that large. Fix the repeated mistake and break the long line, or send a smaller script.",
    });
    expect(peak - before).toBeLessThan(16 * 2 ** 20);
    // Not cached: it says what else esbuild was doing as much as what the script is (the same answer again here).
    expect((await chain.run(script)).error?.message).toBe(run.error?.message);
  }, 60_000);

  it("compiles a valid script esbuild would warn about thousands of times (one long line of duplicate keys)", async () => {
    const run = await chain.run(`enum E { A }\nconst a = {${"x: 1,".repeat(8_000)}};\nreturn a.x + E.A`);
    expect(run).toMatchObject({ status: "ok", returnValue: 1 });
  }, 60_000);
});

/**
 * A promise the script rejects with nothing handling it (an async function called without
 * `await` that throws, a `.then` callback that throws): the run goes on and ends `ok`, and the
 * result says what was lost, where, and how to fix it. isolated-vm reports such a rejection when
 * the task on the isolate that made it ends: the start (the script's first part) or a delivery
 * of results (the part after an `await`), whichever driver runs the script.
 */
import { afterAll, describe, expect, it } from "vitest";
import { defineTool, summarizeRun, ToolChainTool, type ChainRunResult, type UnhandledRejectionWarning } from "../../src/index.ts";

function rejections(run: ChainRunResult): UnhandledRejectionWarning[] {
  return (run.warnings ?? []).filter((warning): warning is UnhandledRejectionWarning => warning.code === "UNHANDLED_REJECTION");
}

describe.each(["in-process", "process"] as const)("unhandled rejections (%s driver)", (driver) => {
  const ping = defineTool({
    name: "ping",
    description: "Answers at once.",
    inputSchema: { type: "object", properties: {} } as const,
    execute: () => ({ pong: true }),
  });
  const chain = new ToolChainTool({ tools: [ping], driver, poolSize: 1 });
  afterAll(() => chain.close());

  it("warns, with the error and its line and column, when an async function that was not awaited throws", async () => {
    const run = await chain.run("const save = async () => {\n  throw new Error('disk full');\n};\nsave();\nreturn 'saved';");
    expect(run.status).toBe("ok");
    expect(run.returnValue).toBe("saved");
    expect(rejections(run)).toEqual([
      {
        code: "UNHANDLED_REJECTION",
        message: expect.stringContaining("A promise was rejected at line 2, column 9 and nothing handled it: Error: disk full.") as string,
        line: 2,
        column: 9,
      },
    ]);
    expect(run.warnings?.[0]?.message).toContain("Await every promise the script starts");
    expect(summarizeRun(run)).toContain("warning (UNHANDLED_REJECTION): A promise was rejected at line 2, column 9");
  });

  // The in-process driver reports only the start's (its deliveries are not awaited: see isolate-runner.ts).
  it.runIf(driver === "process")("warns for a rejection made after an await (in a delivery of results), the later ones too", async () => {
    const run = await chain.run(
      "for (let i = 0; i < 4; i++) {\n  await tools.ping({});\n  if (i === 0 || i === 3) tools.ping({}).then((r) => r.missing.field);\n}\nawait tools.ping({});\nreturn 1;",
    );
    expect(run.status).toBe("ok");
    expect(rejections(run).map((warning) => [warning.line, warning.message.includes("TypeError: Cannot read properties of undefined")])).toEqual([
      [3, true],
      [3, true],
    ]);
  });

  it("describes a rejection with a value that is not an Error", async () => {
    // One a hand-off: isolated-vm reports the first rejection left in each.
    const messages: string[] = [];
    for (const script of ["Promise.reject('nope');\nreturn 1;", "(async () => {\n  throw { code: 7 };\n})();\nreturn 1;"]) {
      const run = await chain.run(script);
      expect(run.status).toBe("ok");
      messages.push(...rejections(run).map((warning) => warning.message.split(". The error")[0] ?? ""));
    }
    expect(messages).toEqual([
      'A promise was rejected and nothing handled it: a value that is not an Error: "nope"',
      "A promise was rejected and nothing handled it: an object that is not an Error (its fields cannot be shown: reject with an Error)",
    ]);
  });

  it.runIf(driver === "process")("keeps the first five", async () => {
    const run = await chain.run("for (let i = 0; i < 8; i++) {\n  await tools.ping({});\n  Promise.reject(new RangeError('r' + i));\n}\nreturn 1;");
    expect(run.status).toBe("ok");
    expect(rejections(run).map((warning) => /RangeError: (r\d)/.exec(warning.message)?.[1])).toEqual(["r0", "r1", "r2", "r3", "r4"]);
  });

  it("says nothing of a rejection the script handled, nor on a run that failed", async () => {
    const handled = await chain.run(
      "const p = Promise.reject(new Error('x'));\np.catch(() => {});\ntry {\n  await (async () => { throw new Error('y'); })();\n} catch {}\nawait tools.ping({}).then(() => { throw new Error('z'); }).catch(() => 0);\nreturn 1;",
    );
    expect(handled.status).toBe("ok");
    expect(handled.warnings).toBeUndefined();
    const failed = await chain.run("Promise.reject(new Error('a'));\nawait tools.ping({});\nthrow new Error('b');");
    expect(failed.status).toBe("error");
    expect(failed.error?.message).toBe("b");
    expect(failed.warnings).toBeUndefined();
  });
});

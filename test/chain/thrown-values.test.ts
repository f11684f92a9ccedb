/**
 * What a script throws reaches the model with its content: a thrown object that is not an Error
 * shows its fields, and an Error's `cause` and an AggregateError's `errors` are part of the
 * message (each as `name: message`, never a stack whose frames would read as the script's).
 */
import { afterAll, describe, expect, it } from "vitest";
import { MemoryTraceStore, ToolChainTool } from "../../src/index.ts";

describe.each(["in-process", "process"] as const)("thrown values (%s driver)", (driver) => {
  const traceStore = new MemoryTraceStore();
  const chain = new ToolChainTool({ tools: [], driver, poolSize: 1, traceStore });
  afterAll(() => chain.close());

  it("shows a thrown plain object's fields instead of [object Object]", async () => {
    const run = await chain.run('throw { code: "E_QUOTA", detail: "monthly quota reached", retryAfter: 3600 };');
    expect(run.status).toBe("error");
    expect(run.error?.message).toBe('Uncaught { code: "E_QUOTA", detail: "monthly quota reached", retryAfter: 3600 }');
  });

  it("adds an Error's cause to its message, and keeps its position", async () => {
    const run = await chain.run('const inner = new Error("disk full");\nthrow new Error("save failed", { cause: inner });');
    expect(run.error).toMatchObject({ name: "Error", message: "save failed (cause: Error: disk full)", line: 2, column: 7 });
  });

  it("keeps the position when a cause's message spans lines (the stack's frames are read past the message's lines)", async () => {
    const run = await chain.run('const inner = new Error("disk\\nfull");\nthrow new Error("save failed", { cause: inner });');
    expect(run.error).toMatchObject({ message: 'save failed (cause: "Error: disk\\nfull")', line: 2, column: 7 });
  });

  it("lists an AggregateError's errors, five at most", async () => {
    const run = await chain.run("await Promise.any([1, 2, 3, 4, 5, 6, 7].map((n) => Promise.reject(new RangeError(`r${n}`))));");
    expect(run.error?.name).toBe("AggregateError");
    expect(run.error?.message).toBe(
      "All promises were rejected (errors: RangeError: r1; RangeError: r2; RangeError: r3; RangeError: r4; RangeError: r5; 2 more)",
    );
  });

  it("shows an Error's message that is not a string, or whose getter throws, and keeps its position (not a raw stack)", async () => {
    const numbered = await chain.run('const e = new Error("not found");\n(e as any).message = 404;\nthrow e;');
    expect(numbered.error).toMatchObject({ name: "Error", message: "404", line: 1, column: 11 });
    const object = await chain.run('const e = new Error("x");\n(e as any).message = { code: 7 };\nthrow e;');
    expect(object.error).toMatchObject({ message: "{ code: 7 }", line: 1 });
    const getter = await chain.run('const e = new Error();\nObject.defineProperty(e, "message", { get() { throw new Error("inner"); } });\nthrow e;');
    expect(getter.error).toMatchObject({ message: "(the error's message could not be read: its getter threw)", line: 1, column: 11 });
    expect(getter.error?.stack).not.toContain("prelude");
  });

  it("survives a cause whose getter throws: the message alone", async () => {
    const run = await chain.run('const e = new Error("boom");\nObject.defineProperty(e, "cause", { get() { throw new Error("no"); } });\nthrow e;');
    expect(run.error).toMatchObject({ message: "boom", line: 1 });
  });

  it("makes error text well-formed, so the result and its stored trace say the same", async () => {
    const run = await chain.run("const e = new Error('bad \\ud800 id');\ne.name = 'Odd\\udc00Error';\nthrow e;");
    expect(run.error).toMatchObject({ name: "Odd\ufffdError", message: "bad \ufffd id" });
    expect(run.error?.stack?.split("\n")[0]).toBe("Odd\ufffdError: bad \ufffd id");
    const trace = await traceStore.load(run.chainId);
    expect(trace.outcome?.error).toMatchObject({ name: "Odd\ufffdError", message: "bad \ufffd id" });
  });
});

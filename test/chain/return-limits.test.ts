/**
 * A return value past the prelude's plain-data limits never reaches the host's recursive code
 * (the trace's encoder, the model's summary): a script that hides its depth behind a Proxy (the
 * check sees one flat field, JSON.stringify a deep array) gets the same refusal from the host.
 */
import { afterAll, describe, expect, it } from "vitest";
import { MemoryTraceStore, summarizeRun, ToolChainTool, type ChainRunResult } from "../../src/index.ts";
import { jsonDepthExceeds } from "../../src/kernel/json-depth.ts";
import { DRIVERS, driverOption } from "../security/harness.ts";

/** A script returning an array nested `depth` levels below its top level, shown flat to the prelude's check when `hidden`. */
function nested(depth: number, hidden: boolean): string {
  const build = `let deep = 1; for (let i = 0; i < ${depth + 1}; i++) deep = [deep];`;
  if (!hidden) return `${build} return deep;`;
  return `${build}
    return new Proxy({}, {
      ownKeys: () => ["v"],
      getOwnPropertyDescriptor: () => ({ value: 1, enumerable: true, configurable: true, writable: true }),
      get: () => deep,
    });`;
}

describe("jsonDepthExceeds", () => {
  it("counts levels as the prelude does (the top level is 0) and stops at the first branch past the limit", () => {
    let value: unknown = 1;
    for (let i = 0; i < 201; i++) value = [value]; // arrays at levels 0..200
    expect(jsonDepthExceeds(value, 200)).toBe(false);
    expect(jsonDepthExceeds([value], 200)).toBe(true);
    expect(jsonDepthExceeds({ a: 1, b: { c: [value] } }, 200)).toBe(true);
    expect(jsonDepthExceeds({ a: 1, b: "x".repeat(10) }, 0)).toBe(false);
    let deep: unknown = 1;
    for (let i = 0; i < 1_000_000; i++) deep = [deep];
    expect(jsonDepthExceeds(deep, 200)).toBe(true); // no stack overflow
  });
});

for (const driver of DRIVERS) {
  describe(`return values past the depth limit (${driver})`, () => {
    const store = new MemoryTraceStore();
    const chain = new ToolChainTool({ tools: [], driver: driverOption(driver), traceStore: store, poolSize: 1 });
    afterAll(() => chain.close());

    it("the host's limit is the prelude's: 200 levels below the top pass, 201 are refused", async () => {
      const within = await chain.run(nested(200, false));
      expect(within.status).toBe("ok");
      const past = await chain.run(nested(201, false));
      expect(past.status).toBe("error");
      expect(past.error?.message).toContain("nested deeper than 200 levels");
    });

    it("a deep value hidden behind a Proxy is refused by the host, and the trace keeps its outcome", async () => {
      const run = await chain.run(nested(2_500, true), { chainId: `hidden-deep-${driver}` });
      expect(run.status).toBe("error");
      expect(run.returnValue).toBeUndefined();
      expect(run.error).toMatchObject({ name: "TypeError", message: expect.stringContaining("nested deeper than 200 levels") });
      expect(run.traceError).toBeUndefined();
      expect((await store.load(`hidden-deep-${driver}`)).outcome).toMatchObject({ status: "error" });
      // The model's view: a result to read, not a throw.
      const forModel = await chain.execute({ code: nested(2_500, true) });
      expect(forModel.isError).toBe(true);
    });
  });
}

describe("summarizeRun", () => {
  it("says a return value JSON cannot show is one, instead of throwing", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    const run: ChainRunResult = {
      chainId: "hand-made",
      status: "ok",
      returnValue: cyclic,
      outputText: "",
      callTrace: [],
      durationMs: 1,
      stats: { wallMs: 1, cpuMs: 0, heapBytes: 0, toolCalls: 0 },
    };
    expect(summarizeRun(run)).toContain("return value:\n(a value that cannot be shown as JSON:");
    expect(summarizeRun({ ...run, returnValue: 10n })).toContain("cannot be shown as JSON");
  });
});

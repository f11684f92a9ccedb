import { afterAll, describe, expect, it } from "vitest";
import type { PooledRunner } from "../../sandbox/isolate-common.ts";
import { IsolateRunner, type IsolateRunRequest } from "../../sandbox/isolate-runner.ts";
import { getPreludeSource } from "../../sandbox/prelude-bundle.ts";
import { SyncIsolateRunner } from "../../sandbox/sync-isolate-runner.ts";
import { BRIDGE_GLOBALS } from "../../src/bridge/protocol.ts";
import { chainScript } from "../contracts/sandbox-driver.contract.ts";

const request = (body: string, overrides: Partial<IsolateRunRequest> = {}): IsolateRunRequest => ({
  chainId: "c",
  script: chainScript(body),
  scriptName: "chain.js",
  toolNames: ["echo"],
  maxToolCalls: 10,
  seed: 1,
  clockStart: 0,
  limits: { memoryLimitMb: 32, cpuTimeMs: 2_000, totalTimeoutMs: 3_000, maxOutputBytes: 1_000, maxArgumentBytes: 1_000 },
  onToolCall: (call) => Promise.resolve({ status: "ok", text: call.argsJson }),
  ...overrides,
});

const runners: [string, () => PooledRunner][] = [
  ["IsolateRunner", () => new IsolateRunner({ memoryLimitMb: 32 })],
  ["SyncIsolateRunner", () => new SyncIsolateRunner({ memoryLimitMb: 32 })],
];

/**
 * A prelude that first notes whether the host staged tool names on the global (as the real
 * prelude finds them, before it takes them off), for the script to read back.
 */
const notingPrelude = (): string => `globalThis.__staged = typeof globalThis.${BRIDGE_GLOBALS.tools};\n${getPreludeSource()}`;

const notingRunners: [string, () => PooledRunner][] = [
  ["IsolateRunner", () => new IsolateRunner({ memoryLimitMb: 32, preludeSource: notingPrelude() })],
  ["SyncIsolateRunner", () => new SyncIsolateRunner({ memoryLimitMb: 32, preludeSource: notingPrelude() })],
];

describe.each(notingRunners)("%s, tools staged while the next context is prepared", (_name, create) => {
  const runner = create();
  afterAll(() => runner.dispose());
  const body = `return { staged: __staged, tools: Object.keys(tools), leaked: typeof ${BRIDGE_GLOBALS.tools}, echo: (await tools.echo({ n: 1 })).status };`;
  const run = async (toolNames: string[]): Promise<unknown> => {
    const outcome = await runner.run(request(body, { toolNames }));
    await runner.prepare();
    return JSON.parse(outcome.returnJson ?? "null");
  };

  it("stages nothing for names the prelude could not build, so the runs after them still run", async () => {
    const own = create();
    afterAll(() => own.dispose());
    const body2 = "return Object.keys(tools);";
    const runOf = async (toolNames: unknown[]): Promise<{ status: string; value: unknown }> => {
      const outcome = await own.run(request(body2, { toolNames: toolNames as string[] }));
      await own.prepare();
      return { status: outcome.status, value: JSON.parse(outcome.returnJson ?? "null") };
    };
    // A duplicate name cannot be defined twice on the tools object: the run says so, clearly.
    const duplicate = await own.run(request(body2, { toolNames: ["a", "a"] }));
    await own.prepare();
    expect(duplicate.status).toBe("error");
    expect(duplicate.error).toMatchObject({ name: "SandboxError", message: expect.stringContaining("tool names must be distinct") });
    // Nor is such a list, or a list of numbers, staged for the next context.
    expect(await runOf(["b"])).toEqual({ status: "ok", value: ["b"] });
    await runOf([1, 2]);
    expect(await runOf([1, 2])).toMatchObject({ status: "ok" });
    expect(await runOf(["c"])).toEqual({ status: "ok", value: ["c"] });
    expect(own.isDisposed).toBe(false);
  });

  it("builds the last run's tools as the next context is prepared, and builds them afresh for other names", async () => {
    // The first context knows no names yet.
    expect(await run(["echo", "lookup"])).toEqual({ staged: "undefined", tools: ["echo", "lookup"], leaked: "undefined", echo: "ok" });
    // The next one has them staged, and the script cannot see what was staged.
    expect(await run(["echo", "lookup"])).toEqual({ staged: "string", tools: ["echo", "lookup"], leaked: "undefined", echo: "ok" });
    // Staged with the last names, run with others: the run's own names win.
    expect(await run(["echo", "search"])).toEqual({ staged: "string", tools: ["echo", "search"], leaked: "undefined", echo: "ok" });
    expect(await run(["echo", "search"])).toEqual({ staged: "string", tools: ["echo", "search"], leaked: "undefined", echo: "ok" });
  });
});

describe.each([
  ["IsolateRunner", (preludeSource: string) => new IsolateRunner({ memoryLimitMb: 32, preludeSource })],
  ["SyncIsolateRunner", (preludeSource: string) => new SyncIsolateRunner({ memoryLimitMb: 32, preludeSource })],
] as const)("%s, staged tools lost on the way", (_name, create) => {
  it("ends the run with a SandboxError naming the missing tools, not a crash", async () => {
    // A prelude that never sees the staged names, while the host believes it does.
    const runner = create(`delete globalThis.${BRIDGE_GLOBALS.tools};\n${getPreludeSource()}`);
    try {
      expect((await runner.run(request("return 1;"))).status).toBe("ok");
      await runner.prepare();
      const outcome = await runner.run(request("return 1;"));
      expect(outcome.status).toBe("error");
      expect(outcome.error).toMatchObject({ name: "SandboxError", message: expect.stringContaining("staged tools") });
    } finally {
      runner.dispose();
    }
  });
});

describe.each(runners)("%s", (_name, create) => {
  const runner = create();
  afterAll(() => runner.dispose());

  it("ends a run on an isolate disposed after its context was prepared, without an unhandled rejection", async () => {
    const doomed = create();
    await doomed.prepare();
    doomed.dispose();
    const outcome = await doomed.run(request("return 1;"));
    expect(outcome).toMatchObject({ status: "error", error: { name: "SandboxError" } });
    expect(doomed.isDisposed).toBe(true);
    // A rejection left unhandled would surface here (vitest fails the file on one).
    await new Promise((resolve) => setTimeout(resolve, 20));
  });

  it("hands a result given as JSON text to the script as it is", async () => {
    const outcome = await runner.run(
      request("const r = await tools.echo({ n: 1 }); return r;", {
        onToolCall: () => Promise.resolve({ resultJson: '{"status":"ok","text":"from the wire","extra":[1]}' }),
      }),
    );
    expect(JSON.parse(outcome.returnJson ?? "null")).toEqual({ status: "ok", text: "from the wire", extra: [1] });
  });

  it("turns JSON text that does not parse into a BRIDGE_ERROR result for the script", async () => {
    const outcome = await runner.run(
      request("return await tools.echo({});", { onToolCall: () => Promise.resolve({ resultJson: "{not json" }) }),
    );
    expect(JSON.parse(outcome.returnJson ?? "null")).toMatchObject({ status: "error", code: "BRIDGE_ERROR" });
  });

  it("configures each run with its own tools, budget, seed and clock, whatever the run before it had", async () => {
    const body = "return { tools: Object.keys(tools), total: budget.total, r: Math.random(), now: Date.now() };";
    const names = ["echo", "lookup"];
    const first = JSON.parse((await runner.run(request(body, { toolNames: names, seed: 7, clockStart: 1_000 }))).returnJson ?? "null");
    expect(first).toMatchObject({ tools: ["echo", "lookup"], total: 10 });
    expect(first.now - 1_000).toBeGreaterThanOrEqual(0);
    expect(first.now - 1_000).toBeLessThan(100); // the virtual clock starts at clockStart
    // The same array changed in place, another budget and seed: nothing of the first run's stays.
    names[1] = "search";
    const second = JSON.parse((await runner.run(request(body, { toolNames: names, maxToolCalls: 3, seed: 8, clockStart: 2_000 }))).returnJson ?? "null");
    expect(second).toMatchObject({ tools: ["echo", "search"], total: 3 });
    expect(second.now - 2_000).toBeGreaterThanOrEqual(0);
    expect(second.now - 2_000).toBeLessThan(100);
    expect(second.r).not.toBe(first.r);
    const again = JSON.parse((await runner.run(request(body, { toolNames: ["echo", "lookup"], seed: 7, clockStart: 1_000 }))).returnJson ?? "null");
    // The same configuration, the same values (the clock also counts real milliseconds).
    expect({ ...again, now: 0 }).toEqual({ ...first, now: 0 });
    expect(again.now - 1_000).toBeLessThan(100);
    const limits = { ...request("").limits, maxOutputBytes: 20 };
    const capped = await runner.run(request('console.log("x".repeat(100)); return 1;', { limits }));
    expect(capped.returnJson).toBe("1");
  });

  it("runs chains on a prelude compiled from V8's code cache (a later isolate)", async () => {
    // The first isolate of the process made the cache; this one starts from it.
    const later = create();
    try {
      const outcome = await later.run(request("const r = await tools.echo({ n: 1 }); return [r.text, Math.random() < 1, typeof Date.now()];"));
      expect(JSON.parse(outcome.returnJson ?? "null")).toEqual(['{"n":1}', true, "number"]);
    } finally {
      later.dispose();
    }
  });

  it("runs a script the same when it is new, when it comes back and once it is cached", async () => {
    const body = `const r = await tools.echo({ n: ${Math.random()} }); throw new Error("at line 2: " + JSON.parse(r.text).n);`;
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push(await runner.run(request(body)));
    // The same positions whichever way the script was compiled: errors map back to the model's lines.
    expect(outcomes[0]?.error?.stack).toMatch(/chain\.js:2:\d+/); // the body's line 1 is the file's line 2
    for (const outcome of outcomes) {
      expect(outcome.status).toBe("error");
      expect(outcome.error?.message).toBe(outcomes[0]?.error?.message);
      expect(outcome.error?.stack).toBe(outcomes[0]?.error?.stack);
    }
  });

  it("delivers results of parallel calls that settle together, each to its own call", async () => {
    const outcome = await runner.run(
      request("const r = await Promise.all([1, 2, 3].map((n) => tools.echo({ n }))); return r.map((x) => x.text);", {
        maxToolCalls: 10,
      }),
    );
    expect(JSON.parse(outcome.returnJson ?? "null")).toEqual(['{"n":1}', '{"n":2}', '{"n":3}']);
  });

  // The figure is read once the run has ended, with the context (and what the script keeps on
  // it) still alive: after no call, after a tracked delivery, and after many (untracked) ones.
  it.each([0, 1, 6])("reports the heap as the run left it (%i calls)", async (calls) => {
    const body = `for (let i = 0; i < ${calls}; i++) await tools.echo({ i });
globalThis.keep = new Array(1_000_000).fill(1.5);
return keep.length;`;
    const outcome = await runner.run(request(body));
    expect(outcome.status).toBe("ok");
    expect(outcome.returnJson).toBe("1000000");
    expect(outcome.heapBytes).toBeGreaterThan(8_000_000);
  });

  it("reuses the compiled script per source, and recompiles it under another file name", async () => {
    const body = "const x = null;\nx.boom();";
    const first = await runner.run(request(body));
    const again = await runner.run(request(body));
    const renamed = await runner.run(request(body, { scriptName: "other.js" }));
    expect(first.error?.stack).toMatch(/chain\.js:3:/);
    expect(again.error?.stack).toMatch(/chain\.js:3:/);
    expect(renamed.error?.stack).toMatch(/other\.js:3:/);
  });
});

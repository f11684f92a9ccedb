/**
 * Attack family: the script hooks the prototypes the prelude's own arrays and objects would
 * inherit from (setters, getters and read-only indices on `Array.prototype` and
 * `Object.prototype`, a Proxy as `Array.prototype`'s prototype, frozen prototypes, an
 * `Object.prototype.then`). Whatever it hooks, it keeps its calls: every call reaches the host
 * with its own arguments, is traced, and resolves with the host's answer; the hooks never see
 * what the prelude queues, and its plain-data check and clock readings stay right.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryTraceStore, replay, ToolChainTool } from "../../src/index.ts";
import { runAttackTable } from "./attack-table.ts";
import { type Attack, ATTACK_POLICY, DRIVERS, driverOption, type Harness, hostTools, createLedger } from "./harness.ts";

/** Accessors at indices 0..11 of `target`: reads answer "hooked", writes are counted and dropped. */
const hookIndices = (target: string): string =>
  `let hookedWrites = 0; for (let i = 0; i < 12; i++) Object.defineProperty(${target}, String(i), { get() { return "hooked"; }, set() { hookedWrites++; }, configurable: true });`;

/** Three calls in one batch (one `tool-calls` frame) and one alone; returns what came back. */
const CALLS = `
const batch = await Promise.all([tools.echo({ value: [1, [2, 3]] }), tools.echo({ value: { n: 2 } }), tools.echo({ value: "three" })]);
const alone = await tools.echo({ value: 4 });
const results = [batch[0], batch[1], batch[2], alone];
`;
const RESULTS = "results.map((r) => r.status === 'ok' ? r.structured.value : r.code)";
const EXPECTED_RESULTS = [[1, [2, 3]], { n: 2 }, "three", 4];

/** The echo tool received exactly these values, in this order. */
const echoed =
  (values: readonly unknown[]) =>
  (_result: unknown, harness: Harness): void => {
    const received = harness.ledger.received.filter((entry) => entry.tool === "echo").slice(-values.length);
    expect(received.map((entry) => (entry.args as { value?: unknown }).value)).toEqual(values);
  };

const attacks: Attack[] = [
  {
    // The reviewer's reproduction: the setter took the queued call's arguments and the call was lost.
    name: "a setter at an index of Array.prototype neither takes nor loses a queued call",
    code: "Object.defineProperty(Array.prototype, '2', { set(v) { (globalThis as any).cap = v; }, configurable: true }); const r = await tools.echo({ value: { secret: 1 } }); return [r.status, r.structured.value, typeof (globalThis as any).cap];",
    expected: { status: "ok", returnValue: ["ok", { secret: 1 }, "undefined"] },
    check: (result, harness) => {
      echoed([{ secret: 1 }])(result, harness);
      expect(result.callTrace.map((record) => [record.tool, record.status])).toEqual([["echo", "ok"]]);
    },
  },
  {
    name: "getters and setters at every index of Array.prototype: batched and single calls all go through",
    code: `${hookIndices("Array.prototype")}\n${CALLS}\nreturn [${RESULTS}, hookedWrites];`,
    expected: { status: "ok", returnValue: [EXPECTED_RESULTS, 0] },
    check: (result, harness) => {
      echoed(EXPECTED_RESULTS)(result, harness);
      expect(result.callTrace.map((record) => [record.seq, record.status])).toEqual([0, 1, 2, 3].map((seq) => [seq, "ok"]));
    },
  },
  {
    name: "getters and setters at every index of Object.prototype: batched and single calls all go through",
    code: `${hookIndices("Object.prototype")}\n${CALLS}\nreturn [${RESULTS}, hookedWrites];`,
    expected: { status: "ok", returnValue: [EXPECTED_RESULTS, 0] },
    check: echoed(EXPECTED_RESULTS),
  },
  {
    // A read-only inherited index makes a strict-mode write past the end throw.
    name: "read-only indices on Array.prototype do not make queuing a call throw",
    code: `for (let i = 0; i < 12; i++) Object.defineProperty(Array.prototype, String(i), { value: "fixed", writable: false, configurable: true });\n${CALLS}\nreturn ${RESULTS};`,
    expected: { status: "ok", returnValue: EXPECTED_RESULTS },
    check: echoed(EXPECTED_RESULTS),
  },
  {
    name: "a Proxy as Array.prototype's prototype traps none of the prelude's writes",
    code: `
      let trapped = 0;
      const isIndex = (key: string | symbol) => typeof key === "string" && key !== "" && String(Number(key)) === key;
      Object.setPrototypeOf(Array.prototype, new Proxy(Object.prototype, {
        set(target, key, value, receiver) { if (isIndex(key)) { trapped++; return true; } return Reflect.set(target, key, value, receiver); },
        get(target, key, receiver) { return isIndex(key) ? "hooked" : Reflect.get(target, key, receiver); },
      }));
      ${CALLS}
      return [${RESULTS}, trapped];`,
    expected: { status: "ok", returnValue: [EXPECTED_RESULTS, 0] },
    check: echoed(EXPECTED_RESULTS),
  },
  {
    name: "frozen Array.prototype and Object.prototype",
    code: `Object.freeze(Array.prototype); Object.freeze(Object.prototype);\n${CALLS}\nreturn ${RESULTS};`,
    expected: { status: "ok", returnValue: EXPECTED_RESULTS },
    check: echoed(EXPECTED_RESULTS),
  },
  {
    name: "getters on Object.prototype for the names the prelude reads do not change limits or results",
    code: `
      for (const key of ["maxArgumentBytes", "maxOutputBytes", "maxToolCalls", "toolNames", "clockReplay", "status", "text", "code", "structured", "x"]) {
        Object.defineProperty(Object.prototype, key, { get() { return 0; }, set() {}, configurable: true });
      }
      console.log("still printed");
      ${CALLS}
      return [${RESULTS}, budget.total, budget.remaining];`,
    expected: { status: "ok", returnValue: [EXPECTED_RESULTS, ATTACK_POLICY.maxToolCalls, (ATTACK_POLICY.maxToolCalls ?? 0) - 4] },
    check: (result, harness) => {
      echoed(EXPECTED_RESULTS)(result, harness);
      expect(result.outputText).toBe("still printed\n");
    },
  },
  {
    // Every object a promise is resolved with is asked for its `then`: the script's own answers.
    name: "an Object.prototype.then that passes results on still gets every call and result",
    code: `
      let thens = 0;
      (Object.prototype as any).then = function (resolve: (value: unknown) => void) { thens++; resolve(Object.setPrototypeOf({ ...this }, null)); };
      const first = tools.echo({ value: 1 });
      const second = tools.echo({ value: 2 });
      const a = await first;
      const b = await second;
      delete (Object.prototype as any).then;
      return [a.status, a.structured.value, b.structured.value, thens > 0];`,
    expected: { status: "ok", returnValue: ["ok", 1, 2, true] },
    check: (result, harness) => {
      echoed([1, 2])(result, harness);
      expect(result.callTrace.map((record) => [record.seq, record.status])).toEqual([0, 1].map((seq) => [seq, "ok"]));
    },
  },
  {
    // The plain-data walk keeps its stack of ancestors and keys in arrays too: a setter that took
    // their writes would hide a cycle (refused as too deep instead) and garble the path.
    name: "index hooks on Array.prototype do not blind the plain-data check",
    code: `const cycle: any = { list: [1] }; cycle.list[1] = cycle;
      const withFunction = { list: [1, { f: () => 1 }] };
      ${hookIndices("Array.prototype")}
      const a = await tools.echo({ value: cycle });
      const b = await tools.echo({ value: withFunction });
      return [a.code, a.text, b.code, b.text, hookedWrites];`,
    expected: {
      status: "ok",
      returnValue: [
        "BRIDGE_ERROR",
        "tools.echo: arguments must be plain JSON data; found a cycle at .value.list[1].",
        "BRIDGE_ERROR",
        "tools.echo: arguments must be plain JSON data; found a function at .value.list[1].f.",
        0,
      ],
    },
  },
];

runAttackTable("prototype hooks", attacks);

describe.each(DRIVERS)("prototype hooks and the clock [%s]", (driver) => {
  let store: MemoryTraceStore;
  let chain: ToolChainTool;
  beforeAll(() => {
    store = new MemoryTraceStore();
    chain = new ToolChainTool({ tools: hostTools(createLedger()), policy: ATTACK_POLICY, traceStore: store, driver: driverOption(driver), poolSize: 1 });
  });
  afterAll(async () => {
    await chain.close();
  });

  it("records every clock reading when Array.prototype's indices are hooked", async () => {
    const result = await chain.run(`${hookIndices("Array.prototype")}\nconst a = Date.now(); await tools.echo({ value: 1 }); const b = Date.now(); new Date(); return [b >= a, hookedWrites];`);
    expect(result.status).toBe("ok");
    expect(result.returnValue).toEqual([true, 0]);
    const trace = await store.load(result.chainId);
    const readings = trace.clockReadings ?? [];
    let count = 0;
    for (let i = 1; i < readings.length; i += 2) count += readings[i] as number;
    expect(count).toBe(3);
  });

  it("reads no clock readings from Array.prototype past the end of a replay's", async () => {
    // An edited script replayed against a trace reads the clock more often than the recording
    // did: past the recorded readings the clock goes on live, and a getter past their end must
    // not be read as more of them (here: a jump of 5 000 s).
    const original = await chain.run("const a = Date.now(); await tools.echo({ value: 1 }); return true;");
    expect(original.status).toBe("ok");
    const edited = `
      for (let i = 0; i < 12; i++) Object.defineProperty(Array.prototype, String(i), { get() { return i % 2 === 0 ? 5_000_000 : 100; }, configurable: true });
      const a = Date.now();
      await tools.echo({ value: 1 });
      const later = [Date.now(), Date.now(), Date.now()];
      return later.every((t) => t - a < 1_000_000);`;
    const report = await replay(await store.load(original.chainId), { mode: "strict", source: edited, driver: driverOption(driver) });
    expect(report.run.status).toBe("ok");
    expect(report.run.returnValue).toBe(true);
  });
});

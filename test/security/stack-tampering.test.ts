/**
 * Attack family: tampering with V8's stack machinery (`Error.prepareStackTrace`,
 * `captureStackTrace`, `stackTraceLimit`) and with the thrown value itself (getters, proxies,
 * huge forged names, messages and stacks). The script only ever changes its own isolate's
 * `Error`: host stacks keep working and the host's `Error.prepareStackTrace` is never replaced.
 * What the script throws reaches the result bounded, so it can neither stall the host while the
 * stack is mapped nor flood the model's context.
 */
import { expect } from "vitest";
import { summarizeRun } from "../../src/index.ts";
import { MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_NAME_CHARS, MAX_STACK_LINE_CHARS, MAX_STACK_LINES } from "../../src/compile/index.ts";
import { runAttackTable } from "./attack-table.ts";
import type { Attack } from "./harness.ts";
import type { ChainRunResult } from "../../src/index.ts";

const STACK_BOUND = (MAX_STACK_LINES + 1) * (MAX_STACK_LINE_CHARS + 40);

function expectBoundedError(result: ChainRunResult): void {
  expect(result.error?.name.length).toBeLessThanOrEqual(MAX_ERROR_NAME_CHARS + 40);
  expect(result.error?.message.length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_CHARS + 40);
  expect(result.error?.stack?.length ?? 0).toBeLessThanOrEqual(STACK_BOUND);
  expect(summarizeRun(result).length).toBeLessThan(MAX_ERROR_MESSAGE_CHARS + MAX_ERROR_NAME_CHARS + 2000);
}

const attacks: Attack[] = [
  {
    name: "structured prepareStackTrace sees only isolate frames",
    code: `
      Error.prepareStackTrace = (e, frames) => frames.map((f) => String(f.getFileName()));
      const names = [...new Error().stack];
      await tools.echo({ value: 1 });
      names.push(...new Error().stack);
      const value = [];
      Object.defineProperty(value, 0, { enumerable: true, get() { names.push(...new Error().stack); return 1; } });
      await tools.spy({ value });
      return [...new Set(names)].filter((n) => n !== "chain.js" && n !== "isochain:prelude" && n !== "null");
    `,
    expected: { status: "ok", returnValue: [] },
  },
  {
    name: "CallSite getThis/getFunction reach only isolate values",
    code: `
      Error.prepareStackTrace = (e, frames) => frames.map((f) => [f.getThis(), f.getFunction()]);
      const frames = new Error().stack;
      Error.prepareStackTrace = undefined;
      const seen = [];
      for (const [self, fn] of frames) {
        seen.push(typeof self?.process, typeof self?.require);
        // fn may be an async function: its constructor is AsyncFunction; await both kinds.
        if (typeof fn === "function") seen.push(await fn.constructor("return typeof process")());
      }
      return [seen.length > 0, seen.every((x) => x === "undefined")];
    `,
    expected: { status: "ok", returnValue: [true, true] },
  },
  {
    name: "prepareStackTrace that throws: the error still reports name and message",
    code: 'Error.prepareStackTrace = () => { throw new Error("in prepare"); }; throw new Error("m");',
    expected: { status: "error", phase: "runtime", name: "Error", message: /^m$/ },
  },
  {
    name: "prepareStackTrace returning a non-string: no stack, same error",
    code: 'Error.prepareStackTrace = () => ({ toString() { for (;;) {} } }); throw new RangeError("r");',
    expected: { status: "error", phase: "runtime", name: "RangeError", message: /^r$/ },
    check: (result) => expect(result.error?.stack).toBeUndefined(),
  },
  {
    name: "prepareStackTrace that never returns ends at the CPU limit",
    code: 'Error.prepareStackTrace = () => { for (;;) {} }; throw new Error("m");',
    expected: { status: "timeout", phase: "limit", name: "CpuLimitError" },
  },
  {
    name: "replaced and deleted captureStackTrace only affects the isolate",
    code: `
      Error.captureStackTrace = () => { throw new Error("hijacked"); };
      const r1 = await tools.echo({ value: 1 });
      delete Error.captureStackTrace;
      const r2 = await tools.emit({ kind: "no-such-kind" });
      return [r1.status, r2.status, r2.code];
    `,
    expected: { status: "ok", returnValue: ["ok", "error", "TOOL_ERROR"] },
  },
  {
    name: "host stack frames never reach the script through a tool error",
    code: 'const r = await tools.emit({ kind: "no-such-kind" }); return [r.code, /\\bat\\s|node:|\\.ts:\\d/.test(r.text)];',
    expected: { status: "ok", returnValue: ["TOOL_ERROR", false] },
  },
  {
    name: "stackTraceLimit = Infinity with deep recursion",
    code: "Error.stackTraceLimit = Infinity; const f = (n: number): number => f(n + 1) + 1; return f(0);",
    policy: { cpuTimeMs: 3000, totalTimeoutMs: 4000 }, // capturing ~10k frames costs CPU; the RangeError is the point
    expected: { status: "error", phase: "runtime", name: "RangeError", message: /call stack/ },
    check: expectBoundedError,
  },
  {
    name: "stackTraceLimit = 0: no frames, no position",
    code: 'Error.stackTraceLimit = 0; throw new Error("m");',
    expected: { status: "error", phase: "runtime", name: "Error", message: /^m$/ },
    check: (result) => expect(result.error?.line).toBeUndefined(),
  },
  {
    name: "thrown object whose name getter throws",
    code: "throw Object.create(Error.prototype, { name: { get() { throw 1; } } });",
    expected: { status: "error", phase: "runtime", name: "Error", message: /^$/ },
  },
  {
    name: "thrown proxy whose every trap throws",
    code: "throw new Proxy({}, { get() { throw 1; }, getPrototypeOf() { throw 1; }, has() { throw 1; } });",
    expected: { status: "error", phase: "runtime", name: "Error", message: /^an unprintable value$/ },
  },
  {
    name: "thrown primitive",
    code: "throw 42;",
    expected: { status: "error", phase: "runtime", name: "Error", message: /^Uncaught 42$/ },
  },
  {
    name: "thrown BigInt keeps its n",
    code: "throw 10n;",
    expected: { status: "error", phase: "runtime", name: "Error", message: /^Uncaught 10n$/ },
  },
  {
    name: "a returned class instance is named with its article",
    code: "class Item {} class Order {} return [new Order(), new Item()];",
    expected: { status: "error", phase: "runtime", name: "TypeError", message: /found an Order at \[0\]/ },
  },
  {
    name: "a 5 MB error message reaches the result bounded",
    code: 'throw new Error("x".repeat(5e6));',
    expected: { status: "error", phase: "runtime", name: "Error", message: /^x{4096}… \[4995904 more characters\]$/ },
    check: expectBoundedError,
  },
  {
    name: "a 4 MB error name reaches the result bounded",
    code: 'throw { name: "n".repeat(4e6), message: "m" };',
    expected: { status: "error", phase: "runtime", name: `${"n".repeat(MAX_ERROR_NAME_CHARS)}… [${4e6 - MAX_ERROR_NAME_CHARS} more characters]` },
    check: expectBoundedError,
  },
  {
    name: "a forged 12 MB stack of script frames is bounded before it is mapped",
    code: 'const e = new Error("m"); e.stack = "Error: m\\n" + "    at f (chain.js:2:1)\\n".repeat(5e5); throw e;',
    expected: { status: "error", phase: "runtime", name: "Error", message: /^m$/ },
    check: (result) => {
      expectBoundedError(result);
      expect(result.error?.stack).toMatch(/stack cut: \d+ more characters/);
    },
  },
  {
    name: "a forged stack with a 1 MB line number",
    code: 'const e = new Error("m"); e.stack = "Error: m\\n    at f (chain.js:" + "9".repeat(1e6) + ":1)\\n"; throw e;',
    expected: { status: "error", phase: "runtime", name: "Error", message: /^m$/ },
    check: expectBoundedError,
  },
];

runAttackTable("stack tampering", attacks, {
  after: () => {
    // Host stacks are unaffected by whatever the script did to its own Error.
    const hostStack = new Error("host").stack;
    expect(typeof hostStack).toBe("string");
    expect(hostStack).toMatch(/^Error: host\n\s+at /);
  },
});

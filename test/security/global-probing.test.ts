/**
 * Attack family: probing the script's global object. The names on `globalThis` must be exactly
 * the V8 built-ins of a fresh `node:vm` context, minus what the prelude removes, plus `tools`,
 * `console`, `budget` and `artifact`; host names (`process`, `require`, `fetch`, `Deno`, `Bun`,
 * timers, `Buffer`) are absent; `eval` and `new Function` work but reach only the isolate; the
 * prelude's globals cannot be replaced; nothing a chain leaves on its global reaches the next.
 */
import { describe, expect, it } from "vitest";
import { runAttackTable } from "./attack-table.ts";
import { ALLOWED_GLOBAL_NAMES, type Attack, createHarness, DRIVERS } from "./harness.ts";

const HOST_NAMES = [
  "process",
  "require",
  "module",
  "exports",
  "__dirname",
  "__filename",
  "fetch",
  "Deno",
  "Bun",
  "global",
  "Buffer",
  "setTimeout",
  "setInterval",
  "setImmediate",
  "clearTimeout",
  "queueMicrotask",
  "structuredClone",
  "performance",
  "navigator",
  "crypto",
  "TextEncoder",
  "XMLHttpRequest",
  "WebSocket",
  "importScripts",
  "postMessage",
  "SharedArrayBuffer",
  "Atomics",
  "WebAssembly",
  "FinalizationRegistry",
  "WeakRef",
];

const attacks: Attack[] = [
  {
    name: "globalThis holds exactly the standard built-ins plus tools/console/budget/artifact",
    code: "return Reflect.ownKeys(globalThis).map(String).sort();",
    expected: { status: "ok", returnValue: ALLOWED_GLOBAL_NAMES },
  },
  {
    name: "host names are absent from globalThis",
    code: `return ${JSON.stringify(HOST_NAMES)}.filter((name) => name in globalThis);`,
    expected: { status: "ok", returnValue: [] },
  },
  {
    name: "host names are unresolvable identifiers",
    code: `return ${JSON.stringify(HOST_NAMES)}.map((name) => new Function("return typeof " + name)()).filter((t) => t !== "undefined");`,
    expected: { status: "ok", returnValue: [] },
  },
  {
    name: "globalThis.constructor is the isolate's Object",
    code: "let p = globalThis; while (Object.getPrototypeOf(p) !== null) p = Object.getPrototypeOf(p); return [globalThis.constructor === Object, p === Object.prototype, globalThis.constructor.constructor('return typeof process')()];",
    expected: { status: "ok", returnValue: [true, true, "undefined"] },
  },
  {
    name: "this at the top of the script is not a host object",
    code: "return [this === undefined || this === globalThis, typeof this?.process];",
    expected: { status: "ok", returnValue: [true, "undefined"] },
  },
  {
    name: "sloppy-mode Function('return this') is the isolate global",
    code: "const g = Function('return this')(); return [g === globalThis, Object.keys(g)];",
    expected: { status: "ok", returnValue: [true, []] },
  },
  {
    name: "direct eval is allowed and sees only the isolate",
    code: 'return [eval("1 + 1"), eval("typeof process"), eval("typeof tools.echo")];',
    expected: { status: "ok", returnValue: [2, "undefined", "function"] },
  },
  {
    name: "indirect eval runs in the isolate global",
    code: 'return [(0, eval)("this") === globalThis, (0, eval)("typeof require")];',
    expected: { status: "ok", returnValue: [true, "undefined"] },
  },
  {
    name: "new Function can define and call code, isolate only",
    code: 'const f = new Function("a", "b", "return a * b + (typeof module === \'undefined\' ? 0 : 1000)"); return f(6, 7);',
    expected: { status: "ok", returnValue: 42 },
  },
  {
    name: "dynamic import through eval is refused at run time",
    code: 'try { await eval("import(\'node:fs\')"); return "imported"; } catch (e) { return e instanceof Error; }',
    expected: { status: "ok", returnValue: true },
  },
  {
    name: "dynamic import through new Function is refused at run time",
    code: 'try { await new Function("return import(\'node:child_process\')")(); return "imported"; } catch (e) { return e instanceof Error; }',
    expected: { status: "ok", returnValue: true },
  },
  {
    name: "WebAssembly, SharedArrayBuffer and Atomics.wait are unavailable",
    code: "return [typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics, typeof globalThis.Atomics?.wait];",
    expected: { status: "ok", returnValue: ["undefined", "undefined", "undefined", "undefined"] },
  },
  {
    name: "shared memory is not reachable through a typed array's buffer",
    code: "const b = new Uint8Array(8).buffer; return [b.constructor === ArrayBuffer, Object.prototype.toString.call(b)];",
    expected: { status: "ok", returnValue: [true, "[object ArrayBuffer]"] },
  },
  {
    name: "tools cannot be replaced or extended",
    code: `
      const out = [];
      try { globalThis.tools = { echo: () => "fake" }; } catch (e) { out.push(e.name); }
      try { tools.echo = () => "fake"; } catch (e) { out.push(e.name); }
      try { tools.injected = 1; } catch (e) { out.push(e.name); }
      try { Object.defineProperty(globalThis, "tools", { value: {} }); } catch (e) { out.push(e.name); }
      out.push(Object.isFrozen(tools), typeof tools.injected, (await tools.echo({ value: "real" })).structured.value);
      return out;
    `,
    // Scripts run in sloppy mode: assignments to the frozen tools fail silently, redefining throws.
    expected: { status: "ok", returnValue: ["TypeError", true, "undefined", "real"] },
  },
  {
    name: "budget cannot be reset",
    code: `
      await tools.echo({ value: 1 });
      try { budget.remaining = 1000; } catch {}
      try { Object.defineProperty(budget, "remaining", { value: 1000 }); } catch {}
      try { globalThis.budget = { remaining: 1000 }; } catch {}
      return [budget.total, budget.remaining];
    `,
    expected: { status: "ok", returnValue: [50, 49] },
  },
  {
    name: "a hijacked Promise.prototype.then cannot hide the script's own return value",
    code: 'Promise.prototype.then = function () { return "hijacked"; }; return "dirty";',
    expected: { status: "ok", returnValue: "dirty" },
  },
  {
    name: "a replaced console only changes the script's own view",
    code: 'console = { log: () => { throw new Error("x"); } }; try { console.log("a"); } catch (e) { return e.message; }',
    expected: { status: "ok", returnValue: "x" },
  },
];

runAttackTable("global probing", attacks);

describe.each(DRIVERS)("nothing a chain leaves behind reaches the next [%s]", (driver) => {
  it("globals, prototypes and built-ins are fresh in every chain of a pooled isolate", async () => {
    const harness = createHarness(driver);
    try {
      const dirty = await harness.run(`
        globalThis.leak = "secret";
        Object.prototype.polluted = "from chain 1";
        Array.prototype.push = function () { return "hijacked"; };
        JSON.stringify = () => "hijacked";
        Math.random = () => 0.5;
        Promise.prototype.catch = function () { return "hijacked"; };
        return "dirty";
      `);
      expect(dirty.status).toBe("ok");
      for (let i = 0; i < 3; i++) {
        const clean = await harness.run(`
          const a = []; a.push(1);
          return [typeof globalThis.leak, ({}).polluted ?? null, a.length, JSON.stringify({ a: 1 }), Math.random() !== 0.5,
            (await tools.echo({ value: "fresh" })).structured.value];
        `);
        expect(clean.returnValue).toEqual(["undefined", null, 1, '{"a":1}', true, "fresh"]);
        harness.expectTraceWhole(clean);
      }
    } finally {
      await harness.close();
    }
  });
});

/**
 * Attack family: walking constructor chains from every object the prelude hands the script
 * (tools.x, console.log, budget, artifact, call results, promises, errors, async and generator
 * functions, Reflect, Symbol) to a `Function` that could reach the host. Every chain must end at
 * the isolate's own `Function`, whose `this` is the isolate's global: no `process`, `require`,
 * `module` or host object.
 */
import { runAttackTable } from "./attack-table.ts";
import type { Attack } from "./harness.ts";

/** Evaluates `typeof process`, `typeof require` and `typeof module` through a constructor `F`. */
const probe = (F: string): string =>
  `const F = ${F}; const g = F("return this")(); return [F === Function, F("return [typeof process, typeof require, typeof module]")(), g === globalThis, typeof g.process];`;
const ISOLATED = [true, ["undefined", "undefined", "undefined"], true, "undefined"];

const attacks: Attack[] = [
  { name: "tools.x.constructor", code: probe("tools.echo.constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  { name: "tools.constructor.constructor (null-prototype tools)", code: "return [Object.getPrototypeOf(tools), tools.constructor === undefined];", expected: { status: "ok", returnValue: [null, true] } },
  { name: "console.log.constructor", code: probe("console.log.constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  { name: "console.constructor.constructor", code: probe("console.constructor.constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  {
    name: "budget getter constructor",
    code: probe('Object.getOwnPropertyDescriptor(budget, "remaining").get.constructor'),
    expected: { status: "ok", returnValue: ISOLATED },
  },
  { name: "budget.constructor.constructor", code: probe("budget.constructor.constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  { name: "artifact.constructor", code: probe("artifact.constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  { name: "artifact() result constructor", code: probe('artifact("sha256:00").constructor.constructor'), expected: { status: "ok", returnValue: ISOLATED } },
  { name: "pending call promise constructor", code: probe("tools.echo({ value: 1 }).constructor.constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  {
    name: "resolved call result constructor",
    code: `const r = await tools.echo({ value: 1 }); ${probe("r.constructor.constructor")}`,
    expected: { status: "ok", returnValue: ISOLATED },
  },
  {
    name: "structured result nested constructor",
    code: `const r = await tools.echo({ value: { deep: [1] } }); ${probe("r.structured.value.deep.constructor.constructor")}`,
    expected: { status: "ok", returnValue: ISOLATED },
  },
  { name: "Promise.constructor", code: probe("Promise.constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  { name: "Error instance constructor chain", code: probe("new Error('x').constructor.constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  {
    name: "caught TypeError constructor chain",
    code: `let caught; try { null.x; } catch (e) { caught = e; } ${probe("caught.constructor.constructor")}`,
    expected: { status: "ok", returnValue: ISOLATED },
  },
  {
    name: "async function constructor",
    code: 'const AF = (async () => {}).constructor; return [AF.name, await AF("return [typeof process, typeof require]")()];',
    expected: { status: "ok", returnValue: ["AsyncFunction", ["undefined", "undefined"]] },
  },
  {
    name: "generator function constructor",
    code: 'const GF = (function* () {}).constructor; return [GF.name, GF("yield typeof process")().next().value];',
    expected: { status: "ok", returnValue: ["GeneratorFunction", "undefined"] },
  },
  {
    name: "async generator function constructor",
    code: 'const AGF = (async function* () {}).constructor; return [AGF.name, (await AGF("yield typeof require")().next()).value];',
    expected: { status: "ok", returnValue: ["AsyncGeneratorFunction", "undefined"] },
  },
  { name: "Reflect.construct(Function)", code: 'return Reflect.construct(Function, ["return [typeof process, typeof globalThis.require]"])();', expected: { status: "ok", returnValue: ["undefined", "undefined"] } },
  { name: "Reflect.getPrototypeOf walk", code: probe("Reflect.getPrototypeOf(tools.echo).constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  { name: "Symbol.constructor", code: probe("Symbol.constructor"), expected: { status: "ok", returnValue: ISOLATED } },
  { name: "Symbol.for registry is the isolate's own", code: 'return [typeof Symbol.for("nodejs.util.inspect.custom"), Symbol.keyFor(Symbol.for("isochain"))];', expected: { status: "ok", returnValue: ["symbol", "isochain"] } },
  {
    name: "caller chain from a getter run by the prelude",
    code: `
      const found = [];
      const value = [];
      Object.defineProperty(value, 0, { enumerable: true, get() {
        let fn; try { fn = arguments.callee.caller; } catch (e) { found.push(e.name); return 1; }
        for (let i = 0; fn && i < 10; i++) { found.push(typeof fn); try { fn = fn.caller; } catch (e) { found.push(e.name); break; } }
        return 1;
      } });
      await tools.spy({ value });
      return found.every((entry) => entry === "function" || entry === "TypeError");
    `,
    expected: { status: "ok", returnValue: true },
  },
  {
    name: "prelude function source names no host path or module loader",
    code: "const text = [tools.echo, console.log, artifact, Object.getOwnPropertyDescriptor(budget, 'total').get].map(String).join('\\n'); return [/require\\(|import\\(|node:|\\/(?:home|work|usr|tmp)\\//.test(text), text.length > 0];",
    expected: { status: "ok", returnValue: [false, true] },
  },
];

runAttackTable("constructor chains", attacks);

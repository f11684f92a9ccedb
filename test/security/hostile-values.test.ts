/**
 * Attack family: hostile values handed to tools: `Symbol.species`, `Symbol.toPrimitive`,
 * `toJSON` (own and inherited), getters, proxies, exotic objects, cycles, deep nesting and
 * non-JSON numbers. Whatever the script does, the host tool receives only plain data (checked
 * by a spy that walks every value it gets: primitives, `Object.prototype` objects and
 * `Array.prototype` arrays, no accessors) and no script code runs on the host: every getter,
 * trap and `toJSON` runs inside the isolate, before the arguments become JSON text.
 */
import { expect } from "vitest";
import { runAttackTable } from "./attack-table.ts";
import type { Attack, Harness } from "./harness.ts";

/** Calls the spy with `args` and returns what the host saw. */
const spy = (setup: string, args: string): string =>
  `${setup}\nconst r = await tools.spy(${args}); return r.status === "ok" ? ["ok", r.structured] : [r.status, r.code];`;

/** The spy ran and reported these keys with no plain-data violations. */
const ok = (keys: readonly string[]): Attack["expected"] => ({ status: "ok", returnValue: ["ok", { violations: [], keys }] });

/** The call came back with this failure code. */
const refused = (code: string): Attack["expected"] => ({ status: "ok", returnValue: ["error", code] });

/** The spy's latest call received exactly `args`. */
const received =
  (args: unknown) =>
  (_result: unknown, harness: Harness): void => {
    expect(harness.ledger.received.filter((entry) => entry.tool === "spy").at(-1)?.args).toEqual(args);
  };

/**
 * Refused calls (arguments not plain data) reach the host as BRIDGE_ERROR: they are counted and
 * recorded, and the tool never executes.
 */
const refusedRow = (attack: Attack): Attack => ({
  ...attack,
  check: async (result, harness) => {
    await attack.check?.(result, harness);
    // The host recorded the call as refused; the invoker returns a rejection before any execute.
    expect(result.callTrace.map((record) => record.code)).toEqual(result.callTrace.map(() => "BRIDGE_ERROR"));
    expect(result.callTrace.length).toBeGreaterThan(0);
  },
});

const attacks: Attack[] = [
  {
    name: "array subclass with a throwing Symbol.species",
    code: spy('class A extends Array { static get [Symbol.species]() { return function () { throw new Error("species"); }; } }', "{ a: A.from([1, 2]) }"),
    expected: ok(["a"]),
    check: received({ a: [1, 2] }),
  },
  refusedRow({
    name: "Symbol.toPrimitive and Symbol.iterator keys are refused (symbol keys)",
    code: spy("", '{ a: { [Symbol.toPrimitive]: () => "prim", [Symbol.iterator]: function* () {} } }'),
    expected: refused("BRIDGE_ERROR"),
  }),
  refusedRow({ name: "own toJSON function is refused", code: spy("", "{ a: { toJSON() { return 1; } } }"), expected: refused("BRIDGE_ERROR"), check: (result) => expect(result.callTrace.map((record) => record.status)).toEqual(["error"]) }),
  {
    name: "inherited Object.prototype.toJSON forges non-object arguments: refused, traced",
    code: 'Object.prototype.toJSON = function () { return "forged"; }; await tools.spy({ a: 1 }); return { whatever: 1 };',
    // The script's return value goes through the same toJSON: it is the script's own data.
    expected: { status: "ok", returnValue: "forged" },
    check: (result) => expect(result.callTrace.map((record) => record.code)).toEqual(["BRIDGE_ERROR"]),
  },
  {
    name: "inherited Object.prototype.toJSON returning undefined: the call is refused, not a throw",
    code:
      "Object.prototype.toJSON = function () { return undefined; }; const r = await tools.spy({ a: 1 });" +
      " delete (Object.prototype as any).toJSON; return [r.status, r.code, r.text];",
    expected: {
      status: "ok",
      returnValue: [
        "error",
        "BRIDGE_ERROR",
        "tools.spy: arguments must be one object of plain JSON data; a toJSON method on a prototype turned them into undefined.",
      ],
    },
    check: (result) => expect(result.callTrace.map((record) => record.code)).toEqual(["BRIDGE_ERROR"]),
  },
  refusedRow({
    name: "a symbol key is refused, not dropped on the way (the tool would get less than the script sent)",
    code: 'const r = await tools.spy({ a: 1, o: { [Symbol("k")]: 2 } }); return [r.status, r.code, r.text];',
    expected: {
      status: "ok",
      returnValue: ["error", "BRIDGE_ERROR", "tools.spy: arguments must be plain JSON data; found a symbol key at .o (keys must be strings: JSON would drop it)."],
    },
  }),
  refusedRow({
    name: "arguments of more than 100 000 values are refused in the isolate, not parsed on the host",
    code: 'const o: Record<string, number> = {}; for (let i = 0; i < 150000; i++) o["k" + i] = i; const r = await tools.spy({ o }); return [r.status, r.code, r.text];',
    expected: {
      status: "ok",
      returnValue: [
        "error",
        "BRIDGE_ERROR",
        "tools.spy: arguments must be plain JSON data; found more than 100000 values (the value, its items and fields) at .o; pass large data as an artifact.",
      ],
    },
  }),
  {
    name: "inherited Array.prototype.toJSON",
    code: 'Array.prototype.toJSON = function () { return "arr"; }; const r = await tools.spy({ a: [1] }); delete Array.prototype.toJSON; return [r.status, r.structured];',
    expected: ok(["a"]),
    check: received({ a: "arr" }),
  },
  {
    name: "Date with a hijacked toISOString",
    code: spy('const d = new Date(0); d.toISOString = () => "hacked";', "{ d }"),
    expected: ok(["d"]),
    check: received({ d: "hacked" }),
  },
  {
    name: "Date.prototype.toJSON returning a function-bearing object",
    code: spy("Date.prototype.toJSON = function () { return { f: () => 1 }; };", "{ d: new Date(0) }"),
    expected: ok(["d"]),
    check: received({ d: {} }),
  },
  refusedRow({ name: "getter on an object property is refused", code: spy("", '{ get secret() { return "x"; } }'), expected: refused("BRIDGE_ERROR") }),
  {
    name: "getter on an array index runs in the isolate only",
    code: spy('const arr = [1, 2]; Object.defineProperty(arr, 0, { get() { return "from getter"; } });', "{ arr }"),
    expected: ok(["arr"]),
    check: received({ arr: ["from getter", 2] }),
  },
  {
    name: "proxy of an array",
    code: spy('const p = new Proxy([1, 2], { get(t, k) { return k === "length" ? 2 : "trap"; } });', "{ p }"),
    expected: ok(["p"]),
    check: received({ p: ["trap", "trap"] }),
  },
  {
    name: "proxy of an object that lies about its keys",
    code: spy(
      'const p = new Proxy({}, { getPrototypeOf() { return Object.prototype; }, ownKeys() { return ["a"]; }, getOwnPropertyDescriptor() { return { value: 1, enumerable: true, configurable: true }; } });',
      "p",
    ),
    expected: ok([]),
    check: received({}),
  },
  {
    name: "null-prototype object",
    code: spy("const o = Object.create(null); o.x = 1;", "o"),
    expected: ok(["x"]),
    check: received({ x: 1 }),
  },
  refusedRow({ name: "class instance is refused", code: spy("class C { x = 1; }", "{ c: new C() }"), expected: refused("BRIDGE_ERROR") }),
  refusedRow({ name: "boxed Number with valueOf is refused", code: spy("const n = new Number(5); n.valueOf = () => 6;", "{ n }"), expected: refused("BRIDGE_ERROR") }),
  refusedRow({ name: "Map is refused", code: spy("", "{ m: new Map([[1, 2]]) }"), expected: refused("BRIDGE_ERROR") }),
  refusedRow({ name: "typed array is refused", code: spy("", "{ t: new Uint8Array(4) }"), expected: refused("BRIDGE_ERROR") }),
  refusedRow({ name: "BigInt is refused", code: spy("", "{ n: 10n }"), expected: refused("BRIDGE_ERROR") }),
  refusedRow({ name: "function is refused", code: spy("", "{ f: () => 1 }"), expected: refused("BRIDGE_ERROR") }),
  refusedRow({ name: "cycle is refused", code: spy("const o: any = {}; o.self = o;", "{ o }"), expected: refused("BRIDGE_ERROR") }),
  {
    name: "100 levels of nesting pass the isolate and are refused by the host's copy",
    code: spy("let v: any = 1; for (let i = 0; i < 100; i++) v = { v };", "{ v }"),
    expected: refused("INVALID_ARGUMENTS"),
  },
  refusedRow({
    name: "300 levels of nesting are refused inside the isolate",
    code: spy("let v: any = 1; for (let i = 0; i < 300; i++) v = [v];", "{ v }"),
    expected: refused("BRIDGE_ERROR"),
  }),
  refusedRow({ name: "arguments that are an array are refused", code: spy("", "[1, 2] as any"), expected: refused("BRIDGE_ERROR") }),
  refusedRow({ name: "arguments that are a string are refused", code: spy("", '"{}" as any'), expected: refused("BRIDGE_ERROR") }),
  {
    name: "NaN, Infinity, -0 and undefined follow JSON",
    code: spy("", "{ n: NaN, i: -Infinity, z: -0, u: undefined, list: [undefined] }"),
    expected: ok(["n", "i", "z", "list"]),
    check: received({ n: null, i: null, z: 0, list: [null] }),
  },
  {
    name: "extreme numbers and lone surrogates arrive exactly",
    code: spy("", '{ big: 1e308, tiny: 5e-324, unsafe: 2 ** 53 + 2, lone: "\\ud800", pair: "\\ud83d\\ude80", nul: "a\\u0000b" }'),
    expected: ok(["big", "tiny", "unsafe", "lone", "pair", "nul"]),
    check: received({ big: 1e308, tiny: 5e-324, unsafe: 2 ** 53 + 2, lone: "\ud800", pair: "\ud83d\ude80", nul: "a\u0000b" }),
  },
  {
    name: "a replaced JSON.stringify cannot change what the host receives",
    code: spy('JSON.stringify = () => "{\\"forged\\":true}"; Object.keys = () => [];', "{ real: 1 }"),
    expected: ok(["real"]),
    check: received({ real: 1 }),
  },
  refusedRow({
    name: "arguments over the 8 MiB bridge limit are refused",
    code: spy('const blob = "x".repeat(9 * 1024 * 1024);', "{ blob }"),
    policy: { memoryLimitMb: 96, cpuTimeMs: 3000, totalTimeoutMs: 4000 },
    expected: refused("BRIDGE_ERROR"),
  }),
];

runAttackTable("hostile values handed to tools", attacks);

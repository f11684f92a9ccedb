/**
 * Attack family: prototype pollution through both directions of the bridge. Tool results whose
 * JSON carries `__proto__`, `constructor` and `prototype` keys come back to the script as own
 * data, never as prototypes; arguments carrying them reach the host with `__proto__` dropped and
 * the rest as plain own keys. After every row the host's `Object.prototype` has exactly its
 * original keys and, inside the next isolate, `({}).polluted` is undefined.
 */
import { expect } from "vitest";
import { runAttackTable } from "./attack-table.ts";
import type { Attack, Harness } from "./harness.ts";

/** Runs `emit(kind)` and reports what the script sees of the result and of its own prototypes. */
const emit = (kind: string, read: string): string => `
  const r = await tools.emit({ kind: ${JSON.stringify(kind)} });
  const seen = ${read};
  return { status: r.status, seen, polluted: [({}).polluted ?? null, ([] as any).polluted ?? null, Object.prototype.hasOwnProperty("polluted")] };
`;
const CLEAN = [null, null, false];

const received = (expected: unknown) => (_result: unknown, harness: Harness) => {
  expect(harness.ledger.received.at(-1)?.args).toEqual(expected);
  expect(Object.getPrototypeOf(harness.ledger.received.at(-1)?.args)).toBe(Object.prototype);
};

const attacks: Attack[] = [
  {
    name: "result with a __proto__ key (JSON.parse-made own property)",
    code: emit("proto-key", "[r.structured.safe, Object.getPrototypeOf(r.structured) === Object.prototype, r.structured.polluted ?? null]"),
    expected: { status: "ok", returnValue: { status: "ok", seen: [1, true, null], polluted: CLEAN } },
  },
  {
    name: "result with constructor.prototype keys",
    code: emit("constructor-prototype", "[r.structured.constructor.prototype.polluted, typeof Object.prototype.constructor]"),
    expected: { status: "ok", returnValue: { status: "ok", seen: ["result", "function"], polluted: CLEAN } },
  },
  {
    name: "structuredContent with nested __proto__ keys",
    code: emit("structured-proto", "[Object.getPrototypeOf(r.structured) === Object.prototype, Object.getPrototypeOf(r.structured.nested) === Object.prototype, r.text]"),
    expected: { status: "ok", returnValue: { status: "ok", seen: [true, true, "see structured"], polluted: CLEAN } },
  },
  {
    name: "text that is JSON with __proto__, parsed by the script",
    code: emit("text-proto-json", "[JSON.parse(r.text).polluted ?? null, Object.keys(JSON.parse(r.text))]"),
    expected: { status: "ok", returnValue: { status: "ok", seen: [null, ["__proto__"]], polluted: CLEAN } },
  },
  {
    name: "result keys that shadow Object.prototype methods",
    code: emit("prototype-key", "[r.structured.hasOwnProperty, r.structured.toString, Object.prototype.hasOwnProperty.call(r.structured, 'prototype')]"),
    expected: { status: "ok", returnValue: { status: "ok", seen: [2, 3, true], polluted: CLEAN } },
  },
  {
    name: "array result with __proto__ items",
    code: emit("array-proto", "[Array.isArray(r.structured.value), r.structured.value[0].polluted ?? null]"),
    expected: { status: "ok", returnValue: { status: "ok", seen: [true, null], polluted: CLEAN } },
  },
  {
    name: "arguments with a JSON.parse-made __proto__ key",
    code: 'const r = await tools.spy(JSON.parse(\'{"__proto__": {"polluted": "args"}, "a": 1}\')); return r.structured.keys;',
    expected: { status: "ok", returnValue: ["a"] },
    check: received({ a: 1 }),
  },
  {
    name: "arguments with a computed __proto__ key",
    code: 'const r = await tools.spy({ ["__proto__"]: { polluted: "args" }, b: 2 }); return r.structured.keys;',
    expected: { status: "ok", returnValue: ["b"] },
    check: received({ b: 2 }),
  },
  {
    name: "arguments with a defineProperty-made enumerable __proto__",
    code: 'const o = {}; Object.defineProperty(o, "__proto__", { value: { polluted: "args" }, enumerable: true }); const r = await tools.spy(o); return r.structured.keys;',
    expected: { status: "ok", returnValue: [] },
    check: received({}),
  },
  {
    name: "arguments with constructor.prototype keys arrive as plain own data",
    code: 'const r = await tools.spy({ constructor: { prototype: { polluted: "args" } } }); return r.structured.keys;',
    expected: { status: "ok", returnValue: ["constructor"] },
    check: received({ constructor: { prototype: { polluted: "args" } } }),
  },
  {
    name: "deeply placed __proto__ keys in arguments",
    code: 'const r = await tools.spy({ list: [JSON.parse(\'{"__proto__": {"polluted": 1}, "k": 1}\')], deep: { x: JSON.parse(\'{"__proto__": {"polluted": 2}}\') } }); return r.status;',
    expected: { status: "ok", returnValue: "ok" },
    check: received({ list: [{ k: 1 }], deep: { x: {} } }),
  },
  {
    name: "the script polluting its own Object.prototype does not travel with its arguments",
    code: 'Object.prototype.polluted = "isolate"; (Array.prototype as any).polluted = "isolate"; const r = await tools.spy({ a: [1] }); return r.structured.keys;',
    expected: { status: "ok", returnValue: ["a"] },
    check: received({ a: [1] }),
  },
  {
    name: "a __proto__ literal makes a non-plain object: refused in the isolate",
    code: 'const r = await tools.spy({ __proto__: artifact("sha256:" + "0".repeat(64)) } as any); return [r.status, r.structured?.keys ?? r.code];',
    expected: { status: "ok", returnValue: ["error", "BRIDGE_ERROR"] },
  },
];

runAttackTable("prototype pollution", attacks);

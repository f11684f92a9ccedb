import { describe, expect, it } from "vitest";
import { cloneArguments, MAX_ARGUMENT_DEPTH } from "../../src/invoker/clone-arguments.ts";

function reason(value: unknown, options: Parameters<typeof cloneArguments>[1] = {}): string {
  const result = cloneArguments(value, options);
  if (result.ok) throw new Error("expected a refusal");
  return result.reason;
}

describe("cloneArguments", () => {
  it("copies plain JSON data into fresh objects", () => {
    const input = { a: 1, b: ["x", { c: true, d: null }], e: { f: -0.5 } };
    const result = cloneArguments(input);
    expect(result).toEqual({ ok: true, value: input });
    if (!result.ok) return;
    const copy = result.value as typeof input;
    expect(copy).not.toBe(input);
    expect(copy.b).not.toBe(input.b);
    expect(copy.b[1]).not.toBe(input.b[1]);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
  });

  it("follows JSON for undefined: fields left out, array items null", () => {
    expect(cloneArguments({ a: undefined, b: [undefined, 1] })).toEqual({ ok: true, value: { b: [null, 1] } });
  });

  it("accepts null-prototype objects and shared (non-cyclic) references", () => {
    const shared = { x: 1 };
    const bare = Object.assign(Object.create(null) as object, { k: "v" });
    expect(cloneArguments({ p: shared, q: shared, bare })).toEqual({ ok: true, value: { p: { x: 1 }, q: { x: 1 }, bare: { k: "v" } } });
  });

  it("drops __proto__ keys and never touches a prototype", () => {
    const parsed = JSON.parse('{"__proto__": {"polluted": true}, "ok": 1, "nested": {"__proto__": {"polluted": true}}}');
    const result = cloneArguments(parsed);
    expect(result).toEqual({ ok: true, value: { ok: 1, nested: {} } });
    if (!result.ok) return;
    expect(Object.keys(result.value as object)).toEqual(["ok", "nested"]);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(result.value)).toBe(Object.prototype);
  });

  it("keeps constructor/prototype keys as plain data", () => {
    const result = cloneArguments(JSON.parse('{"constructor": {"prototype": {"polluted": true}}}'));
    expect(result.ok).toBe(true);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(Object.prototype.hasOwnProperty.call(Object.prototype, "polluted")).toBe(false);
  });

  it("refuses getters without calling them", () => {
    let reads = 0;
    const value = {
      get n() {
        return ++reads;
      },
    };
    expect(reason({ deep: [value] })).toBe('argument "deep[0].n" is a getter/setter property; pass plain data');
    expect(reads).toBe(0);
  });

  it("refuses proxies without running a trap", () => {
    let traps = 0;
    const proxy = new Proxy({ a: 1 }, {
      get(target, key) {
        traps++;
        return Reflect.get(target, key);
      },
      ownKeys(target) {
        traps++;
        return Reflect.ownKeys(target);
      },
    });
    expect(reason({ p: proxy })).toContain('argument "p" is a Proxy');
    expect(reason(new Proxy([], {}))).toContain("Proxy");
    expect(traps).toBe(0);
  });

  it.each([
    ["a function", { f: () => 1 }, 'argument "f" is a function'],
    ["a symbol value", { s: Symbol("x") }, 'argument "s" is a symbol'],
    ["a symbol key", { a: { b: 1, [Symbol("k")]: 1 } }, 'argument "a" has a symbol key'],
    ["a BigInt", { n: 10n }, 'argument "n" is a BigInt'],
    ["NaN", { n: Number.NaN }, 'argument "n" is NaN'],
    ["Infinity", { n: Infinity }, "Infinity"],
    ["a Date", { d: new Date(0) }, 'argument "d" is a Date, not a plain object'],
    ["a Map", { m: new Map() }, "is a Map"],
    ["a class instance", { c: new (class Point {})() }, "is a Point"],
    ["a typed array", { t: new Uint8Array(2) }, "Uint8Array"],
    ["an array subclass", { a: new (class Rows extends Array {})() }, "array subclass"],
    ["a sparse array", { a: [1, , 3] }, 'argument "a[1]" is a hole'],
  ])("refuses %s", (_label, value, expected) => {
    expect(reason(value)).toContain(expected);
  });

  it("refuses cycles", () => {
    const a: Record<string, unknown> = { x: 1 };
    a.self = a;
    expect(reason(a)).toContain('argument "self" refers back to itself');
    const list: unknown[] = [];
    list.push(list);
    expect(reason({ list })).toContain("cycle");
  });

  it("refuses nesting deeper than the limit and accepts the limit itself", () => {
    const nest = (depth: number): unknown => {
      let value: unknown = 1;
      for (let i = 0; i < depth; i++) value = { v: value };
      return value;
    };
    expect(cloneArguments(nest(MAX_ARGUMENT_DEPTH)).ok).toBe(true);
    expect(reason(nest(MAX_ARGUMENT_DEPTH + 1))).toContain(`deeper than ${MAX_ARGUMENT_DEPTH}`);
  });

  it("stops a shared-reference graph that would expand exponentially", () => {
    let node: unknown = [1];
    for (let i = 0; i < 40; i++) node = [node, node];
    expect(reason(node, { maxNodes: 10_000 })).toContain("more than 10000 values");
    expect(cloneArguments(Array.from({ length: 9_999 }, () => 0), { maxNodes: 10_000 }).ok).toBe(true);
  });
});

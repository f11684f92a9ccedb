import { describe, expect, it } from "vitest";
import { findNonPlainData, utf8Length } from "../../prelude/plain-data.ts";

describe("findNonPlainData", () => {
  it("accepts JSON data, dates, null-prototype objects and shared (acyclic) references", () => {
    const shared = { x: 1 };
    const bare = Object.assign(Object.create(null) as object, { a: 1 });
    expect(findNonPlainData({ a: [1, "s", null, true, { b: undefined }], d: new Date(0), bare, s1: shared, s2: shared })).toBeUndefined();
  });

  it.each([
    ["a function", { f: () => 1 }, "a function at .f"],
    ["a symbol", [1, Symbol("s")], "a symbol at [1]"],
    ["a symbol key", { o: { a: 1, [Symbol("k")]: 2 } }, "a symbol key at .o (keys must be strings: JSON would drop it)"],
    ["a symbol key at the top", { [Symbol.iterator]: 1 }, "a symbol key at the top level (keys must be strings: JSON would drop it)"],
    ["a symbol key on an array", { list: Object.assign([1, 2], { [Symbol("k")]: 3 }) }, "a symbol key at .list (keys must be strings: JSON would drop it)"],
    ["a BigInt", { n: 2n }, "a BigInt at .n (send it as a string or number)"],
    ["a Set", { m: new Set() }, "a Set at .m (only plain objects, arrays and primitives cross)"],
    ["a typed array", { u: new Uint8Array(1) }, "a Uint8Array at .u (only plain objects, arrays and primitives cross)"],
    ["a promise (a tool call not awaited)", { r: Promise.resolve(1) }, "a Promise at .r (a tool call's result is a promise: await it, e.g. `await tools.name({...})`)"],
  ])("names %s and where it sits", (_label, value, message) => {
    expect(findNonPlainData(value)).toBe(message);
  });

  it("leaves a non-enumerable symbol key out, as JSON leaves out a non-enumerable string key", () => {
    const hidden = Object.defineProperty(Object.defineProperty({ a: 1 }, Symbol("marker"), { value: 1, enumerable: false }), "h", { value: 2, enumerable: false });
    expect(findNonPlainData({ hidden })).toBeUndefined();
    expect(JSON.stringify({ hidden })).toBe('{"hidden":{"a":1}}');
  });

  it("refuses more than maxValues values (the value, its items and fields), before walking them", () => {
    const wide = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, [1, 2]]));
    expect(findNonPlainData(wide, 151)).toBeUndefined(); // the object + 50 fields + 100 items
    expect(findNonPlainData(wide, 150)).toBe("more than 150 values (the value, its items and fields) at .k49; pass large data as an artifact");
    expect(findNonPlainData({ list: new Array(10).fill(0) }, 5)).toBe("more than 5 values (the value, its items and fields) at .list; pass large data as an artifact");
    expect(findNonPlainData({ list: new Array(10).fill(0) })).toBeUndefined(); // no bound by default
  });

  it("names cycles, getters and over-deep values", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    expect(findNonPlainData(cyclic)).toBe("a cycle at .self");
    expect(findNonPlainData({ get g() { return 1; } })).toBe("a getter or setter at .g");
    let deep: unknown = 1;
    for (let i = 0; i < 300; i++) deep = [deep];
    expect(findNonPlainData(deep)).toMatch(/nested deeper than 200 levels/);
  });

  it("keeps each walk's own state when a proxy trap starts another walk", () => {
    let inner: string | undefined;
    const reentrant = new Proxy(
      { a: 1 },
      {
        getPrototypeOf: () => {
          inner = findNonPlainData({ deep: [0, { f: () => 1 }] });
          return Object.prototype;
        },
      },
    );
    expect(findNonPlainData({ x: [reentrant, { m: new Map() }] })).toBe("a Map at .x[1].m (only plain objects, arrays and primitives cross)");
    expect(inner).toBe("a function at .deep[1].f");
  });

  it("survives a proxy whose traps throw", () => {
    const hostile = new Proxy({}, { ownKeys: () => { throw new Error("trap"); } });
    expect(findNonPlainData(hostile)).toBe("a value that could not be inspected");
  });
});

describe("utf8Length", () => {
  it.each(["", "abc", "é", "✓", "𝄞", "a\uD800b", "mixed é✓𝄞 text"])("matches Buffer.byteLength for %j", (text) => {
    expect(utf8Length(text)).toBe(Buffer.byteLength(text));
  });
});

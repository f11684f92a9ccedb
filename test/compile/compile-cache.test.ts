import { describe, expect, it } from "vitest";
import { CompileCache } from "../../src/compile/index.ts";

describe("CompileCache", () => {
  it("evicts past maxEntries, keeping the entry read since it was stored", () => {
    const cache = new CompileCache<number>({ maxEntries: 2 });
    cache.set("a", 1);
    cache.set("b", 2);
    expect(cache.get("a")).toBe(1); // a is now the most recent
    cache.set("c", 3);
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toBe(1);
    expect(cache.get("c")).toBe(3);
    expect(cache.size).toBe(2);
  });

  it("gives an entry read since it was stored a second chance, and evicts the oldest unread one", () => {
    const cache = new CompileCache<number>({ maxEntries: 3 });
    cache.set("a", 1);
    cache.set("b", 2);
    cache.set("c", 3);
    expect(cache.get("a")).toBe(1);
    cache.set("d", 4); // a was read: it moves behind d; b, the oldest unread, goes
    expect(cache.get("b")).toBeUndefined();
    cache.set("e", 5); // c goes (unread); the order is now d, a, e
    expect(cache.get("c")).toBeUndefined();
    cache.set("f", 6); // d, stored before a's second chance and unread, goes (LRU would take a)
    expect(cache.get("d")).toBeUndefined();
    expect([cache.get("a"), cache.get("e"), cache.get("f")]).toEqual([1, 5, 6]);
    expect(cache.size).toBe(3);
  });

  it("evicts past maxBytes, counting source and compiled text", () => {
    const cache = new CompileCache<number>({ maxBytes: 4096 });
    for (const key of ["a", "b", "c", "d"]) cache.set(key.repeat(300), 1, 150); // 900 bytes each
    expect(cache.bytes).toBe(3600);
    cache.set("e".repeat(300), 5, 150);
    expect(cache.get("a".repeat(300))).toBeUndefined();
    expect(cache.get("b".repeat(300))).toBe(1);
    expect(cache.bytes).toBe(3600);
  });

  it("does not keep an entry larger than a quarter of the byte cap", () => {
    const cache = new CompileCache<number>({ maxBytes: 4096 });
    cache.set("k".repeat(600), 1);
    expect(cache.size).toBe(0);
  });

  it("replaces an entry for the same source and clears", () => {
    const cache = new CompileCache<number>();
    cache.set("s", 1);
    cache.set("s", 2);
    expect(cache.get("s")).toBe(2);
    expect(cache.bytes).toBe(2);
    cache.clear();
    expect(cache.size).toBe(0);
    expect(cache.bytes).toBe(0);
  });
});

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
    cache.set("d", 4); // a was read: it moves to the end; b, the oldest unread, goes
    expect(cache.get("b")).toBeUndefined();
    expect([cache.get("a"), cache.get("c"), cache.get("d")]).toEqual([1, 3, 4]);
    // Second chance, not least recently used: b2 is read before a2, yet a2 goes, because each
    // read entry passes once, in the order they were stored.
    const clock = new CompileCache<number>({ maxEntries: 2 });
    clock.set("a2", 1);
    clock.set("b2", 2);
    clock.get("b2");
    clock.get("a2");
    clock.set("c2", 3);
    expect([clock.get("a2"), clock.get("b2"), clock.get("c2")]).toEqual([undefined, 2, 3]);
  });

  it("keeps the entry just stored even when every older one was read", () => {
    const cache = new CompileCache<number>({ maxEntries: 3 });
    for (const key of ["a", "b", "c"]) cache.set(key, 1);
    for (const key of ["a", "b", "c"]) cache.get(key);
    cache.set("d", 4);
    expect(cache.get("d")).toBe(4);
    expect(cache.size).toBe(3);
    // The same under the byte bound.
    const bytes = new CompileCache<number>({ maxBytes: 4096 });
    for (const key of ["a", "b", "c", "d"]) bytes.set(key.repeat(300), 1, 150); // 900 bytes each
    for (const key of ["a", "b", "c", "d"]) bytes.get(key.repeat(300));
    bytes.set("e".repeat(300), 5, 150);
    expect(bytes.get("e".repeat(300))).toBe(5);
    expect(bytes.bytes).toBeLessThanOrEqual(4096);
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

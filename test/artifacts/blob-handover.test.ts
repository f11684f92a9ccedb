import { describe, expect, it } from "vitest";
import { toBlobBytes } from "../../src/artifacts/check-blob-args.ts";
import { MemoryBlobStore } from "../../src/artifacts/memory-blob-store.ts";
import { handOverBytes } from "../../src/kernel/blob-handover.ts";
import { sha256Hex } from "../../src/kernel/index.ts";

describe("bytes handed over to the built-in stores", () => {
  it("are kept as they are, once; anything else is copied", () => {
    const given = handOverBytes(new TextEncoder().encode("given away"));
    const stored = toBlobBytes(given);
    expect(stored.buffer).toBe(given.buffer); // the same memory, not a copy
    expect(stored).toEqual(given);
    // the mark is consumed: the same array passed again is copied like any other
    const again = toBlobBytes(given);
    expect(again).not.toBe(given);
    expect(again).toEqual(given);
    const kept = new Uint8Array([1, 2, 3]);
    expect(toBlobBytes(kept)).not.toBe(kept);
  });

  it("are copied when they are a view into a larger buffer, which keeping would hold whole", () => {
    const backing = new Uint8Array(64 * 1024);
    backing.set([7, 8, 9], 10);
    const view = handOverBytes(backing.subarray(10, 13));
    const stored = toBlobBytes(view);
    expect(stored).not.toBe(view);
    expect(stored.buffer.byteLength).toBe(3);
    expect(stored).toEqual(new Uint8Array([7, 8, 9]));
  });

  it("reach the store's content and ref unchanged", async () => {
    const store = new MemoryBlobStore();
    const text = "é😀 offloaded ".repeat(10_000);
    const ref = await store.put(handOverBytes(new TextEncoder().encode(text)));
    expect(ref).toBe(`sha256:${sha256Hex(text)}`);
    expect(new TextDecoder().decode(await store.resolve(ref))).toBe(text);
  });
});

describe("MemoryBlobStore and Node Buffers", () => {
  it("keeps handed-over Buffer bytes safe from a caller mutating what resolve returned", async () => {
    const store = new MemoryBlobStore();
    const bytes = Buffer.alloc(8192, 0x61); // a Buffer owning its whole memory
    const ref = await store.put(handOverBytes(bytes));
    const first = await store.resolve(ref);
    first[0] = 0x62;
    expect((await store.resolve(ref))[0]).toBe(0x61);
  });
});

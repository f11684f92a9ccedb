import { describe, expect, it } from "vitest";
import { MemoryBlobStore } from "../../src/artifacts/memory-blob-store.ts";
import { runBlobStoreContract } from "../contracts/blob-store.contract.ts";

runBlobStoreContract("MemoryBlobStore", { create: () => new MemoryBlobStore(), createWithClock: (now) => new MemoryBlobStore({ now }) });

describe("MemoryBlobStore", () => {
  it("stamps createdAt with the injected clock", async () => {
    const store = new MemoryBlobStore({ now: () => 1234 });
    const ref = await store.put("x");
    expect((await store.stat(ref))?.createdAt).toBe(1234);
    expect((await store.gc({ olderThanMs: 10 })).removed).toBe(0);
  });

  it("keeps nothing across instances", async () => {
    const ref = await new MemoryBlobStore().put("x");
    expect(await new MemoryBlobStore().stat(ref)).toBeUndefined();
  });
});

import { describe, expect, it } from "vitest";
import { MemoryTraceStore } from "../../src/trace/memory-trace-store.ts";
import { runTraceStoreContract } from "../contracts/trace-store.contract.ts";

runTraceStoreContract("MemoryTraceStore", { create: () => new MemoryTraceStore() });

describe("MemoryTraceStore", () => {
  it("is not durable", () => {
    expect(new MemoryTraceStore().durable).toBe(false);
  });
});

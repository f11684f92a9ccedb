import { describe, expect, it } from "vitest";
import { foldTraceEvents } from "../../src/trace/fold-trace-events.ts";
import { MemoryTraceStore } from "../../src/trace/memory-trace-store.ts";
import { runTraceStoreContract } from "../contracts/trace-store.contract.ts";
import { LONE_SURROGATE_TEXT, loneSurrogateEvents } from "./fixtures/sample-events.ts";

runTraceStoreContract("MemoryTraceStore", { create: () => new MemoryTraceStore() });

describe("MemoryTraceStore", () => {
  it("is not durable", () => {
    expect(new MemoryTraceStore().durable).toBe(false);
  });

  it("gives back strings holding lone surrogates as they were (it keeps the file store's frames)", async () => {
    const store = new MemoryTraceStore();
    const events = loneSurrogateEvents("lone");
    for (const event of events) await store.append("lone", event);
    const trace = await store.load("lone");
    expect(trace).toEqual(foldTraceEvents(events));
    const structured = trace.calls[0]?.result?.structured as { short: string };
    expect([...structured.short].map((char) => char.charCodeAt(0))).toEqual([97, 0xd800, 98]);
    expect(structured.short).toBe(LONE_SURROGATE_TEXT);
  });
});

import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ApprovalStore } from "../../src/approval/approval-store.ts";
import { FileApprovalStore } from "../../src/approval/file-approval-store.ts";
import { MemoryApprovalStore } from "../../src/approval/memory-approval-store.ts";
import { DEFAULT_APPROVAL_POLL_INTERVAL_MS, QueueApprovalHandler } from "../../src/approval/queue-approval-handler.ts";
import { makeApprovalRequest } from "../contracts/approval-store.contract.ts";
import { expectCode } from "../contracts/blob-store.contract.ts";
import { storeRequeuedDuringFirstDecide } from "./requeue-in-another-process.ts";

const root = await mkdtemp(join(tmpdir(), "isochain-queue-"));
afterAll(() => rm(root, { recursive: true, force: true }));
let counter = 0;
const freshDir = (): string => join(root, `store-${(counter += 1)}`);
const live = (): AbortSignal => new AbortController().signal;

async function until(check: () => Promise<boolean> | boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** A store that counts reads, to see whether a settled waiter still polls. */
function countingStore(inner: ApprovalStore): ApprovalStore & { reads: number } {
  const counted = {
    reads: 0,
    putPending: (r: Parameters<ApprovalStore["putPending"]>[0]) => inner.putPending(r),
    listPending: () => inner.listPending(),
    get: (id: string) => {
      counted.reads += 1;
      return inner.get(id);
    },
    decide: (id: string, d: Parameters<ApprovalStore["decide"]>[1]) => inner.decide(id, d),
    getDecision: (id: string) => {
      counted.reads += 1;
      return inner.getDecision(id);
    },
    remove: (id: string) => inner.remove(id),
  };
  return counted;
}

describe("QueueApprovalHandler", () => {
  it("defaults to a memory store and a 250 ms poll interval", () => {
    const handler = new QueueApprovalHandler();
    expect(DEFAULT_APPROVAL_POLL_INTERVAL_MS).toBe(250);
    expect(handler.pollIntervalMs).toBe(250);
    expect(handler.store).toBeInstanceOf(MemoryApprovalStore);
  });

  it("refuses a poll interval that is not a positive number", () => {
    for (const pollIntervalMs of [0, -5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new QueueApprovalHandler({ pollIntervalMs })).toThrowError(expect.objectContaining({ code: "ARGUMENT_INVALID" }));
    }
  });

  it("queues the request, lists it as pending, and resolves with an in-process decision at once", async () => {
    const handler = new QueueApprovalHandler({ pollIntervalMs: 60_000 });
    const request = makeApprovalRequest();
    const waiting = handler.request(request, { signal: live() });
    await until(async () => (await handler.pending()).length === 1);
    expect(await handler.pending()).toEqual([request]);
    await handler.decide("req-1", "skipped");
    await expect(waiting).resolves.toBe("skipped");
  });

  it("removes the entry once its decision is consumed", async () => {
    const handler = new QueueApprovalHandler({ pollIntervalMs: 60_000 });
    const waiting = handler.request(makeApprovalRequest(), { signal: live() });
    await until(async () => (await handler.pending()).length === 1);
    await handler.decide("req-1", "approved");
    await waiting;
    expect(await handler.store.get("req-1")).toBeUndefined();
    expect(await handler.store.getDecision("req-1")).toBeUndefined();
  });

  it("throws APPROVAL_NOT_FOUND when deciding an unknown id, and ARGUMENT_INVALID for a bad decision", async () => {
    const handler = new QueueApprovalHandler();
    await expectCode(handler.decide("ghost", "approved"), "APPROVAL_NOT_FOUND");
    await expectCode(handler.decide("ghost", "ok" as "approved"), "ARGUMENT_INVALID");
  });

  it("delivers a decision made by another instance over the same FileApprovalStore", async () => {
    const dir = freshDir();
    const first = new QueueApprovalHandler({ store: new FileApprovalStore({ dir }), pollIntervalMs: 10 });
    const second = new QueueApprovalHandler({ store: new FileApprovalStore({ dir }), pollIntervalMs: 10 });
    const request = makeApprovalRequest({ id: "cross-process" });
    const waiting = first.request(request, { signal: live() });
    await until(async () => (await second.pending()).length === 1);
    expect(await second.pending()).toEqual([request]);
    await second.decide("cross-process", "approved");
    await expect(waiting).resolves.toBe("approved");
    await until(async () => (await readdir(dir)).length === 0);
  });

  it("does not answer a waiter with a decide that the store did not keep for the request now queued", async () => {
    const dir = freshDir();
    // decide reads the clock after it has read the request and before it records the decision:
    // right there, another process removes the id and queues it again with other args.
    const { store, clockReads } = storeRequeuedDuringFirstDecide(dir, makeApprovalRequest({ args: { amount: 1_000_000 } }));
    const handler = new QueueApprovalHandler({ store, pollIntervalMs: 60_000 });
    let outcome: string | undefined;
    const waiting = handler.request(makeApprovalRequest({ args: { amount: 1 } }), { signal: live() }).then((d) => (outcome = d));
    await until(async () => (await handler.pending()).length === 1);
    await handler.decide("req-1", "approved");
    expect(clockReads()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(outcome).toBeUndefined();
    expect(await handler.pending()).toEqual([makeApprovalRequest({ args: { amount: 1_000_000 } })]);
    await handler.decide("req-1", "denied");
    await expect(waiting).resolves.toBe("denied");
  });

  it("returns a decision already in the store for the id (given while this process was down)", async () => {
    const dir = freshDir();
    const before = new FileApprovalStore({ dir });
    await before.putPending(makeApprovalRequest({ id: "resumed" }));
    await before.decide("resumed", "denied");
    const handler = new QueueApprovalHandler({ store: new FileApprovalStore({ dir }), pollIntervalMs: 60_000 });
    await expect(handler.request(makeApprovalRequest({ id: "resumed" }), { signal: live() })).resolves.toBe("denied");
    expect(await readdir(dir)).toEqual([]);
  });

  it("resolves denied when the signal aborts while waiting, and removes the entry", async () => {
    const handler = new QueueApprovalHandler({ pollIntervalMs: 60_000 });
    const controller = new AbortController();
    const waiting = handler.request(makeApprovalRequest(), { signal: controller.signal });
    await until(async () => (await handler.pending()).length === 1);
    controller.abort();
    await expect(waiting).resolves.toBe("denied");
    expect(await handler.pending()).toEqual([]);
    expect(await handler.store.get("req-1")).toBeUndefined();
    await expectCode(handler.decide("req-1", "approved"), "APPROVAL_NOT_FOUND");
  });

  it("resolves denied without queueing when the signal is already aborted", async () => {
    const handler = new QueueApprovalHandler();
    await expect(handler.request(makeApprovalRequest(), { signal: AbortSignal.abort() })).resolves.toBe("denied");
    expect(await handler.pending()).toEqual([]);
  });

  it("resolves denied when the pending entry vanishes from the store without a decision", async () => {
    const handler = new QueueApprovalHandler({ pollIntervalMs: 5 });
    const waiting = handler.request(makeApprovalRequest(), { signal: live() });
    await until(async () => (await handler.pending()).length === 1);
    await handler.store.remove("req-1");
    await expect(waiting).resolves.toBe("denied");
  });

  it("keeps waiters apart: each gets its own decision", async () => {
    const handler = new QueueApprovalHandler({ pollIntervalMs: 60_000 });
    const a = handler.request(makeApprovalRequest({ id: "a" }), { signal: live() });
    const b = handler.request(makeApprovalRequest({ id: "b" }), { signal: live() });
    await until(async () => (await handler.pending()).length === 2);
    await handler.decide("b", "denied");
    await handler.decide("a", "approved");
    expect(await Promise.all([a, b])).toEqual(["approved", "denied"]);
  });

  it("stops polling once a waiter settles", async () => {
    const store = countingStore(new MemoryApprovalStore());
    const handler = new QueueApprovalHandler({ store, pollIntervalMs: 2 });
    const waiting = handler.request(makeApprovalRequest(), { signal: live() });
    await until(() => store.reads > 3);
    await handler.decide("req-1", "approved");
    await waiting;
    const reads = store.reads;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(store.reads).toBe(reads);
  });

  it("keeps polling through a transient store failure", async () => {
    const inner = new MemoryApprovalStore();
    let failures = 0;
    const flaky: ApprovalStore = {
      putPending: (r) => inner.putPending(r),
      listPending: () => inner.listPending(),
      get: (id) => inner.get(id),
      decide: (id, d) => inner.decide(id, d),
      getDecision: (id) => (failures-- > 0 ? Promise.reject(new Error("disk hiccup")) : inner.getDecision(id)),
      remove: (id) => inner.remove(id),
    };
    const handler = new QueueApprovalHandler({ store: flaky, pollIntervalMs: 2 });
    const waiting = handler.request(makeApprovalRequest(), { signal: live() });
    await until(async () => (await inner.listPending()).length === 1);
    failures = 3; // the next three polls fail
    await inner.decide("req-1", "approved");
    await expect(waiting).resolves.toBe("approved");
    expect(failures).toBeLessThan(0);
  });

  it("rejects with the store's error when the request cannot be recorded", async () => {
    const file = join(root, `blocker-${(counter += 1)}`);
    await writeFile(file, "x");
    const handler = new QueueApprovalHandler({ store: new FileApprovalStore({ dir: file }) });
    await expectCode(handler.request(makeApprovalRequest(), { signal: live() }), "STORE_FAILED");
  });

  it("rejects a malformed request with ARGUMENT_INVALID", async () => {
    const handler = new QueueApprovalHandler();
    await expectCode(handler.request(makeApprovalRequest({ id: "" }), { signal: live() }), "ARGUMENT_INVALID");
  });
});

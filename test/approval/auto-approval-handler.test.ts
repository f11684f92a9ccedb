import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { AutoApprovalHandler } from "../../src/approval/auto-approval-handler.ts";
import type { ApprovalDecision } from "../../src/kernel/index.ts";
import { makeApprovalRequest } from "../contracts/approval-store.contract.ts";
import { expectCode } from "../contracts/blob-store.contract.ts";

const live = (): AbortSignal => new AbortController().signal;

describe("AutoApprovalHandler", () => {
  it("approves by default", async () => {
    await expect(new AutoApprovalHandler().request(makeApprovalRequest(), { signal: live() })).resolves.toBe("approved");
  });

  for (const decision of ["approved", "denied", "skipped"] as const) {
    it(`answers every request with a fixed "${decision}"`, async () => {
      const handler = new AutoApprovalHandler(decision);
      await expect(handler.request(makeApprovalRequest(), { signal: live() })).resolves.toBe(decision);
      await expect(handler.request(makeApprovalRequest({ id: "2" }), { signal: live() })).resolves.toBe(decision);
    });
  }

  it("refuses a fixed value that is not a decision", () => {
    expect(() => new AutoApprovalHandler("sure" as ApprovalDecision)).toThrowError(expect.objectContaining({ code: "ARGUMENT_INVALID" }));
  });

  it("asks a policy function, sync or async, per request", async () => {
    const handler = new AutoApprovalHandler((request) => (request.risk === "critical" ? "denied" : "approved"));
    await expect(handler.request(makeApprovalRequest({ risk: "high" }), { signal: live() })).resolves.toBe("approved");
    await expect(handler.request(makeApprovalRequest({ risk: "critical" }), { signal: live() })).resolves.toBe("denied");
    const asyncHandler = new AutoApprovalHandler(async (): Promise<ApprovalDecision> => "skipped");
    await expect(asyncHandler.request(makeApprovalRequest(), { signal: live() })).resolves.toBe("skipped");
  });

  it("rejects with ARGUMENT_INVALID when the policy returns something else, and passes a policy's own error on", async () => {
    const odd = new AutoApprovalHandler(() => "maybe" as ApprovalDecision);
    await expectCode(odd.request(makeApprovalRequest(), { signal: live() }), "ARGUMENT_INVALID");
    const broken = new AutoApprovalHandler(() => {
      throw new Error("policy crashed");
    });
    await expect(broken.request(makeApprovalRequest(), { signal: live() })).rejects.toThrow("policy crashed");
  });

  it("denies when the signal is already aborted, without asking the policy", async () => {
    let asked = 0;
    const handler = new AutoApprovalHandler(() => {
      asked += 1;
      return "approved";
    });
    await expect(handler.request(makeApprovalRequest(), { signal: AbortSignal.abort() })).resolves.toBe("denied");
    await expect(new AutoApprovalHandler("approved").request(makeApprovalRequest(), { signal: AbortSignal.abort() })).resolves.toBe("denied");
    expect(asked).toBe(0);
  });

  it("denies when the signal aborts while an async policy is still deciding, and removes its listener", async () => {
    const handler = new AutoApprovalHandler(() => new Promise<ApprovalDecision>(() => {}));
    const controller = new AbortController();
    const waiting = handler.request(makeApprovalRequest(), { signal: controller.signal });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(1);
    controller.abort();
    await expect(waiting).resolves.toBe("denied");
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("removes its abort listener after a policy answers", async () => {
    const controller = new AbortController();
    await new AutoApprovalHandler(async (): Promise<ApprovalDecision> => "approved").request(makeApprovalRequest(), { signal: controller.signal });
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("keeps every request it saw, in order, as a copy", async () => {
    const handler = new AutoApprovalHandler();
    await handler.request(makeApprovalRequest({ id: "1" }), { signal: live() });
    await handler.request(makeApprovalRequest({ id: "2" }), { signal: AbortSignal.abort() });
    expect(handler.requests.map((r) => r.id)).toEqual(["1", "2"]);
    (handler.requests as unknown[]).length = 0;
    expect(handler.requests).toHaveLength(2);
  });
});

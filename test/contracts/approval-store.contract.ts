import { describe, expect, it } from "vitest";
import type { ApprovalDecision, ApprovalRequest } from "../../src/kernel/index.ts";
import type { ApprovalStore } from "../../src/approval/approval-store.ts";
import { expectCode } from "./blob-store.contract.ts";

/** How a contract run gets a fresh, empty store for each test. */
export interface ApprovalStoreContractOptions {
  readonly create: () => Promise<ApprovalStore> | ApprovalStore;
}

/** A valid request; fields can be overridden. */
export function makeApprovalRequest(overrides: Partial<ApprovalRequest> = {}): ApprovalRequest {
  return {
    id: "req-1",
    chainId: "chain-1",
    tool: "send_email",
    args: { to: "ceo@example.com", body: "hi", nested: { list: [1, 2, 3] } },
    risk: "high",
    createdAt: 1_000,
    ...overrides,
  };
}

/**
 * The behaviour every {@link ApprovalStore} must have. Call once per implementation:
 * `runApprovalStoreContract("MemoryApprovalStore", { create: () => new MemoryApprovalStore() })`.
 */
export function runApprovalStoreContract(name: string, options: ApprovalStoreContractOptions): void {
  describe(`ApprovalStore contract: ${name}`, () => {
    const create = async (): Promise<ApprovalStore> => options.create();

    it("keeps a pending request, gets it back equal and lists it", async () => {
      const store = await create();
      const request = makeApprovalRequest();
      await store.putPending(request);
      expect(await store.get("req-1")).toEqual(request);
      expect(await store.listPending()).toEqual([request]);
      expect(await store.getDecision("req-1")).toBeUndefined();
    });

    it("keeps its own copy: mutating the caller's args or a returned request changes nothing", async () => {
      const store = await create();
      const args = { to: "a@example.com", list: [1] };
      await store.putPending(makeApprovalRequest({ args }));
      args.to = "evil@example.com";
      args.list.push(2);
      const got = await store.get("req-1");
      expect(got?.args).toEqual({ to: "a@example.com", list: [1] });
      (got?.args as { to: string }).to = "changed";
      expect((await store.get("req-1"))?.args).toEqual({ to: "a@example.com", list: [1] });
    });

    it("lists pending requests oldest first, then by id", async () => {
      const store = await create();
      await store.putPending(makeApprovalRequest({ id: "c", createdAt: 2 }));
      await store.putPending(makeApprovalRequest({ id: "b", createdAt: 1 }));
      await store.putPending(makeApprovalRequest({ id: "a", createdAt: 2 }));
      expect((await store.listPending()).map((r) => r.id)).toEqual(["b", "a", "c"]);
    });

    it("returns an empty list and undefined for an empty store", async () => {
      const store = await create();
      expect(await store.listPending()).toEqual([]);
      expect(await store.get("nope")).toBeUndefined();
      expect(await store.getDecision("nope")).toBeUndefined();
    });

    for (const decision of ["approved", "denied", "skipped"] as const) {
      it(`records a "${decision}" decision: no longer pending, request still readable`, async () => {
        const store = await create();
        const request = makeApprovalRequest();
        await store.putPending(request);
        await store.putPending(makeApprovalRequest({ id: "other" }));
        await store.decide("req-1", decision);
        expect(await store.getDecision("req-1")).toBe(decision);
        expect(await store.get("req-1")).toEqual(request);
        expect((await store.listPending()).map((r) => r.id)).toEqual(["other"]);
      });
    }

    it("throws APPROVAL_NOT_FOUND when deciding an unknown id", async () => {
      const store = await create();
      const error = await expectCode(store.decide("ghost", "approved"), "APPROVAL_NOT_FOUND");
      expect(error.details.id).toBe("ghost");
      expect(await store.getDecision("ghost")).toBeUndefined();
    });

    it("keeps the first decision; a second decide throws APPROVAL_NOT_FOUND", async () => {
      const store = await create();
      await store.putPending(makeApprovalRequest());
      await store.decide("req-1", "denied");
      const error = await expectCode(store.decide("req-1", "approved"), "APPROVAL_NOT_FOUND");
      expect(error.details.alreadyDecided).toBe(true);
      expect(await store.getDecision("req-1")).toBe("denied");
    });

    it("lets exactly one of many concurrent decides win", async () => {
      const store = await create();
      await store.putPending(makeApprovalRequest());
      const decisions: ApprovalDecision[] = ["approved", "denied", "skipped", "approved", "denied", "skipped"];
      const outcomes = await Promise.allSettled(decisions.map((d) => store.decide("req-1", d)));
      const winners = outcomes.flatMap((o, i) => (o.status === "fulfilled" ? [decisions[i]] : []));
      expect(winners).toHaveLength(1);
      expect(await store.getDecision("req-1")).toBe(winners[0]);
      for (const outcome of outcomes) {
        if (outcome.status === "rejected") expect(outcome.reason.code).toBe("APPROVAL_NOT_FOUND");
      }
    });

    it("refuses a decision that is not approved, denied or skipped", async () => {
      const store = await create();
      await store.putPending(makeApprovalRequest());
      await expectCode(store.decide("req-1", "yes" as ApprovalDecision), "ARGUMENT_INVALID");
      expect((await store.listPending()).map((r) => r.id)).toEqual(["req-1"]);
    });

    it("keeps a recorded decision when the same request is put again", async () => {
      const store = await create();
      await store.putPending(makeApprovalRequest());
      await store.decide("req-1", "approved");
      await store.putPending(makeApprovalRequest({ createdAt: 5_000 }));
      expect(await store.getDecision("req-1")).toBe("approved");
      expect(await store.listPending()).toEqual([]);
      expect((await store.get("req-1"))?.createdAt).toBe(5_000);
    });

    it("forgets a request and its decision on remove; removing an unknown id is a no-op", async () => {
      const store = await create();
      await store.putPending(makeApprovalRequest());
      await store.decide("req-1", "approved");
      await store.remove("req-1");
      expect(await store.get("req-1")).toBeUndefined();
      expect(await store.getDecision("req-1")).toBeUndefined();
      await expectCode(store.decide("req-1", "approved"), "APPROVAL_NOT_FOUND");
      await expect(store.remove("never-there")).resolves.toBeUndefined();
    });

    it("starts a request queued again after remove out pending, whatever the earlier one was decided", async () => {
      const store = await create();
      await store.putPending(makeApprovalRequest({ args: { amount: 1 } }));
      await store.decide("req-1", "approved");
      await store.remove("req-1");
      const requeued = makeApprovalRequest({ args: { amount: 1_000_000 } });
      await store.putPending(requeued);
      expect(await store.getDecision("req-1")).toBeUndefined();
      expect(await store.listPending()).toEqual([requeued]);
      await store.decide("req-1", "denied");
      expect(await store.getDecision("req-1")).toBe("denied");
    });

    it("round-trips ids with path characters, dots, spaces and non-ASCII", async () => {
      const store = await create();
      const ids = ["../../etc/passwd", "a/b\\c", ".", "..", "with space", "日本語:1", "x".repeat(300)];
      for (const [i, id] of ids.entries()) await store.putPending(makeApprovalRequest({ id, createdAt: i }));
      expect((await store.listPending()).map((r) => r.id)).toEqual(ids);
      await store.decide("../../etc/passwd", "denied");
      expect(await store.getDecision("../../etc/passwd")).toBe("denied");
      expect(await store.getDecision("..")).toBeUndefined();
    });

    it("refuses malformed requests with ARGUMENT_INVALID", async () => {
      const store = await create();
      const bad: unknown[] = [
        null,
        makeApprovalRequest({ id: "" }),
        makeApprovalRequest({ id: "x".repeat(513) }),
        { ...makeApprovalRequest(), id: 7 },
        { ...makeApprovalRequest(), tool: "" },
        { ...makeApprovalRequest(), risk: "medium" },
        { ...makeApprovalRequest(), createdAt: Number.NaN },
        { ...makeApprovalRequest(), chainId: undefined },
        makeApprovalRequest({ args: { big: 10n } }),
      ];
      for (const request of bad) {
        await expectCode(store.putPending(request as ApprovalRequest), "ARGUMENT_INVALID");
      }
      expect(await store.listPending()).toEqual([]);
    });

    it("refuses malformed ids in every lookup with ARGUMENT_INVALID", async () => {
      const store = await create();
      await expectCode(store.get(""), "ARGUMENT_INVALID");
      await expectCode(store.getDecision(undefined as unknown as string), "ARGUMENT_INVALID");
      await expectCode(store.decide("", "approved"), "ARGUMENT_INVALID");
      await expectCode(store.remove(42 as unknown as string), "ARGUMENT_INVALID");
    });
  });
}

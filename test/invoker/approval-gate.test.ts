import { describe, expect, it } from "vitest";
import type { ApprovalDecision } from "../../src/kernel/index.ts";
import { approver, echoTool, makeInvoker } from "./invoker-fixtures.ts";

describe("ToolInvoker approval gate", () => {
  it("denies with APPROVAL_TIMEOUT when the handler never answers, and aborts its signal", async () => {
    const handler = approver(() => new Promise<ApprovalDecision>(() => {}));
    const tool = echoTool("mail", { risk: "high" });
    const invoker = makeInvoker([tool], { approvalHandler: handler, policy: { approvalTimeoutMs: 50, callTimeoutMs: 200 } });
    const session = invoker.openSession();
    const started = performance.now();
    const result = await invoker.invoke({ name: "mail", arguments: { to: "a" } }, { session });
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(result).toMatchObject({ status: "denied", code: "APPROVAL_TIMEOUT" });
    expect(result.text).toContain("50 ms");
    expect(handler.signals[0]?.aborted).toBe(true);
    expect(tool.calls).toHaveLength(0);
    expect(session.trace[0]).toMatchObject({ status: "denied", code: "APPROVAL_TIMEOUT" });
  });

  it("does not abort the handler's signal when it answers in time", async () => {
    const handler = approver("approved");
    const invoker = makeInvoker([echoTool("mail", { risk: "high" })], { approvalHandler: handler });
    const result = await invoker.invoke({ name: "mail", arguments: {} }, { session: invoker.openSession() });
    expect(result.status).toBe("ok");
    expect(handler.signals[0]?.aborted).toBe(false);
  });

  it("asks for critical tools even when maxRiskUnapproved is critical", async () => {
    const handler = approver("approved");
    const tool = echoTool("drop_db", { risk: "critical" });
    const invoker = makeInvoker([tool], { approvalHandler: handler, policy: { maxRiskUnapproved: "critical" } });
    const result = await invoker.invoke({ name: "drop_db", arguments: {} }, { session: invoker.openSession() });
    expect(result.status).toBe("ok");
    expect(handler.requests).toHaveLength(1);
    const unguarded = makeInvoker([tool], { policy: { maxRiskUnapproved: "critical" } });
    const denied = await unguarded.invoke({ name: "drop_db", arguments: {} }, { session: unguarded.openSession() });
    expect(denied).toMatchObject({ status: "denied", code: "APPROVAL_DENIED" });
  });

  it("asks for high tools only above the line", async () => {
    const handler = approver("approved");
    const tool = echoTool("mail", { risk: "high" });
    const strict = makeInvoker([tool], { approvalHandler: handler, policy: { maxRiskUnapproved: "safe" } });
    await strict.invoke({ name: "mail", arguments: {} }, { session: strict.openSession() });
    expect(handler.requests).toHaveLength(1);
    const lax = makeInvoker([tool], { approvalHandler: handler, policy: { maxRiskUnapproved: "high" } });
    const result = await lax.invoke({ name: "mail", arguments: {} }, { session: lax.openSession() });
    expect(result.status).toBe("ok");
    expect(handler.requests).toHaveLength(1);
  });

  it("never asks for safe tools, and treats an unknown risk value as critical", async () => {
    const handler = approver("approved");
    const odd = { ...echoTool("odd"), risk: "medium" as never };
    const invoker = makeInvoker([echoTool("safe_one"), odd], {
      approvalHandler: handler,
      policy: { maxRiskUnapproved: "high" },
      registry: "map", // a Toolbox refuses the malformed risk up front
    });
    const session = invoker.openSession();
    await invoker.invoke({ name: "safe_one", arguments: {} }, { session });
    expect(handler.requests).toHaveLength(0);
    await invoker.invoke({ name: "odd", arguments: {} }, { session });
    expect(handler.requests[0]?.risk).toBe("critical");
  });

  it.each([
    ["denied", "APPROVAL_DENIED"],
    ["skipped", "APPROVAL_SKIPPED"],
    ["maybe", "APPROVAL_DENIED"],
  ] as const)("turns the decision %s into denied %s", async (decision, code) => {
    const tool = echoTool("mail", { risk: "high" });
    const invoker = makeInvoker([tool], { approvalHandler: approver(decision as ApprovalDecision) });
    const result = await invoker.invoke({ name: "mail", arguments: {} }, { session: invoker.openSession() });
    expect(result).toMatchObject({ status: "denied", code });
    expect(tool.calls).toHaveLength(0);
  });

  it("denies with the handler's message when the handler throws", async () => {
    const handler = approver(async () => {
      throw new Error("approval service down");
    });
    const invoker = makeInvoker([echoTool("mail", { risk: "high" })], { approvalHandler: handler });
    const result = await invoker.invoke({ name: "mail", arguments: {} }, { session: invoker.openSession() });
    expect(result).toMatchObject({ status: "denied", code: "APPROVAL_DENIED" });
    expect(result.text).toContain("approval service down");
  });

  it("sends a frozen request carrying the argument copy, the session id and the risk", async () => {
    const handler = approver("approved");
    const tool = echoTool("mail", { risk: "high" });
    const invoker = makeInvoker([tool], { approvalHandler: handler });
    const session = invoker.openSession({ chainId: "chain-7" });
    const args = { to: "ceo@example.com", cc: ["a", "b"] };
    const before = Date.now();
    await invoker.invoke({ name: "mail", arguments: args }, { session });
    const request = handler.requests[0];
    expect(request).toMatchObject({ chainId: "chain-7", tool: "mail", risk: "high", args });
    expect(request?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(request?.createdAt).toBeGreaterThanOrEqual(before);
    expect(Object.isFrozen(request)).toBe(true);
    expect(request?.args).not.toBe(args); // the host's own copy
    expect(JSON.parse(JSON.stringify(request))).toEqual(request); // JSON-serialisable
  });

  it("executes the same copy the approver saw, even if the caller mutates its object meanwhile", async () => {
    const args = { to: "ceo@example.com" };
    const handler = approver(async () => {
      args.to = "attacker@example.com";
      return "approved";
    });
    const tool = echoTool("mail", { risk: "high" });
    const invoker = makeInvoker([tool], { approvalHandler: handler });
    await invoker.invoke({ name: "mail", arguments: args }, { session: invoker.openSession() });
    expect(handler.requests[0]?.args).toEqual({ to: "ceo@example.com" });
    expect(tool.calls[0]?.args).toEqual({ to: "ceo@example.com" });
  });

  it("gives the approver a frozen copy: what it does to the arguments cannot change the call that runs", async () => {
    const thrown: unknown[] = [];
    const handler = approver(async (request) => {
      const shown = request.args as { amount: number; lines: { sku: string }[] };
      for (const change of [() => (shown.amount = 1_000_000), () => shown.lines.push({ sku: "x" }), () => ((shown.lines[0] as { sku: string }).sku = "y")]) {
        try {
          change();
        } catch (error) {
          thrown.push(error);
        }
      }
      return "approved";
    });
    const tool = echoTool("refund", { risk: "high" });
    const invoker = makeInvoker([tool], { approvalHandler: handler });
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "refund", arguments: { amount: 5, lines: [{ sku: "a" }] } }, { session });
    expect(result.status).toBe("ok");
    expect(thrown).toHaveLength(3); // each write throws (frozen, strict mode)
    expect(tool.calls[0]?.args).toEqual({ amount: 5, lines: [{ sku: "a" }] });
    expect(handler.requests[0]?.args).toEqual({ amount: 5, lines: [{ sku: "a" }] });
    // The tool still gets a copy it may change (its own, not the approver's).
    expect(Object.isFrozen(tool.calls[0]?.args)).toBe(false);
  });

  it("shows the approver the artifact ref, not its content", async () => {
    const { MemoryBlobStore } = await import("../../src/artifacts/memory-blob-store.ts");
    const store = new MemoryBlobStore();
    const ref = await store.put("the content");
    const handler = approver("approved");
    const tool = echoTool("upload", { risk: "high" });
    const invoker = makeInvoker([tool], { approvalHandler: handler, blobStore: store });
    await invoker.invoke({ name: "upload", arguments: { file: { $artifact: ref } } }, { session: invoker.openSession() });
    expect(handler.requests[0]?.args).toEqual({ file: { $artifact: ref } });
    expect(tool.calls[0]?.args).toEqual({ file: "the content" });
  });

  it("cancels the wait (error CANCELLED) when the caller's signal fires", async () => {
    const handler = approver(() => new Promise<ApprovalDecision>(() => {}));
    const tool = echoTool("mail", { risk: "high" });
    const invoker = makeInvoker([tool], { approvalHandler: handler, policy: { approvalTimeoutMs: 5_000, callTimeoutMs: 10_000 } });
    const controller = new AbortController();
    const pending = invoker.invoke({ name: "mail", arguments: {} }, { session: invoker.openSession(), ctx: { signal: controller.signal } });
    await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    const result = await pending;
    expect(result).toMatchObject({ status: "error", code: "CANCELLED" });
    expect(handler.signals[0]?.aborted).toBe(true);
    expect(tool.calls).toHaveLength(0);
  });
});

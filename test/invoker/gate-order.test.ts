import { describe, expect, it } from "vitest";
import { brandChainTool, type HostedTool, type ProviderDefinedTool } from "../../src/kernel/index.ts";
import { AutoApprovalHandler } from "../../src/approval/auto-approval-handler.ts";
import { approver, echoTool, localTool, makeInvoker, SpyBlobStore } from "./invoker-fixtures.ts";

describe("ToolInvoker gate order", () => {
  it("counts an unknown tool against the budget, then refuses with BUDGET_EXCEEDED", async () => {
    const echo = echoTool();
    const invoker = makeInvoker([echo], { policy: { maxToolCalls: 2 } });
    const session = invoker.openSession();
    const first = await invoker.invoke({ name: "nope", arguments: {} }, { session });
    const second = await invoker.invoke({ name: "nope", arguments: {} }, { session });
    const third = await invoker.invoke({ name: "echo", arguments: {} }, { session });
    expect(first).toMatchObject({ status: "error", code: "UNKNOWN_TOOL" });
    expect(second).toMatchObject({ status: "error", code: "UNKNOWN_TOOL" });
    expect(third).toMatchObject({ status: "error", code: "BUDGET_EXCEEDED" });
    expect(third.text).toContain("2 tool calls");
    expect(echo.calls).toHaveLength(0);
    expect(session.callCount).toBe(2);
    expect(session.remaining).toBe(0);
    expect(session.trace.map((r) => r.code)).toEqual(["UNKNOWN_TOOL", "UNKNOWN_TOOL", "BUDGET_EXCEEDED"]);
  });

  it("names close tools when the name is unknown, and lists some when none is close", async () => {
    const invoker = makeInvoker([echoTool("search_docs"), echoTool("search_web"), echoTool("send_email")]);
    const session = invoker.openSession();
    const close = await invoker.invoke({ name: "serch_docs", arguments: {} }, { session });
    expect(close.text).toContain('Unknown tool "serch_docs"');
    expect(close.text).toContain('"search_docs"');
    expect(close.text).not.toContain('"send_email"');
    const far = await invoker.invoke({ name: "zzzzzzzzzzzz", arguments: {} }, { session });
    expect(far.text).toContain("Available tools:");
    expect(far.text).toContain('"send_email"');
  });

  it("refuses hosted, provider-defined and chain tools with NOT_CALLABLE, consuming budget", async () => {
    const hosted: HostedTool = { name: "web_search", description: "d", providerSpecs: { openai: { type: "web_search" } } };
    let handled = 0;
    const provider: ProviderDefinedTool = {
      name: "shell",
      description: "d",
      providerSpecs: { openai: { type: "shell" } },
      callTypes: ["shell_call"],
      async handleCall() {
        handled++;
        return { content: [] };
      },
    };
    const chain = echoTool("my_chain");
    brandChainTool(chain);
    const invoker = makeInvoker([hosted, provider, chain]);
    const session = invoker.openSession();
    for (const name of ["web_search", "shell", "my_chain"]) {
      const result = await invoker.invoke({ name, arguments: {} }, { session });
      expect(result).toMatchObject({ status: "error", code: "NOT_CALLABLE" });
      expect(result.text).toContain(name);
    }
    expect(handled).toBe(0);
    expect(chain.calls).toHaveLength(0);
    expect(session.callCount).toBe(3);
  });

  it("validates arguments before asking for approval", async () => {
    const handler = approver("approved");
    const tool = echoTool("mail", { risk: "high", inputSchema: { type: "object", properties: { to: { type: "string" } }, required: ["to"] } });
    const invoker = makeInvoker([tool], { approvalHandler: handler });
    const result = await invoker.invoke({ name: "mail", arguments: {} }, { session: invoker.openSession() });
    expect(result).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    expect(handler.requests).toHaveLength(0);
  });

  it("never resolves artifact refs of a denied call", async () => {
    const store = new SpyBlobStore();
    const ref = await store.put("secret payload");
    const tool = echoTool("upload", { risk: "high" });
    const handler = new AutoApprovalHandler("denied");
    const invoker = makeInvoker([tool], { blobStore: store, approvalHandler: handler });
    const result = await invoker.invoke({ name: "upload", arguments: { file: { $artifact: ref } } }, { session: invoker.openSession() });
    expect(result).toMatchObject({ status: "denied", code: "APPROVAL_DENIED" });
    expect(handler.requests).toHaveLength(1);
    expect(store.resolved).toEqual([]);
    expect(tool.calls).toHaveLength(0);
  });

  it("never resolves artifact refs when no handler exists for a risky tool", async () => {
    const store = new SpyBlobStore();
    const ref = await store.put("secret payload");
    const tool = echoTool("upload", { risk: "high" });
    const invoker = makeInvoker([tool], { blobStore: store });
    const result = await invoker.invoke({ name: "upload", arguments: { file: { $artifact: ref } } }, { session: invoker.openSession() });
    expect(result).toMatchObject({ status: "denied", code: "APPROVAL_DENIED" });
    expect(result.text).toContain("no approval handler");
    expect(store.resolved).toEqual([]);
  });

  it("stops a cancelled call after ref resolution and before execute", async () => {
    const store = new SpyBlobStore();
    const ref = await store.put("payload");
    const tool = echoTool("read");
    const invoker = makeInvoker([tool], { blobStore: store });
    const controller = new AbortController();
    controller.abort();
    const session = invoker.openSession();
    const result = await invoker.invoke(
      { name: "read", arguments: { file: { $artifact: ref } } },
      { session, ctx: { signal: controller.signal } },
    );
    expect(result).toMatchObject({ status: "error", code: "CANCELLED" });
    expect(store.resolved).toEqual([ref]); // the gate before cancellation ran
    expect(tool.calls).toHaveLength(0); // execute never did
    expect(session.trace[0]).toMatchObject({ status: "error", code: "CANCELLED" });
  });

  it("stops before execute when the session's signal fired", async () => {
    const tool = echoTool();
    const invoker = makeInvoker([tool]);
    const controller = new AbortController();
    const session = invoker.openSession({ signal: controller.signal });
    controller.abort();
    expect(session.signal.aborted).toBe(true);
    const result = await invoker.invoke({ name: "echo", arguments: {} }, { session });
    expect(result).toMatchObject({ status: "error", code: "CANCELLED" });
    expect(tool.calls).toHaveLength(0);
  });

  it("passes a safe call through every gate to an ok result", async () => {
    const tool = localTool("add", (args) => ({ sum: (args.a as number) + (args.b as number) }), {
      inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
    });
    const invoker = makeInvoker([tool]);
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "add", arguments: '{"a":1,"b":2}' }, { session });
    expect(result).toEqual({ status: "ok", text: '{"sum":3}', structured: { sum: 3 } });
    expect(session.trace).toHaveLength(1);
    expect(session.trace[0]).toMatchObject({ seq: 0, tool: "add", status: "ok", callId: `${session.id}:0` });
    expect(session.trace[0]?.argsDigest).toMatch(/^[0-9a-f]{64}$/);
  });
});

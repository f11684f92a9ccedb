import { describe, expect, it } from "vitest";
import { defineTool, ToolInvoker, Toolbox } from "../../src/index.ts";

describe("ToolInvoker: calls the caller already refused", () => {
  const seen: unknown[] = [];
  const tool = defineTool({
    name: "echo",
    description: "Echo.",
    inputSchema: { type: "object", properties: {} },
    execute: (args) => {
      seen.push(args);
      return { ok: true };
    },
  });

  it("records the refusal, consumes budget and never executes", async () => {
    const invoker = new ToolInvoker({ toolbox: new Toolbox([tool]), policy: { maxToolCalls: 1 } });
    const session = invoker.openSession();
    const rejection = { status: "error" as const, code: "BRIDGE_ERROR" as const, text: "arguments must be plain JSON data" };
    const refused = await invoker.invoke({ name: "echo", arguments: {}, rejection }, { session });
    expect(refused).toEqual(rejection);
    expect(seen).toEqual([]);
    expect(session.trace).toHaveLength(1);
    expect(session.trace[0]).toMatchObject({ tool: "echo", status: "error", code: "BRIDGE_ERROR" });
    const next = await invoker.invoke({ name: "echo", arguments: {} }, { session });
    expect(next).toMatchObject({ status: "error", code: "BUDGET_EXCEEDED" });
    await session.close();
  });
});

// executeSelectedTools answers every entry of the list and never rejects, and what it checks of
// a call is what runs: each entry is read once into a plain snapshot the invoker is handed.
import { describe, expect, it } from "vitest";
import { ToolInvoker } from "../../src/invoker/tool-invoker.ts";
import type { InvocationFailure, ToolCall } from "../../src/kernel/index.ts";
import { ToolManager } from "../../src/manager/tool-manager.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import { echoTool, FAST_POLICY } from "../invoker/invoker-fixtures.ts";

function setup() {
  const safe = echoTool("safe_tool");
  const wipe = echoTool("wipe_disk");
  const toolbox = new Toolbox([safe, wipe]);
  const invoker = new ToolInvoker({ toolbox, policy: FAST_POLICY });
  const manager = new ToolManager({ toolbox, invoker, disabled: ["wipe_disk"] });
  return { safe, wipe, invoker, manager };
}

const codeOf = (result: unknown) => (result as { code?: unknown } | undefined)?.code;

describe("ToolManager.executeSelectedTools: every entry answered", () => {
  it("answers a hole in a sparse list as a malformed call and runs the rest", async () => {
    const { safe, manager } = setup();
    const calls = [, { id: "b", name: "safe_tool", arguments: { n: 1 } }, ,] as unknown as ToolCall[];
    const responses = await manager.executeSelectedTools(calls);
    expect(responses.map((r) => [r.id, r.status, codeOf(r.result)])).toEqual([
      ["call_0", "error", "INVALID_ARGUMENTS"],
      ["b", "ok", undefined],
      ["call_2", "error", "INVALID_ARGUMENTS"],
    ]);
    expect(responses[0]?.content).toContain("is not a readable tool call");
    expect(safe.calls).toHaveLength(1);
  });

  it("refuses a call whose id cannot be read, as the invoker does, instead of running it", async () => {
    const { safe, manager } = setup();
    const call = Object.defineProperty({ name: "safe_tool", arguments: {} }, "id", {
      get() {
        throw new Error("id boom");
      },
    });
    const [response] = await manager.executeSelectedTools([call]);
    expect(response).toMatchObject({ id: "call_0", status: "error", result: { code: "INVALID_ARGUMENTS" } });
    expect(safe.calls).toEqual([]);
  });
});

describe("ToolManager.executeSelectedTools: what is checked is what runs", () => {
  it("reads a call's name once: a name that turns into a disabled tool's after the check never runs it", async () => {
    const { safe, wipe, manager } = setup();
    let reads = 0;
    const shifty = {
      id: "c1",
      arguments: {},
      get name() {
        reads++;
        return reads === 1 ? "safe_tool" : "wipe_disk";
      },
    };
    const [response] = await manager.executeSelectedTools([shifty]);
    expect(reads).toBe(1);
    expect(response).toMatchObject({ id: "c1", name: "safe_tool", status: "ok" });
    expect(wipe.calls).toEqual([]);
    expect(safe.calls).toHaveLength(1);
    expect(manager.session.trace).toEqual([expect.objectContaining({ tool: "safe_tool", callId: "c1", status: "ok" })]);
  });

  it("reads the arguments once: the ones de-duplicated are the ones run", async () => {
    const { safe, manager } = setup();
    let reads = 0;
    const call = {
      name: "safe_tool",
      get arguments() {
        reads++;
        return { n: reads };
      },
    };
    await manager.executeSelectedTools([call]);
    expect(reads).toBe(1);
    expect(safe.calls.map((c) => c.args)).toEqual([{ n: 1 }]);
  });

  it("hands the invoker a plain snapshot of data properties, not the caller's object", async () => {
    const { invoker, manager } = setup();
    const seen: ToolCall[] = [];
    const invoke = invoker.invoke.bind(invoker);
    invoker.invoke = (call, options) => {
      seen.push(call);
      return invoke(call, options);
    };
    const rejection: InvocationFailure = { status: "error", code: "BRIDGE_ERROR", text: "not plain data" };
    const original = {
      get id() {
        return "c1";
      },
      get name() {
        return "safe_tool";
      },
      get arguments() {
        return { n: 1 };
      },
      get rejection() {
        return rejection;
      },
    };
    const [response] = await manager.executeSelectedTools([original]);
    expect(response).toMatchObject({ id: "c1", status: "error", result: rejection });
    expect(seen).toHaveLength(1);
    expect(seen[0]).not.toBe(original);
    const descriptors = Object.getOwnPropertyDescriptors(seen[0]);
    expect(Object.keys(descriptors).sort()).toEqual(["arguments", "id", "name", "rejection"]);
    for (const descriptor of Object.values(descriptors)) expect(descriptor).toHaveProperty("value");
  });
});

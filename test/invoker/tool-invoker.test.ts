import { describe, expect, it } from "vitest";
import { ToolInvoker } from "../../src/invoker/tool-invoker.ts";
import type { InvokerSession } from "../../src/invoker/invoker-session.ts";
import type { HookEvent, Hooks, ToolEndEvent, ToolStartEvent } from "../../src/kernel/index.ts";
import { isChainRuntimeError, type ChainRuntimeError } from "../../src/kernel/index.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import { approver, echoTool, localTool, makeInvoker, MapRegistry, SpyBlobStore } from "./invoker-fixtures.ts";

function recordingHooks(extra: Partial<Hooks> = {}): Hooks & { starts: ToolStartEvent[]; ends: ToolEndEvent[] } {
  const starts: ToolStartEvent[] = [];
  const ends: ToolEndEvent[] = [];
  return {
    starts,
    ends,
    TOOL_START: (event) => {
      starts.push(event);
    },
    TOOL_END: (event) => {
      ends.push(event);
    },
    ...extra,
  };
}

describe("ToolInvoker hooks and records", () => {
  it("fires TOOL_START and TOOL_END and records every outcome, a crash included", async () => {
    const hooks = recordingHooks();
    const invoker = makeInvoker(
      [
        echoTool("ok"),
        localTool("crash", () => {
          throw new Error("kaput");
        }),
        echoTool("risky", { risk: "high" }),
      ],
      { hooks, policy: { maxToolCalls: 4 } },
    );
    const session = invoker.openSession({ chainId: "h" });
    const calls = ["ok", "crash", "risky", "missing", "ok"];
    const results = [];
    for (const name of calls) results.push(await invoker.invoke({ name, arguments: { n: 1 } }, { session }));
    expect(results.map((r) => (r.status === "ok" ? "ok" : r.code))).toEqual([
      "ok",
      "TOOL_ERROR",
      "APPROVAL_DENIED",
      "UNKNOWN_TOOL",
      "BUDGET_EXCEEDED",
    ]);
    expect(hooks.starts.map((e) => e.tool)).toEqual(calls);
    expect(hooks.starts[0]).toMatchObject({ event: "TOOL_START", chainId: "h", seq: 0, callId: "h:0", args: { n: 1 } });
    expect(hooks.ends.map((e) => e.result)).toEqual(results);
    expect(hooks.ends.map((e) => e.record)).toEqual(session.trace);
    expect(session.trace.map((r) => r.status)).toEqual(["ok", "error", "denied", "error", "error"]);
    // Only the calls whose tool was entered may have had effects.
    expect(hooks.ends.map((e) => e.executed)).toEqual([true, true, false, false, false]);
    expect(session.trace[1]).toMatchObject({ error: expect.stringContaining("kaput"), code: "TOOL_ERROR" });
    for (const record of session.trace) {
      expect(record.startedAt).toBeGreaterThan(0);
      expect(record.durationMs).toBeGreaterThanOrEqual(0);
    }
  });

  it("keeps going when a hook throws or rejects, and reports it through onHookError", async () => {
    const reported: [string, HookEvent][] = [];
    const hooks: Hooks = {
      TOOL_START: () => {
        throw new Error("start hook bug");
      },
      TOOL_END: async () => {
        throw new Error("end hook bug");
      },
      onHookError: (error, event) => {
        reported.push([(error as Error).message, event]);
      },
    };
    const invoker = makeInvoker([echoTool()], { hooks });
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "echo", arguments: { a: 1 } }, { session });
    expect(result).toMatchObject({ status: "ok", structured: { a: 1 } });
    expect(reported).toEqual([
      ["start hook bug", "TOOL_START"],
      ["end hook bug", "TOOL_END"],
    ]);
    expect(session.trace).toHaveLength(1);
  });

  it("survives an onHookError that throws too", async () => {
    const invoker = makeInvoker([echoTool()], {
      hooks: {
        TOOL_END: () => {
          throw new Error("a");
        },
        onHookError: () => {
          throw new Error("b");
        },
      },
    });
    expect((await invoker.invoke({ name: "echo", arguments: {} }, { session: invoker.openSession() })).status).toBe("ok");
  });

  it("never throws: a registry that throws becomes an error result with a record", async () => {
    const registry = new MapRegistry();
    registry.get = () => {
      throw new Error("registry down");
    };
    const invoker = new ToolInvoker({ toolbox: registry });
    const session = invoker.openSession();
    const result = await invoker.invoke({ name: "x", arguments: {} }, { session });
    expect(result).toMatchObject({ status: "error", code: "TOOL_ERROR" });
    expect(result.text).toContain("registry down");
    expect(session.trace).toHaveLength(1);
  });

  it("never throws: garbage options and calls become error results", async () => {
    const invoker = makeInvoker([echoTool()]);
    const noSession = await invoker.invoke({ name: "echo", arguments: {} }, { session: {} as InvokerSession });
    expect(noSession).toMatchObject({ status: "error" });
    const nullOptions = await invoker.invoke({ name: "echo", arguments: {} }, null as never);
    expect(nullOptions.status).toBe("error");
    const session = invoker.openSession();
    const badName = await invoker.invoke({ name: 42 as never, arguments: {} }, { session });
    expect(badName).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS", text: expect.stringContaining("invoke() needs a call { name: string, arguments }; got a name that is a number.") });
    const nullCall = await invoker.invoke(null as never, { session });
    expect(nullCall).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS", text: expect.stringContaining("needs a call object") });
    const stringCall = await invoker.invoke("echo" as never, { session });
    expect(stringCall).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS" });
    // The name under another field (a model's `tool`), not "Unknown tool \"undefined\"".
    const noName = await invoker.invoke({ tool: "echo", arguments: {} } as never, { session });
    expect(noName).toMatchObject({ status: "error", code: "INVALID_ARGUMENTS", text: expect.stringContaining("got no name. The call did not run.") });
    // Each is numbered and recorded like any refused call.
    expect(session.trace.map((record) => [record.seq, record.status, record.code, record.tool])).toEqual([
      [0, "error", "INVALID_ARGUMENTS", "(not a tool call)"],
      [1, "error", "INVALID_ARGUMENTS", "(not a tool call)"],
      [2, "error", "INVALID_ARGUMENTS", "(not a tool call)"],
      [3, "error", "INVALID_ARGUMENTS", "(not a tool call)"],
    ]);
  });

  it("refuses a session chainId that is not a non-empty string", () => {
    const invoker = makeInvoker([echoTool()]);
    for (const chainId of [{}, "", 5]) {
      expect(() => invoker.openSession({ chainId: chainId as never })).toThrow(/chainId must be a non-empty string/);
    }
  });

  it("rejects an invalid policy at construction", () => {
    expect(() => new ToolInvoker({ toolbox: new MapRegistry(), policy: { maxToolCalls: -1 } })).toThrow(/maxToolCalls/);
  });

  it("shares one invoker across sessions without sharing their state", async () => {
    const invoker = makeInvoker([echoTool()], { policy: { maxToolCalls: 1 } });
    const a = invoker.openSession();
    const b = invoker.openSession();
    expect((await invoker.invoke({ name: "echo", arguments: {} }, { session: a })).status).toBe("ok");
    expect((await invoker.invoke({ name: "echo", arguments: {} }, { session: a })).status).toBe("error");
    expect((await invoker.invoke({ name: "echo", arguments: {} }, { session: b })).status).toBe("ok");
    expect(a.trace).toHaveLength(2);
    expect(b.trace).toHaveLength(1);
  });
});

describe("ToolInvoker options", () => {
  function refusal(options: unknown): ChainRuntimeError {
    try {
      new ToolInvoker(options as never);
    } catch (error) {
      if (isChainRuntimeError(error)) return error;
      throw error;
    }
    throw new Error("did not throw");
  }
  const toolbox = new Toolbox([echoTool()]);

  it("refuses options that are not an object with ARGUMENT_INVALID, not a TypeError", () => {
    for (const [options, got] of [
      [undefined, "undefined"],
      [null, "null"],
      [5, "5"],
      ["x", '"x"'],
      [[], "an array"],
    ] as const) {
      const error = refusal(options);
      expect(error.code).toBe("ARGUMENT_INVALID");
      expect(error.message).toBe(`new ToolInvoker() needs options ({ toolbox, policy, ... }); got ${got}.`);
    }
  });

  it("refuses a toolbox that is missing or has no get()/names()", () => {
    expect(refusal({})).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "toolbox" }, message: expect.stringContaining("options.toolbox must be a Toolbox; got undefined") });
    expect(refusal({ toolbox: [echoTool()] })).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "toolbox" } });
    expect(refusal({ toolbox: { get: () => undefined } })).toMatchObject({
      code: "ARGUMENT_INVALID",
      details: { argument: "toolbox", missing: "names" },
      message: "ToolInvoker options.toolbox must be a Toolbox; it has no names() method.",
    });
  });

  it("refuses a blobStore without the methods the invoker calls, at construction rather than per call", () => {
    expect(refusal({ toolbox, blobStore: 5 })).toMatchObject({
      code: "ARGUMENT_INVALID",
      details: { argument: "blobStore" },
      message: "ToolInvoker options.blobStore must be a BlobStore; got 5.",
    });
    expect(refusal({ toolbox, blobStore: null })).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "blobStore" } });
    expect(refusal({ toolbox, blobStore: {} })).toMatchObject({
      code: "ARGUMENT_INVALID",
      details: { argument: "blobStore", missing: "put" },
      message: "ToolInvoker options.blobStore must be a BlobStore; it has no put() method.",
    });
    const store = new SpyBlobStore();
    const noUnpin = { put: store.put.bind(store), resolve: store.resolve.bind(store), pin: store.pin.bind(store) };
    expect(refusal({ toolbox, blobStore: noUnpin })).toMatchObject({ details: { argument: "blobStore", missing: "unpin" } });
  });

  it("refuses an approvalHandler without request() and hooks that are not functions", () => {
    expect(refusal({ toolbox, approvalHandler: async () => "approved" })).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "approvalHandler" } });
    expect(refusal({ toolbox, approvalHandler: {} })).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "approvalHandler", missing: "request" } });
    expect(refusal({ toolbox, hooks: 5 })).toMatchObject({ code: "ARGUMENT_INVALID", details: { argument: "hooks" } });
    for (const name of ["TOOL_START", "TOOL_END", "CHAIN_START", "CHAIN_END", "onHookError"]) {
      expect(refusal({ toolbox, hooks: { [name]: "log" } })).toMatchObject({
        code: "ARGUMENT_INVALID",
        details: { argument: `hooks.${name}` },
        message: `ToolInvoker options.hooks.${name} must be a function when given; got "log".`,
      });
    }
  });

  it("refuses a misspelt hook of a plain object (it would never fire), and leaves state and a class instance's own fields alone", () => {
    const noop = (): void => {};
    expect(refusal({ toolbox, hooks: { TOOL_STRAT: noop } })).toMatchObject({
      code: "ARGUMENT_INVALID",
      details: { argument: "hooks", hook: "TOOL_STRAT" },
      message: 'ToolInvoker options.hooks must be an object of TOOL_START, TOOL_END, CHAIN_START, CHAIN_END, onHookError; it has no hook "TOOL_STRAT" (did you mean TOOL_START?).',
    });
    expect(refusal({ toolbox, hooks: { tool_end: noop } })).toMatchObject({ details: { hook: "tool_end" }, message: expect.stringContaining("(did you mean TOOL_END?)") });
    expect(refusal({ toolbox, hooks: Object.assign(Object.create(null) as object, { CHAIN_ENDD: noop }) })).toMatchObject({ details: { hook: "CHAIN_ENDD" } });
    class Observer {
      readonly seen: string[] = [];
      TOOL_END = (): void => void this.seen.push("end");
    }
    expect(() => new ToolInvoker({ toolbox, hooks: new Observer() })).not.toThrow();
    const withState = { seen: [], count: 0, TOOL_END: noop };
    expect(() => new ToolInvoker({ toolbox, hooks: withState })).not.toThrow();
  });

  it("refuses a maxTraceRecords out of range at construction, as openSession would (POLICY_INVALID)", () => {
    for (const maxTraceRecords of [-1, 1.5, "10"]) {
      expect(refusal({ toolbox, maxTraceRecords })).toMatchObject({ code: "POLICY_INVALID", details: { field: "maxTraceRecords" } });
    }
  });

  it("accepts doubles and class instances that have the methods, and leaves absent options absent", () => {
    const store = new SpyBlobStore();
    const invoker = new ToolInvoker({
      toolbox: new MapRegistry([echoTool()]),
      blobStore: store,
      approvalHandler: approver("approved"),
      // A JavaScript caller may spell an absent hook as undefined.
      hooks: { TOOL_START: undefined, TOOL_END: () => {} } as never,
      maxTraceRecords: 0,
    });
    expect(invoker.blobStore).toBe(store);
    expect(new ToolInvoker({ toolbox }).blobStore).toBeUndefined();
  });
});

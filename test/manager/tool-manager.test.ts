import { afterAll, describe, expect, it } from "vitest";
import { MemoryBlobStore } from "../../src/artifacts/memory-blob-store.ts";
import { ToolChainTool } from "../../src/chain/tool-chain-tool.ts";
import { ToolInvoker } from "../../src/invoker/tool-invoker.ts";
import { MAX_ECHOED_NAME_CHARS } from "../../src/invoker/gates/lookup-tool.ts";
import { MAX_ERROR_MESSAGE_CHARS } from "../../src/kernel/bound-error-text.ts";
import { ToolManager, type ToolManagerOptions, type ToolManagerToolbox } from "../../src/manager/tool-manager.ts";
import { isChainRuntimeError, type AnyTool, type HostedTool, type ProviderDefinedTool, type ProviderToolCall } from "../../src/kernel/index.ts";
import { Toolbox } from "../../src/toolbox/toolbox.ts";
import { deferred, echoTool, FAST_POLICY, localTool } from "../invoker/invoker-fixtures.ts";

function setup(tools: AnyTool[], options: Partial<Omit<ToolManagerOptions, "toolbox" | "invoker">> = {}, blobStore?: MemoryBlobStore) {
  const toolbox = new Toolbox(tools);
  const invoker = new ToolInvoker({ toolbox, policy: FAST_POLICY, ...(blobStore ? { blobStore } : {}) });
  return { toolbox, invoker, manager: new ToolManager({ toolbox, invoker, ...options }) };
}

const names = (tools: readonly AnyTool[]) => tools.map((tool) => tool.name);
const hosted: HostedTool = { name: "web_search", description: "hosted search", providerSpecs: { openai: { type: "web_search" } } };

describe("ToolManager tool selection", () => {
  const tools = () => [echoTool("a"), echoTool("b"), echoTool("c"), echoTool("research", { takesControl: true })];

  it("offers every tool by default", () => {
    expect(names(setup(tools()).manager.tools())).toEqual(["a", "b", "c", "research"]);
  });

  it("filters by enabled (list or predicate) and disabled; disabled wins", () => {
    expect(names(setup(tools(), { enabled: ["a", "b"], disabled: ["b"] }).manager.tools())).toEqual(["a"]);
    expect(names(setup(tools(), { enabled: (name) => name !== "c" }).manager.tools())).toEqual(["a", "b", "research"]);
  });

  it("offers only exclusive tools when any is available", () => {
    expect(names(setup(tools(), { exclusive: ["research"] }).manager.tools())).toEqual(["research"]);
    expect(names(setup(tools(), { exclusive: ["research"], disabled: ["research"] }).manager.tools())).toEqual(["a", "b", "c"]);
  });

  it("restricts the first round to forced tools and gives OpenAI tool choices for it", async () => {
    const { manager } = setup(tools(), { forced: ["b"] });
    expect(names(manager.tools())).toEqual(["b"]);
    expect(manager.forcedToolChoices()).toEqual([{ type: "function", function: { name: "b" } }]);
    await manager.executeSelectedTools([{ id: "1", name: "b", arguments: {} }]);
    expect(manager.round).toBe(1);
    expect(names(manager.tools())).toEqual(["a", "b", "c", "research"]);
    expect(manager.forcedToolChoices()).toEqual([]);
  });

  it("refuses a call to a tool that is not offered this round", async () => {
    const { manager } = setup(tools(), { disabled: ["c"] });
    const [disabled, unknown] = await manager.executeSelectedTools([
      { id: "1", name: "c", arguments: {} },
      { id: "2", name: "bb", arguments: {} },
    ]);
    expect(disabled).toMatchObject({ id: "1", status: "error", error: expect.stringContaining("not enabled") });
    expect(unknown).toMatchObject({ id: "2", status: "error" });
    expect(unknown?.content).toContain('Did you mean "b"');
  });

  it("rejects a bad maxCallsPerRound", () => {
    try {
      setup(tools(), { maxCallsPerRound: 0 });
      expect.unreachable();
    } catch (error) {
      expect(isChainRuntimeError(error) && error.code).toBe("POLICY_INVALID");
    }
  });
});

describe("ToolManager.filterDuplicateCalls", () => {
  it("drops calls with the same name and canonical arguments, JSON strings parsed first", () => {
    const { manager } = setup([echoTool("a"), echoTool("b")]);
    const kept = manager.filterDuplicateCalls([
      { id: "1", name: "a", arguments: { x: 1, y: [1, 2] } },
      { id: "2", name: "a", arguments: '{"y":[1,2],"x":1}' },
      { id: "3", name: "b", arguments: { x: 1, y: [1, 2] } },
      { id: "4", name: "a", arguments: { x: 2 } },
    ]);
    expect(kept.map((call) => call.id)).toEqual(["1", "3", "4"]);
  });
});

describe("ToolManager.executeSelectedTools", () => {
  it("runs a duplicate call once and answers every duplicate's id with the same result, in call order", async () => {
    const a = echoTool("a");
    const b = echoTool("b");
    const { manager } = setup([a, b]);
    const responses = await manager.executeSelectedTools([
      { id: "1", name: "a", arguments: { q: 1 } },
      { id: "2", name: "b", arguments: { q: 1 } },
      { id: "3", name: "a", arguments: '{"q":1}' },
      { name: "a", arguments: { q: 1 } } as never,
    ]);
    expect(responses.map((r) => [r.id, r.name, r.status, r.content])).toEqual([
      ["1", "a", "ok", '{"q":1}'],
      ["2", "b", "ok", '{"q":1}'],
      ["3", "a", "ok", '{"q":1}'],
      ["call_3", "a", "ok", '{"q":1}'],
    ]);
    expect(responses[2]?.result).toEqual(responses[0]?.result);
    expect(a.calls).toHaveLength(1);
    expect(manager.session.trace.map((r) => r.callId)).toEqual(["1", "2"]);
  });

  it("answers the very same call sent twice under one id once", async () => {
    const a = echoTool("a");
    const { manager } = setup([a]);
    const responses = await manager.executeSelectedTools([
      { id: "1", name: "a", arguments: { q: 1 } },
      { id: "1", name: "a", arguments: { q: 1 } },
      { id: "2", name: "a", arguments: { q: 1 } },
    ]);
    expect(responses.map((r) => [r.id, r.status])).toEqual([
      ["1", "ok"],
      ["2", "ok"],
    ]);
    expect(a.calls).toHaveLength(1);
  });

  it("gives a duplicate the refusal of the call it copies, and does not count it against the round cap", async () => {
    const a = echoTool("a");
    const { manager } = setup([a], { maxCallsPerRound: 2 });
    const responses = await manager.executeSelectedTools(
      [1, 1, 2, 3, 3].map((n, i) => ({ id: `c${i}`, name: "a", arguments: { n } })),
    );
    expect(responses.map((r) => [r.id, r.status])).toEqual([
      ["c0", "ok"],
      ["c1", "ok"],
      ["c2", "ok"],
      ["c3", "error"],
      ["c4", "error"],
    ]);
    expect(responses[4]?.content).toBe(responses[3]?.content);
    expect(responses[4]?.content).toContain("at most 2 tool calls run per round");
    // Numbered by its place in the list, as the model sent it, and among the distinct calls.
    expect(responses[3]?.content).toContain("this was call 4, the 3rd distinct one.");
    expect(a.calls.map((c) => c.args.n)).toEqual([1, 2]);
  });

  it("never takes a call its caller refused (rejection) for a duplicate, nor a duplicate for it", async () => {
    const a = echoTool("a");
    const { manager } = setup([a]);
    const rejection = { status: "error", code: "BRIDGE_ERROR", text: "refused by the caller" } as const;
    const responses = await manager.executeSelectedTools([
      { id: "r1", name: "a", arguments: { n: 1 }, rejection },
      { id: "v1", name: "a", arguments: { n: 1 } },
      { id: "v2", name: "a", arguments: { n: 1 } },
      { id: "r2", name: "a", arguments: { n: 1 }, rejection },
    ]);
    expect(responses.map((r) => [r.id, r.status, (r.result as { code?: string } | undefined)?.code])).toEqual([
      ["r1", "error", "BRIDGE_ERROR"],
      ["v1", "ok", undefined],
      ["v2", "ok", undefined],
      ["r2", "error", "BRIDGE_ERROR"],
    ]);
    expect(a.calls).toHaveLength(1);
  });

  it("runs a copy of a call refused for its repeated id when the copy has an id of its own", async () => {
    const a = echoTool("a");
    const { manager } = setup([a]);
    const responses = await manager.executeSelectedTools([
      { id: "d", name: "a", arguments: { to: "x" } },
      { id: "d", name: "a", arguments: { to: "y" } },
      { id: "e", name: "a", arguments: { to: "y" } },
    ]);
    expect(responses.map((r) => [r.id, r.status])).toEqual([
      ["d", "ok"],
      ["call_1", "error"],
      ["e", "ok"],
    ]);
    expect(a.calls.map((c) => c.args.to)).toEqual(["x", "y"]);
  });

  it("answers calls that are not an array with one INVALID_ARGUMENTS response saying so, and runs nothing", async () => {
    const a = echoTool("a");
    const { manager } = setup([a]);
    const call = { id: "c1", name: "a", arguments: {} };
    for (const [calls, got] of [
      [null, "got null."],
      [undefined, "got undefined."],
      ["a", 'got "a".'],
      [{}, "got an object."],
      [new Set([call]), "got an iterable that is not an array; spread it: executeSelectedTools([...calls])."],
      // Whatever its getters or traps throw, it is answered, never a throw.
      [Object.defineProperty({}, Symbol.iterator, { get: () => { throw new Error("boom"); } }), "got an object."],
      [new Proxy({}, { get: () => { throw new Error("trap"); } }), "got an object."],
    ] as const) {
      const responses = await manager.executeSelectedTools(calls as never);
      expect(responses).toHaveLength(1);
      expect(responses[0]).toMatchObject({ id: "call_0", name: "(not a tool call)", status: "error", result: { code: "INVALID_ARGUMENTS" } });
      expect(responses[0]?.content).toBe(`Not executed: executeSelectedTools() takes an array of tool calls ({ id, name, arguments }); ${got}`);
    }
    const [one] = await manager.executeSelectedTools(call as never);
    expect(one).toMatchObject({ id: "c1", name: "a", status: "error", result: { code: "INVALID_ARGUMENTS" } });
    expect(one?.content).toContain('got one tool call ("a"); wrap it in an array: executeSelectedTools([call])');
    expect(a.calls).toHaveLength(0);
    expect(manager.round).toBe(8);
  });

  it("answers entries that are not tool calls with INVALID_ARGUMENTS and runs the rest (never throws)", async () => {
    const a = echoTool("a");
    const { manager } = setup([a]);
    const hostileName = { toString: () => { throw new Error("no name"); } };
    const throwingGetter = { id: "g", get name(): string { throw new Error("boom"); }, arguments: {} };
    const responses = await manager.executeSelectedTools([null, { id: "x", name: hostileName, arguments: {} }, { id: "ok", name: "a", arguments: { q: 1 } }, null, throwingGetter] as never);
    expect(responses.map((r) => [r.id, r.status, r.result && r.result.status === "error" ? r.result.code : undefined])).toEqual([
      ["call_0", "error", "INVALID_ARGUMENTS"],
      ["x", "error", "INVALID_ARGUMENTS"],
      ["ok", "ok", undefined],
      ["call_3", "error", "INVALID_ARGUMENTS"],
      ["g", "error", "INVALID_ARGUMENTS"],
    ]);
    expect(a.calls).toHaveLength(1);
  });

  it("caps calls per round; the rest get an error response naming the cap", async () => {
    const a = echoTool("a");
    const { manager } = setup([a], { maxCallsPerRound: 2 });
    const responses = await manager.executeSelectedTools([1, 2, 3, 4].map((n) => ({ id: `c${n}`, name: "a", arguments: { n } })));
    expect(responses.map((r) => r.status)).toEqual(["ok", "ok", "error", "error"]);
    expect(responses[2]?.content).toContain("at most 2 tool calls run per round");
    expect(a.calls.map((c) => c.args.n)).toEqual([1, 2]);
  });

  it("refuses a batch that mixes a take-control tool with others, explaining to each", async () => {
    const research = echoTool("research", { takesControl: true });
    const a = echoTool("a");
    const { manager } = setup([research, a, echoTool("b")]);
    expect(manager.doesATakeControl([{ name: "a", arguments: {} }])).toBe(false);
    expect(manager.doesATakeControl([{ name: "a", arguments: {} }, { name: "research", arguments: {} }])).toBe(true);
    const [own, sibling] = await manager.executeSelectedTools([
      { id: "r", name: "research", arguments: { topic: "x" } },
      { id: "s", name: "a", arguments: {} },
    ]);
    expect(own?.status).toBe("error");
    expect(own?.content).toContain("`research`");
    expect(own?.content).toContain("must be called on its own");
    expect(own?.content).toContain("None of the tools in this batch were executed");
    expect(own?.content).toContain("first calling the other tools, then calling `research` alone");
    expect(sibling?.status).toBe("error");
    expect(sibling?.content).toContain("Not executed because `research` must be called on its own");
    expect(research.calls).toHaveLength(0);
    expect(a.calls).toHaveLength(0);
  });

  it("runs a take-control tool that is called alone", async () => {
    const research = echoTool("research", { takesControl: true });
    const { manager } = setup([research]);
    const [response] = await manager.executeSelectedTools([{ id: "r", name: "research", arguments: {} }]);
    expect(response?.status).toBe("ok");
    expect(research.calls).toHaveLength(1);
  });

  it("runs calls in parallel: both start before either finishes", async () => {
    const events: string[] = [];
    const bothStarted = deferred();
    let started = 0;
    const slow = (name: string) =>
      localTool(name, async () => {
        events.push(`start ${name}`);
        if (++started === 2) bothStarted.resolve();
        await bothStarted.promise;
        events.push(`end ${name}`);
        return name;
      });
    const { manager } = setup([slow("x"), slow("y")]);
    const responses = await manager.executeSelectedTools([
      { id: "1", name: "x", arguments: {} },
      { id: "2", name: "y", arguments: {} },
    ]);
    expect(responses.map((r) => r.content)).toEqual(["x", "y"]);
    expect(events.slice(0, 2).sort()).toEqual(["start x", "start y"]);
  });

  it("dispatches provider-defined tools to handleCall and skips hosted ones", async () => {
    const seen: ProviderToolCall[] = [];
    const shell: ProviderDefinedTool = {
      name: "shell",
      description: "runs commands",
      providerSpecs: { openai: { type: "shell" } },
      callTypes: ["shell_call"],
      async handleCall(call, ctx) {
        seen.push(call);
        expect(ctx.signal.aborted).toBe(false);
        return { content: [{ type: "text", text: "exit 0" }] };
      },
    };
    const { manager } = setup([shell, hosted]);
    const [ran, skipped] = await manager.executeSelectedTools([
      { id: "s1", name: "shell", arguments: '{"cmd":"ls"}' },
      { id: "w1", name: "web_search", arguments: { q: "x" } },
    ]);
    expect(ran).toMatchObject({ id: "s1", status: "ok", content: "exit 0" });
    expect(seen).toEqual([{ id: "s1", type: "shell_call", name: "shell", arguments: { cmd: "ls" } }]);
    expect(skipped).toMatchObject({ id: "w1", status: "skipped" });
    expect(skipped?.content).toContain("run by the model provider");
  });

  it("turns every failure into a response: throwing tools, handleCall errors, denials, bad arguments", async () => {
    const shell = throwingShell("sandbox gone");
    const crash = localTool("crash", () => {
      throw "nope";
    });
    const { manager } = setup([shell, crash, echoTool("risky", { risk: "high" }), echoTool("a")]);
    const responses = await manager.executeSelectedTools([
      { id: "1", name: "shell", arguments: {} },
      { id: "2", name: "crash", arguments: {} },
      { id: "3", name: "risky", arguments: {} },
      { id: "4", name: "a", arguments: "{broken" },
    ]);
    expect(responses.map((r) => r.status)).toEqual(["error", "error", "denied", "error"]);
    expect(responses[0]?.error).toContain("sandbox gone");
    expect(responses[1]?.error).toContain("nope");
    expect(responses[2]?.result).toMatchObject({ code: "APPROVAL_DENIED" });
    expect(responses[3]?.result).toMatchObject({ code: "INVALID_ARGUMENTS" });
    for (const response of responses) expect(response.content).toBe(response.error);
  });

  it("uses call ids, or call_<index> when absent, and mentions produced files", async () => {
    const png = Buffer.from([1, 2, 3]).toString("base64");
    const chart = localTool("chart", () => ({ content: [{ type: "text", text: "drawn" }, { type: "image", data: png, mimeType: "image/png" }] }));
    const { manager } = setup([chart], {}, new MemoryBlobStore());
    const [response] = await manager.executeSelectedTools([{ name: "chart", arguments: {} }]);
    expect(response?.id).toBe("call_0");
    expect(response?.content).toBe("drawn\n[file /workspace/media/chart_0.png (image/png, 3 bytes)]");
    await manager.close();
  });

  it("counts local calls against a session passed in", async () => {
    const { manager, invoker } = setup([echoTool("a")]);
    const session = invoker.openSession({ policy: { maxToolCalls: 1 } });
    const first = await manager.executeSelectedTools([{ id: "1", name: "a", arguments: {} }], { session });
    const second = await manager.executeSelectedTools([{ id: "2", name: "a", arguments: { n: 2 } }], { session });
    expect(first[0]?.status).toBe("ok");
    expect(second[0]?.result).toMatchObject({ code: "BUDGET_EXCEEDED" });
    expect(session.trace).toHaveLength(2);
  });

  it("counts and records provider-defined calls like local ones: budget, closed session, trace", async () => {
    const ran: unknown[] = [];
    const shell: ProviderDefinedTool = {
      name: "shell",
      description: "runs commands",
      providerSpecs: { openai: { type: "shell" } },
      callTypes: ["shell_call"],
      async handleCall(call) {
        ran.push(call.arguments);
        return { content: [{ type: "text", text: "exit 0" }] };
      },
    };
    const { manager, invoker } = setup([shell, echoTool("a")]);
    const session = invoker.openSession({ policy: { maxToolCalls: 2 } });
    const [first] = await manager.executeSelectedTools([{ id: "s1", name: "shell", arguments: '{"cmd":"ls"}' }], { session });
    const [second] = await manager.executeSelectedTools([{ id: "a1", name: "a", arguments: {} }], { session });
    const [third] = await manager.executeSelectedTools([{ id: "s2", name: "shell", arguments: '{"cmd":"rm -rf /tmp/x"}' }], { session });
    expect([first?.status, second?.status]).toEqual(["ok", "ok"]);
    expect(third).toMatchObject({ status: "error", result: { code: "BUDGET_EXCEEDED" } });
    expect(ran).toEqual([{ cmd: "ls" }]); // the call past the budget never reached handleCall
    expect(session.trace.map((r) => [r.callId, r.tool, r.status, r.code])).toEqual([
      ["s1", "shell", "ok", undefined],
      ["a1", "a", "ok", undefined],
      ["s2", "shell", "error", "BUDGET_EXCEEDED"],
    ]);
    await session.close();
    const [closed] = await manager.executeSelectedTools([{ id: "s3", name: "shell", arguments: {} }], { session });
    expect(closed).toMatchObject({ status: "error", result: { code: "CANCELLED" } });
    expect(ran).toHaveLength(1);
  });
});

describe("ToolManager response ids", () => {
  it("never generates an id a caller gave to another call of the round", async () => {
    const a = echoTool("a");
    const { manager } = setup([a]);
    const given = await manager.executeSelectedTools([
      { id: "call_1", name: "a", arguments: { n: 1 } },
      { name: "a", arguments: { n: 2 } } as never,
    ]);
    expect(given.map((r) => [r.id, r.status, r.content])).toEqual([
      ["call_1", "ok", '{"n":1}'],
      ["call_1_1", "ok", '{"n":2}'],
    ]);
    const later = await manager.executeSelectedTools([{ name: "a", arguments: { n: 3 } } as never, { id: "call_0", name: "a", arguments: { n: 4 } }]);
    expect(later.map((r) => r.id)).toEqual(["call_0_1", "call_0"]);
    expect(a.calls).toHaveLength(4);
  });

  it("refuses a later call that repeats a given id: not run, an error naming the id, under an id of its own", async () => {
    const a = echoTool("a");
    const { manager } = setup([a]);
    const responses = await manager.executeSelectedTools([
      { id: "dup", name: "a", arguments: { to: "x" } },
      { id: "dup", name: "a", arguments: { to: "y" } },
      { id: "call_1", name: "a", arguments: { to: "z" } },
    ]);
    expect(responses.map((r) => [r.id, r.status])).toEqual([
      ["dup", "ok"],
      ["call_1_1", "error"],
      ["call_1", "ok"],
    ]);
    expect(new Set(responses.map((r) => r.id)).size).toBe(3);
    expect(responses[1]?.result).toMatchObject({ code: "INVALID_ARGUMENTS" });
    expect(responses[1]?.content).toContain('the tool-call id "dup", which call 1 of this turn already has');
    expect(a.calls.map((c) => c.args.to)).toEqual(["x", "z"]);
  });
});

describe("ToolManager failure texts stay bounded", () => {
  const MIB = 1024 * 1024;
  /** What `clipText` makes of `char` repeated `length` times, cut at `max`. */
  const cut = (char: string, length: number, max: number) => `${char.repeat(max)}… [${length - max} more characters]`;

  it("cuts an unknown tool name repeated in UNKNOWN_TOOL", async () => {
    const { manager } = setup([echoTool("a")]);
    const [response] = await manager.executeSelectedTools([{ id: "1", name: "x".repeat(MIB), arguments: {} }]);
    expect(response?.result).toEqual({
      status: "error",
      code: "UNKNOWN_TOOL",
      text: `Unknown tool "${cut("x", MIB, MAX_ECHOED_NAME_CHARS)}". Available tools: "a".`,
    });
    expect(response?.content).toBe(response?.result?.text);
  });

  it("cuts what a provider-defined tool threw, in the response and the record", async () => {
    const shell = throwingShell("m".repeat(MIB));
    const { manager } = setup([shell]);
    const [response] = await manager.executeSelectedTools([{ id: "1", name: "shell", arguments: {} }]);
    expect(response?.result).toEqual({ status: "error", code: "TOOL_ERROR", text: `Tool "shell" failed: ${cut("m", MIB, MAX_ERROR_MESSAGE_CHARS)}` });
    expect(manager.session.trace[0]).toMatchObject({ code: "TOOL_ERROR", error: response?.result?.text });
    await manager.close();
  });

  it("cuts the name and message of a toolbox that throws on lookup", async () => {
    const toolbox = new Toolbox([echoTool("a")]);
    const throwing: ToolManagerToolbox = {
      get(name) {
        if (name === "a") return toolbox.get(name);
        throw new Error("g".repeat(MIB));
      },
      all: () => toolbox.all(),
    };
    const manager = new ToolManager({ toolbox: throwing, invoker: new ToolInvoker({ toolbox, policy: FAST_POLICY }) });
    const [response] = await manager.executeSelectedTools([{ id: "1", name: "x".repeat(MIB), arguments: {} }]);
    expect(response?.result).toEqual({
      status: "error",
      code: "TOOL_ERROR",
      text: `Tool "${cut("x", MIB, MAX_ECHOED_NAME_CHARS)}" failed: ${cut("g", MIB, MAX_ERROR_MESSAGE_CHARS)}`,
    });
  });

  it("cuts a repeated call id in its refusal", async () => {
    const { manager } = setup([echoTool("a")]);
    const id = "i".repeat(MIB);
    const [, repeated] = await manager.executeSelectedTools([
      { id, name: "a", arguments: { n: 1 } },
      { id, name: "a", arguments: { n: 2 } },
    ]);
    expect(repeated?.result).toMatchObject({ code: "INVALID_ARGUMENTS" });
    expect(repeated?.content).toContain(`the tool-call id "${cut("i", MIB, MAX_ECHOED_NAME_CHARS)}", which call 1`);
    expect(repeated?.content.length).toBeLessThan(1000);
  });
});

describe("ToolManager direct run_chain calls", () => {
  const chain = new ToolChainTool({ tools: [echoTool("lookup")], driver: "in-process", poolSize: 0 });
  afterAll(() => chain.close());

  it("offers run_chain and runs a direct call of it: the run's summary comes back", async () => {
    const { manager } = setup([echoTool("a"), chain]);
    expect(names(manager.tools())).toEqual(["a", "run_chain"]);
    const [response] = await manager.executeSelectedTools([
      { id: "rc", name: "run_chain", arguments: '{"code":"const r = await tools.lookup({ q: 20 }); return r.status === \\"ok\\" ? 22 : 0;"}' },
    ]);
    expect(response).toMatchObject({ id: "rc", name: "run_chain", status: "ok" });
    expect(response?.content).toContain("status: ok");
    expect(response?.content).toContain("return value:\n22");
    expect(response?.content).not.toContain("cannot be called from inside one");
    expect(response?.result).toMatchObject({ status: "ok", structured: { status: "ok", returnValue: 22, stats: { toolCalls: 1 } } });
    // one direct call of the session, recorded like a local call
    expect(manager.session.callCount).toBe(1);
    expect(manager.session.trace).toMatchObject([{ callId: "rc", tool: "run_chain", status: "ok" }]);
    await manager.close();
  });

  it("answers a script error (and a call without code) with an error response", async () => {
    const { manager } = setup([chain]);
    const [thrown, noCode] = await manager.executeSelectedTools([
      { id: "e1", name: "run_chain", arguments: { code: 'throw new Error("no such order")' } },
      { id: "e2", name: "run_chain", arguments: {} },
    ]);
    expect(thrown).toMatchObject({ id: "e1", status: "error", result: { code: "TOOL_FAILED", structured: { status: "error" } } });
    expect(thrown?.content).toContain("no such order");
    expect(thrown?.error).toBe(thrown?.content);
    expect(noCode).toMatchObject({ id: "e2", status: "error", result: { code: "TOOL_FAILED" } });
    expect(noCode?.content).toContain('run_chain needs { "code": string }');
    expect(manager.session.trace.map((r) => [r.callId, r.status, r.code])).toEqual(
      expect.arrayContaining([
        ["e1", "error", "TOOL_FAILED"],
        ["e2", "error", "TOOL_FAILED"],
      ]),
    );
    await manager.close();
  });

  it("counts a direct run_chain call against the session budget, refusing in words that fit a model turn", async () => {
    const { manager, invoker } = setup([echoTool("a"), chain]);
    const session = invoker.openSession({ policy: { maxToolCalls: 1 } });
    const [first] = await manager.executeSelectedTools([{ id: "1", name: "run_chain", arguments: { code: "return 1" } }], { session });
    const [second] = await manager.executeSelectedTools([{ id: "2", name: "run_chain", arguments: { code: "return 2" } }], { session });
    expect(first?.status).toBe("ok");
    expect(second).toMatchObject({ status: "error", result: { code: "BUDGET_EXCEEDED" } });
    expect(second?.content).toContain("Tool-call budget exhausted: 1 tool call is allowed here (maxToolCalls), and all were used.");
    expect(second?.content).not.toContain("chain");
    // The same words for a local tool past the budget (the invoker's gate).
    const [third] = await manager.executeSelectedTools([{ id: "3", name: "a", arguments: {} }], { session });
    expect(third?.content).toContain("Tool-call budget exhausted: 1 tool call is allowed here");
    expect(third?.content).not.toContain("chain");
    expect(session.trace.map((r) => r.status)).toEqual(["ok", "error", "error"]);
    await session.close();
  });
});

/** A provider-defined `shell` tool whose `handleCall` throws `message`. */
function throwingShell(message: string): ProviderDefinedTool {
  return {
    name: "shell",
    description: "d",
    providerSpecs: { openai: {} },
    callTypes: ["shell_call"],
    async handleCall() {
      throw new Error(message);
    },
  };
}

/**
 * Every public constructor and function that takes an options object refuses a field it does not
 * know, naming it and the field it is close to: a misspelt option (`tracestore`) would otherwise
 * be ignored without a word, and the object would not do what was asked (a resume without its
 * store forgets that the chain was resumed).
 */
import { Readable, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  CliApprovalHandler,
  FileApprovalStore,
  FileBlobStore,
  FileTraceStore,
  InProcessSandboxDriver,
  isChainRuntimeError,
  MemoryBlobStore,
  MemoryTraceStore,
  ProcessSandboxDriver,
  QueueApprovalHandler,
  replay,
  resumeChain,
  ToolChainTool,
  ToolInvoker,
  ToolManager,
  Toolbox,
  TraceRecorder,
  traceToTest,
  type ChainTrace,
} from "../../src/index.ts";
import { checkOptionNames, optionNames } from "../../src/kernel/check-option-shape.ts";

/** The error `make` throws or rejects with. */
async function refusal(make: () => unknown): Promise<unknown> {
  try {
    await make();
  } catch (error) {
    return error;
  }
  return undefined;
}

const toolbox = new Toolbox([]);
const invoker = new ToolInvoker({ toolbox });
const store = new MemoryTraceStore();

let traced: Promise<ChainTrace> | undefined;

/** The trace of one finished chain (made once). */
function aTrace(): Promise<ChainTrace> {
  traced ??= (async () => {
    const chain = new ToolChainTool({ tools: [], driver: "in-process", poolSize: 0, traceStore: store });
    try {
      const run = await chain.run("return 1", { chainId: "traced-once" });
      return await store.load(run.chainId);
    } finally {
      await chain.close();
    }
  })();
  return traced;
}

describe("unknown option fields", () => {
  const cases: [string, () => unknown, string, string | undefined][] = [
    ["ToolChainTool", () => new ToolChainTool({ tools: [], tracestore: store } as never), "tracestore", "traceStore"],
    ["ToolInvoker", () => new ToolInvoker({ toolbox, blobstore: new MemoryBlobStore() } as never), "blobstore", "blobStore"],
    ["openSession()", () => invoker.openSession({ chainid: "x" } as never), "chainid", "chainId"],
    ["ToolManager", () => new ToolManager({ toolbox, invoker, maxCallsPerRonud: 2 } as never), "maxCallsPerRonud", "maxCallsPerRound"],
    ["MemoryBlobStore", () => new MemoryBlobStore({ clock: Date.now } as never), "clock", undefined],
    ["FileBlobStore", () => new FileBlobStore({ directory: "/tmp/x" } as never), "directory", undefined],
    ["FileTraceStore", () => new FileTraceStore({ dir: "/tmp/x", fsnyc: false } as never), "fsnyc", "fsync"],
    ["FileApprovalStore", () => new FileApprovalStore({ dri: "/tmp/x" } as never), "dri", "dir"],
    ["CliApprovalHandler", () => new CliApprovalHandler({ input: Readable.from([]), output: new Writable(), maxArgChars: 5 } as never), "maxArgChars", "maxArgsChars"],
    ["QueueApprovalHandler", () => new QueueApprovalHandler({ pollInterval: 10 } as never), "pollInterval", "pollIntervalMs"],
    ["InProcessSandboxDriver", () => new InProcessSandboxDriver({ poolsize: 1 } as never), "poolsize", "poolSize"],
    ["ProcessSandboxDriver", () => new ProcessSandboxDriver({ processs: 1 } as never), "processs", "processes"],
    ["TraceRecorder", () => new TraceRecorder({ store, chainId: "abc", onerror: () => undefined } as never), "onerror", "onError"],
    ["replay()", async () => replay(await aTrace(), { mode: "resume", tools: [], tracestore: store } as never), "tracestore", "traceStore"],
    ["resumeChain()", () => resumeChain("traced-once", "approved", { traceStore: store, requestid: "r" } as never), "requestid", "requestId"],
    ["traceToTest()", async () => traceToTest(await aTrace(), { importfrom: "x" } as never), "importfrom", "importFrom"],
    ["list()", () => store.list({ limti: 5 } as never), "limti", "limit"],
    ["list()", () => new FileTraceStore({ dir: "/tmp/isochain-no-such-store" }).list({ limti: 5 } as never), "limti", "limit"],
    ["prune()", () => store.prune({ kep: 0 } as never), "kep", "keep"],
  ];

  it.each(cases)("%s refuses it with ARGUMENT_INVALID, naming it and its near neighbour", async (owner, make, field, near) => {
    const error = await refusal(make);
    expect(isChainRuntimeError(error) && error.code).toBe("ARGUMENT_INVALID");
    expect(isChainRuntimeError(error) && error.details).toMatchObject({ argument: field });
    const message = isChainRuntimeError(error) ? error.message : "";
    expect(message).toContain(`${owner} options has no field "${field}"`);
    if (near !== undefined) expect(message).toContain(`did you mean ${near}?`);
  });

  it("says where a directory goes when a file store is given a path instead of options", async () => {
    for (const make of [() => new FileBlobStore("/tmp/blobs" as never), () => new FileTraceStore("/tmp/traces" as never)]) {
      const error = await refusal(make);
      expect(isChainRuntimeError(error) && error.code).toBe("ARGUMENT_INVALID");
      expect(isChainRuntimeError(error) && error.message).toMatch(/options must be an object of dir, .*; got "\/tmp\/(blobs|traces)" \(a directory goes in \{ dir: "\/tmp\/(blobs|traces)" \}\)/);
    }
  });

  it("suggests the one field that differs only in case, else the close ones", () => {
    const known = optionNames<{ approvalHandler?: 1; approvalMode?: 1; blobStore?: 1 }>({ approvalHandler: true, approvalMode: true, blobStore: true });
    expect(() => checkOptionNames("X", { approvalhandler: 1 }, known)).toThrow(/no field "approvalhandler"; did you mean approvalHandler\? \(fields/);
    expect(() => checkOptionNames("X", { approvalMod: 1 }, known)).toThrow(/did you mean approvalMode/);
    expect(() => checkOptionNames("X", { zzz: 1 }, known)).toThrow(/no field "zzz" \(fields: approvalHandler, approvalMode, blobStore\)/);
    expect(() => checkOptionNames("X", undefined, known)).not.toThrow();
    expect(() => checkOptionNames("X", { blobStore: undefined }, known)).not.toThrow();
  });
});

describe("ToolManager options", () => {
  it.each([
    ["no invoker", { toolbox }, /ToolManager options\.invoker must be a ToolInvoker; got undefined/],
    ["a toolbox without all()", { toolbox: { get() {} }, invoker }, /options\.toolbox must be a Toolbox; it has no all\(\) method/],
    ["a name as the disabled list", { toolbox, invoker, disabled: "shell" }, /options\.disabled must be a list of tool names; got "shell"/],
    ["a list holding a non-name", { toolbox, invoker, forced: [5] }, /options\.forced must be a list of tool names; it holds 5/],
    ["an enabled that is neither", { toolbox, invoker, enabled: 5 }, /options\.enabled must be a list of tool names or a function/],
  ])("refuses %s at construction with ARGUMENT_INVALID (it used to throw a TypeError at the first round)", async (_label, options, message) => {
    const error = await refusal(() => new ToolManager(options as never));
    expect(isChainRuntimeError(error) && error.code).toBe("ARGUMENT_INVALID");
    expect(isChainRuntimeError(error) && error.message).toMatch(message);
  });
});

describe("sandbox driver sizes", () => {
  it.each([
    [{ poolSize: -1 }, /options\.poolSize must be an integer from 0 to 256; got -1/],
    [{ poolSize: 1.5 }, /options\.poolSize must be an integer/],
    [{ recycleHeapRatio: 5 }, /options\.recycleHeapRatio must be a share of the heap limit, above 0 and at most 1; got 5/],
    [{ recycleHeapRatio: 0 }, /recycleHeapRatio/],
    [{ maxRunsPerIsolate: 0 }, /options\.maxRunsPerIsolate must be an integer >= 1/],
    [{ memoryLimitMb: 4 }, /options\.memoryLimitMb must be an integer from 8 to 16384/],
    [{ memoryLimitMb: 134_217_728 }, /options\.memoryLimitMb must be an integer from 8 to 16384; got 134217728/],
    [{ maxIsolates: 0 }, /options\.maxIsolates must be an integer >= 1/],
    [{ idleTrimMs: -1 }, /options\.idleTrimMs must be a number of ms >= 0/],
  ])("InProcessSandboxDriver refuses %j with ARGUMENT_INVALID", async (options, message) => {
    const error = await refusal(() => new InProcessSandboxDriver(options));
    expect(isChainRuntimeError(error) && error.code).toBe("ARGUMENT_INVALID");
    expect(isChainRuntimeError(error) && error.message).toMatch(message);
  });

  it("replay() refuses an unknown mode, and a resume without tools, as malformed options", async () => {
    const trace = await aTrace();
    const badMode = await refusal(() => replay(trace, { mode: "loose" } as never));
    expect(isChainRuntimeError(badMode) && [badMode.code, badMode.message]).toEqual(["ARGUMENT_INVALID", 'replay() options.mode must be "strict" or "resume"; got "loose".']);
    const noTools = await refusal(() => replay(trace, { mode: "resume" }));
    expect(isChainRuntimeError(noTools) && noTools.code).toBe("ARGUMENT_INVALID");
  });

  it("ToolChainTool and replay() refuse tools beside a toolbox (one of them would be ignored)", async () => {
    const trace = await aTrace();
    const box = new Toolbox([]);
    const chainError = await refusal(() => new ToolChainTool({ toolbox: box, tools: [], driver: "in-process" }));
    expect(isChainRuntimeError(chainError) && [chainError.code, chainError.details]).toEqual(["ARGUMENT_INVALID", { argument: "tools" }]);
    expect((chainError as Error).message).toBe(
      "ToolChainTool options.tools must be left out when toolbox is given; got both, and tools would be ignored: put every tool in the one Toolbox.",
    );
    const replayError = await refusal(() => replay(trace, { mode: "resume", toolbox: box, tools: [], traceStore: new MemoryTraceStore() }));
    expect(isChainRuntimeError(replayError) && replayError.message).toContain("replay() options.tools must be left out when toolbox is given");
  });

  it("replay() refuses a resume without a traceStore: nothing would stop a second resume from running the same calls again", async () => {
    const trace = await aTrace();
    const noStore = await refusal(() => replay(trace, { mode: "resume", tools: [], driver: "in-process" }));
    expect(isChainRuntimeError(noStore) && [noStore.code, noStore.details]).toEqual(["ARGUMENT_INVALID", { argument: "traceStore" }]);
    expect((noStore as Error).message).toContain("traceStore: new MemoryTraceStore()");
    // With the store given, the same resume runs (and is claimed there).
    const resumed = await replay(trace, { mode: "resume", tools: [], traceStore: new MemoryTraceStore(), driver: "in-process" });
    expect(resumed.run.status).toBe("ok");
  });
});

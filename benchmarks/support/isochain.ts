/**
 * Lazy access to the isochain runtime for the scenarios.
 *
 * The suite must run while the runtime is incomplete (and must keep running when one piece is
 * broken), so nothing here imports the runtime statically: each module is loaded with a
 * dynamic `import()` of a computed specifier inside a scenario's `setup`, checked for the export
 * it needs, and used through the small structural types below. A missing module or export, or a
 * first run that does not return what it should, throws from `setup`, and the harness prints
 * the scenario as "skipped: <reason>". (The price: these files are typechecked against the
 * shapes below, not against the runtime's own types; `checkRun` catches drift at run time.)
 * @module
 */
import { DEFAULT_CHAIN_POLICY } from "../../src/kernel/index.ts";
import { BIG_RESULT } from "./fixtures.ts";

/** The parts of a `ChainRunResult` the suite reads. */
export interface ChainRunLike {
  readonly status: string;
  readonly returnValue?: unknown;
  readonly error?: { readonly message?: string; readonly name?: string };
  readonly callTrace?: readonly unknown[];
  readonly stats?: { readonly heapBytes?: number };
}

/** The parts of `ToolChainTool` the suite uses. */
export interface ChainLike {
  warm(): Promise<void>;
  run(code: string): Promise<ChainRunLike>;
  close(): Promise<void>;
}

/** The parts of `SandboxDriver` the suite uses (see sandbox/sandbox-driver.ts). */
export interface DriverLike {
  warm?(): Promise<void>;
  run(request: unknown): Promise<{ readonly status: string; readonly returnJson?: string; readonly heapBytes?: number; readonly error?: { readonly message?: string } }>;
  close(): Promise<void>;
}

/** The parts of `InvokerSession` / `ToolInvoker` the suite uses. */
export interface InvokerSessionLike {
  close?(): Promise<unknown> | unknown;
}
export interface InvokerLike {
  openSession(options?: unknown): InvokerSessionLike;
  invoke(call: { readonly name: string; readonly arguments: unknown }, options: { readonly session: InvokerSessionLike }): Promise<{ readonly status: string; readonly text?: string }>;
}

/** `compileScript`'s result, as far as the suite reads it. */
export interface CompileResultLike {
  readonly ok: boolean;
  readonly code?: string;
  readonly error?: { readonly message?: string };
}
export type CompileScriptLike = (source: string, options?: { readonly filename?: string }) => CompileResultLike;

type Constructor<T> = new (...args: never[]) => T;

/**
 * Imports `path` (relative to the project root) and returns its export `name`, which must be a
 * function or class. Throws an `Error` naming the module or export otherwise.
 */
export async function importExport(path: string, name: string): Promise<unknown> {
  const url = new URL(`../../${path}`, import.meta.url).href;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    const message = error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error);
    throw new Error(`${path} did not load (${message})`, { cause: error });
  }
  const value = mod[name];
  if (typeof value !== "function") throw new Error(`${path} has no export ${name}`);
  return value;
}

async function importClass<T>(path: string, name: string): Promise<Constructor<T>> {
  return (await importExport(path, name)) as Constructor<T>;
}

/** The `echo` and `big` tools as isochain tools, built with the project's `defineTool`. */
export async function defineBenchTools(): Promise<unknown[]> {
  const defineTool = (await importExport("src/toolbox/define-tool.ts", "defineTool")) as (definition: unknown) => unknown;
  return [
    defineTool({
      name: "echo",
      description: "Returns its arguments.",
      inputSchema: { type: "object", properties: { n: { type: "number" } } },
      execute: (args: unknown) => args,
    }),
    defineTool({
      name: "big",
      description: "Returns a 1 MiB string.",
      inputSchema: { type: "object", properties: {} },
      execute: () => BIG_RESULT,
    }),
  ];
}

/**
 * A Toolbox of {@link defineBenchTools}, plus `extraTools` more (`tool_1` ... with a one-field
 * schema, as a real toolbox has dozens): a chain pays per run for every tool its script can call.
 */
export async function createToolbox(extraTools = 0): Promise<unknown> {
  const Toolbox = await importClass<unknown>("src/toolbox/toolbox.ts", "Toolbox");
  const defineTool = (await importExport("src/toolbox/define-tool.ts", "defineTool")) as (definition: unknown) => unknown;
  const extra = Array.from({ length: extraTools }, (_, i) =>
    defineTool({
      name: `tool_${i + 1}`,
      description: `Bench tool ${i + 1}: returns its arguments.`,
      inputSchema: { type: "object", properties: { id: { type: "string" } } },
      execute: (args: unknown) => args,
    }),
  );
  return new (Toolbox as unknown as new (tools: unknown[]) => unknown)([...(await defineBenchTools()), ...extra]);
}

/** A fresh `MemoryBlobStore`. */
export async function createBlobStore(): Promise<unknown> {
  const MemoryBlobStore = await importClass<unknown>("src/artifacts/memory-blob-store.ts", "MemoryBlobStore");
  return new (MemoryBlobStore as unknown as new () => unknown)();
}

/** Options of {@link createChain}. */
export interface CreateChainOptions {
  /** Warm sandboxes kept. @defaultValue the runtime's default */
  readonly poolSize?: number;
  /**
   * The sandbox driver; `"sync-drive"` is {@link createSyncDriveDriver}, a reference the runtime
   * does not offer; `"in-process-no-spin"` the in-process driver with `spinWaitUs: 0` (the host
   * thread sleeps as soon as it has handed the isolate its work). @defaultValue `"in-process"`
   */
  readonly driver?: "in-process" | "in-process-no-spin" | "process" | "sync-drive";
  /** The policy's `maxInlineResultBytes`. @defaultValue the runtime's default */
  readonly maxInlineResultBytes?: number;
  /** Tools beyond `echo` and `big` (see {@link createToolbox}). @defaultValue 0 */
  readonly extraTools?: number;
  /**
   * Trace every chain into a `MemoryTraceStore`; `warm()` then also drops the traces made so
   * far (untimed), so the store does not grow through the run. @defaultValue false
   */
  readonly traced?: boolean;
}

/**
 * A warmed `ToolChainTool` over the bench tools with a `MemoryBlobStore`, the in-process driver
 * (or `options.driver`) and `maxToolCalls: 100`. Throws (→ skipped) when a piece is missing.
 */
export async function createChain(options: CreateChainOptions = {}): Promise<ChainLike> {
  const ToolChainTool = await importClass<ChainLike>("src/chain/tool-chain-tool.ts", "ToolChainTool");
  let traceStore: { prune(options: { keep: number }): Promise<unknown> } | undefined;
  if (options.traced === true) {
    const MemoryTraceStore = await importClass<unknown>("src/trace/memory-trace-store.ts", "MemoryTraceStore");
    traceStore = new (MemoryTraceStore as unknown as new () => { prune(options: { keep: number }): Promise<unknown> })();
  }
  const chain = new (ToolChainTool as unknown as new (options: unknown) => ChainLike)({
    ...(traceStore === undefined ? {} : { traceStore }),
    toolbox: await createToolbox(options.extraTools),
    policy: { maxToolCalls: 100, ...(options.maxInlineResultBytes === undefined ? {} : { maxInlineResultBytes: options.maxInlineResultBytes }) },
    blobStore: await createBlobStore(),
    driver: await driverOf(options),
    ...(options.poolSize === undefined ? {} : { poolSize: options.poolSize }),
  });
  await chain.warm();
  if (traceStore === undefined) return chain;
  const store = traceStore;
  return {
    run: (code) => chain.run(code),
    warm: async () => {
      await store.prune({ keep: 0 });
      await chain.warm();
    },
    close: () => chain.close(),
  };
}

/** The `driver` option of `ToolChainTool` for {@link CreateChainOptions.driver}. */
async function driverOf(options: CreateChainOptions): Promise<unknown> {
  switch (options.driver) {
    case "sync-drive":
      return createSyncDriveDriver();
    case "in-process-no-spin": {
      const InProcessSandboxDriver = await importClass<DriverLike>("sandbox/in-process-driver.ts", "InProcessSandboxDriver");
      return new (InProcessSandboxDriver as unknown as new (options: unknown) => DriverLike)({ poolSize: options.poolSize ?? 2, spinWaitUs: 0 });
    }
    default:
      return options.driver ?? "in-process";
  }
}

/**
 * A sandbox driver over isolates driven synchronously on the host thread: the drive of the
 * process driver's sandbox child, here without its child, its guard or its kill timer. The
 * runtime does not offer it in-process, for two reasons: isolated-vm does not enforce the heap
 * limit of a synchronous entry (laverdet/isolated-vm#460), and a computing script holds the
 * host's event loop. Measured beside the in-process driver, it says what the asynchronous drive
 * (two thread hand-offs per round trip) costs a chain.
 */
export async function createSyncDriveDriver(): Promise<DriverLike & { readonly kind: string }> {
  const IsolatePool = (await importExport("sandbox/isolate-pool.ts", "IsolatePool")) as new (options: unknown) => {
    acquire(memoryLimitMb: number): { run(request: unknown): Promise<unknown> };
    release(runner: unknown): void;
    warm(): Promise<void>;
    close(): void;
  };
  const pool = new IsolatePool({ drive: "sync", poolSize: 1, memoryLimitMb: DEFAULT_CHAIN_POLICY.memoryLimitMb });
  const driver: DriverLike & { readonly kind: string } = {
    kind: "in-process",
    async run(request: unknown) {
      const runner = pool.acquire((request as { limits: { memoryLimitMb: number } }).limits.memoryLimitMb);
      try {
        return (await runner.run(request)) as Awaited<ReturnType<DriverLike["run"]>>;
      } finally {
        pool.release(runner);
      }
    },
    warm: () => pool.warm(),
    close: () => {
      pool.close();
      return Promise.resolve();
    },
  };
  return driver;
}

/** Runs `code` once and throws unless it ends `ok` with `expected` as its value. */
export async function checkRun(chain: ChainLike, code: string, expected: unknown): Promise<void> {
  const run = await chain.run(code);
  if (run.status !== "ok") {
    throw new Error(`first run ended ${run.status}${run.error?.message === undefined ? "" : `: ${run.error.message}`}`);
  }
  if (run.returnValue !== expected) throw new Error(`first run returned ${JSON.stringify(run.returnValue)}, expected ${JSON.stringify(expected)}`);
}

/** Loads every runtime module a chain needs, creating nothing (for "before" memory figures). */
export async function preloadRuntime(): Promise<void> {
  await importExport("src/chain/tool-chain-tool.ts", "ToolChainTool");
  await importExport("src/toolbox/toolbox.ts", "Toolbox");
  await importExport("src/toolbox/define-tool.ts", "defineTool");
  await importExport("src/artifacts/memory-blob-store.ts", "MemoryBlobStore");
  await importExport("sandbox/in-process-driver.ts", "InProcessSandboxDriver");
}

/** The project's `compileScript`. */
export async function loadCompileScript(): Promise<CompileScriptLike> {
  return (await importExport("src/compile/compile-script.ts", "compileScript")) as CompileScriptLike;
}

/** A new `InProcessSandboxDriver` (not warmed). */
export async function createDriver(poolSize: number): Promise<DriverLike> {
  const Driver = await importClass<DriverLike>("sandbox/in-process-driver.ts", "InProcessSandboxDriver");
  return new (Driver as unknown as new (options: unknown) => DriverLike)({ poolSize, memoryLimitMb: DEFAULT_CHAIN_POLICY.memoryLimitMb });
}

/**
 * A `SandboxRunRequest` for `script` (already compiled) with no tools, the default policy's
 * limits and a no-op call handler, as `ToolChainTool` builds it.
 */
export function driverRequest(script: string): unknown {
  return {
    chainId: "bench",
    script,
    scriptName: "chain.js",
    toolNames: [],
    maxToolCalls: 0,
    limits: {
      memoryLimitMb: DEFAULT_CHAIN_POLICY.memoryLimitMb,
      cpuTimeMs: DEFAULT_CHAIN_POLICY.cpuTimeMs,
      totalTimeoutMs: DEFAULT_CHAIN_POLICY.totalTimeoutMs,
      maxOutputBytes: DEFAULT_CHAIN_POLICY.maxOutputBytes,
      maxArgumentBytes: 8 * 1024 * 1024,
    },
    seed: 1,
    clockStart: 0,
    onToolCall: () => Promise.resolve({ status: "error", code: "UNKNOWN_TOOL", text: "no tools in this benchmark" }),
  };
}

/** A `ToolInvoker` over the bench tools (a budget large enough for one session per sample). */
export async function createInvoker(maxToolCalls: number): Promise<InvokerLike> {
  const ToolInvoker = await importClass<InvokerLike>("src/invoker/tool-invoker.ts", "ToolInvoker");
  return new (ToolInvoker as unknown as new (options: unknown) => InvokerLike)({
    toolbox: await createToolbox(),
    policy: { maxToolCalls },
    blobStore: await createBlobStore(),
  });
}

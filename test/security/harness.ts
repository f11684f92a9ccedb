/**
 * Shared fixture of the attack suite: a `ToolChainTool` wired to host tools that watch what they
 * receive, hooks that count the calls the host saw, and the checks every attack ends with
 * (exact outcome, trace whole, host healthy, host prototypes untouched).
 *
 * Every suite is parameterised by driver: {@link DRIVERS} is `["in-process"]`, plus `"process"`
 * once `sandbox/process-driver.ts` exists. Attacks that abort a whole Node process under the
 * in-process driver (isolated-vm's heap limit is not a hard limit for single large allocations,
 * laverdet/isolated-vm#457, #527) are marked `processOnly` and skipped for `"in-process"`.
 * @module
 */
import { existsSync } from "node:fs";
import { runInNewContext } from "node:vm";
import { setFlagsFromString } from "node:v8";
import { expect } from "vitest";
import {
  type AnyTool,
  type ApprovalHandler,
  type BlobStore,
  type ChainPolicy,
  type ChainRunResult,
  type ChainRunOptions,
  defineTool,
  type Hooks,
  MemoryBlobStore,
  ToolChainTool,
  type ToolChainToolOptions,
} from "../../src/index.ts";

/** A sandbox driver the suites run against. */
export type DriverName = "in-process" | "process";

/** True once the process-isolated driver has landed. */
export const HAS_PROCESS_DRIVER = existsSync(new URL("../../sandbox/process-driver.ts", import.meta.url));

/** The drivers every suite runs against. */
export const DRIVERS: readonly DriverName[] = HAS_PROCESS_DRIVER ? ["in-process", "process"] : ["in-process"];

/** The `driver` option for a driver name (`"process"` is not in `DriverChoice` until it lands). */
export function driverOption(driver: DriverName): NonNullable<ToolChainToolOptions["driver"]> {
  return driver as unknown as NonNullable<ToolChainToolOptions["driver"]>;
}

/** Small limits so that every limit hit costs little, with room for a loaded 2-core CI machine. */
export const ATTACK_POLICY: Partial<ChainPolicy> = Object.freeze({
  maxToolCalls: 50,
  callTimeoutMs: 300,
  approvalTimeoutMs: 100,
  totalTimeoutMs: 1500,
  cpuTimeMs: 800,
  memoryLimitMb: 32,
  maxOutputBytes: 4096,
  maxInlineResultBytes: 4096,
});

/** The V8 built-ins a fresh `node:vm` context has: the same V8 as the isolates. */
export const VM_GLOBAL_NAMES: readonly string[] = runInNewContext("Reflect.ownKeys(globalThis).map(String)") as string[];

/** Built-ins the prelude deletes (shared memory, WebAssembly, GC callbacks). */
export const REMOVED_GLOBALS: readonly string[] = ["SharedArrayBuffer", "Atomics", "WebAssembly", "FinalizationRegistry", "WeakRef"];

/** Globals isochain installs. */
export const ISOCHAIN_GLOBALS: readonly string[] = ["tools", "console", "budget", "artifact"];

/** Exactly the global names a script may see, sorted. */
export const ALLOWED_GLOBAL_NAMES: readonly string[] = [
  ...new Set([...VM_GLOBAL_NAMES.filter((name) => !REMOVED_GLOBALS.includes(name)), ...ISOCHAIN_GLOBALS]),
].sort();

/** `Object.prototype`'s own keys before any attack ran. */
export const HOST_OBJECT_PROTOTYPE_KEYS: readonly string[] = Reflect.ownKeys(Object.prototype).map(String).sort();
/** The host's own `Error.prepareStackTrace` / `captureStackTrace` before any attack ran. */
export const HOST_PREPARE_STACK_TRACE = Error.prepareStackTrace;
export const HOST_CAPTURE_STACK_TRACE = Error.captureStackTrace;
export const HOST_STACK_TRACE_LIMIT = Error.stackTraceLimit;

/**
 * Everything in `value` that is not plain data as the host should receive it: a primitive of
 * an unexpected type, or an object whose prototype is not `Object.prototype` / `Array.prototype`
 * of this realm, or with accessors or symbol keys. Empty when it is plain.
 */
export function plainDataViolations(value: unknown, path = "$", out: string[] = [], depth = 0): string[] {
  if (depth > 500) {
    out.push(`${path}: deeper than 500`);
    return out;
  }
  const kind = typeof value;
  if (value === null || kind === "string" || kind === "number" || kind === "boolean") return out;
  if (kind !== "object") {
    out.push(`${path}: typeof ${kind}`);
    return out;
  }
  const obj = value as object;
  const proto: unknown = Object.getPrototypeOf(obj);
  if (Array.isArray(obj)) {
    if (proto !== Array.prototype) out.push(`${path}: array with a foreign prototype`);
  } else if (proto !== Object.prototype) {
    out.push(`${path}: object whose prototype is not Object.prototype`);
  }
  for (const key of Reflect.ownKeys(obj)) {
    if (typeof key === "symbol") {
      out.push(`${path}: symbol key`);
      continue;
    }
    if (Array.isArray(obj) && key === "length") continue;
    const descriptor = Object.getOwnPropertyDescriptor(obj, key);
    if (descriptor === undefined) continue;
    if (!("value" in descriptor)) {
      out.push(`${path}.${key}: accessor`);
      continue;
    }
    plainDataViolations(descriptor.value, `${path}.${key}`, out, depth + 1);
  }
  return out;
}

/** What the host saw, per harness. */
export interface HostLedger {
  /** `TOOL_END` payloads per chain id. */
  readonly toolEnds: Map<string, number>;
  /** `TOOL_START` payloads per chain id. */
  readonly toolStarts: Map<string, number>;
  /** `execute` calls per tool name. */
  readonly executions: Map<string, number>;
  /** Arguments every tool received, in order. */
  readonly received: { tool: string; args: unknown }[];
  /** Plain-data violations found in received arguments. */
  readonly violations: string[];
  /** Hook errors reported through `onHookError`. */
  readonly hookErrors: unknown[];
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** Results the `emit` tool hands back, by name. Each is built fresh on every call. */
export const HOSTILE_RESULTS: Readonly<Record<string, () => unknown>> = Object.freeze({
  "proto-key": () => JSON.parse('{"__proto__": {"polluted": "result"}, "safe": 1}'),
  "constructor-prototype": () => ({ constructor: { prototype: { polluted: "result" } }, safe: 1 }),
  "structured-proto": () => ({
    content: [{ type: "text", text: "see structured" }],
    structuredContent: JSON.parse('{"__proto__": {"polluted": "structured"}, "nested": {"__proto__": {"polluted": "nested"}}}'),
  }),
  "text-proto-json": () => ({ content: [{ type: "text", text: '{"__proto__": {"polluted": "text"}}' }] }),
  "prototype-key": () => ({ prototype: { polluted: "result" }, __defineGetter__: 1, hasOwnProperty: 2, toString: 3 }),
  "array-proto": () => JSON.parse('[{"__proto__": {"polluted": "array"}}]'),
  undefined: () => undefined,
  cyclic: () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    return cycle;
  },
  bigint: () => ({ n: 10n }),
  function: () => ({ f: () => "host code" }),
  "class-instance": () => new URL("https://example.com/"),
  getter: () => ({
    get secret(): string {
      return "getter ran";
    },
  }),
  proxy: () => new Proxy({ a: 1 }, {}),
  promise: () => ({ p: Promise.resolve(1) }),
  "to-json": () => ({ toJSON: () => ({ swapped: true }) }),
  "nan-infinity": () => ({ n: Number.NaN }),
  symbol: () => ({ s: Symbol("host") }),
  // Values whose every way of being read or printed throws the value itself: an error report
  // that tried to describe them would throw again, out of the invoker.
  "self-rethrowing-getter": () => {
    const bad: Record<string, unknown> = {};
    const rethrow = (): never => {
      throw bad;
    };
    Object.defineProperties(bad, { toJSON: { value: rethrow }, toString: { value: rethrow }, valueOf: { value: rethrow } });
    return Object.defineProperty({}, "field", { get: rethrow, enumerable: true });
  },
  "self-rethrowing-proxy": () => {
    const proxy: object = new Proxy(
      {},
      {
        get: () => {
          throw proxy;
        },
        ownKeys: () => {
          throw proxy;
        },
        getPrototypeOf: () => {
          throw proxy;
        },
      },
    );
    return proxy;
  },
});

/** Options of {@link createHarness}. */
export interface HarnessOptions {
  readonly policy?: Partial<ChainPolicy>;
  readonly tools?: readonly AnyTool[];
  readonly approvalHandler?: ApprovalHandler;
  /** @defaultValue a fresh `MemoryBlobStore`; `null` for none. */
  readonly blobStore?: BlobStore | null;
  readonly hooks?: Hooks;
}

/** One `ToolChainTool` under attack, with the host's view of it. */
export interface Harness {
  readonly chain: ToolChainTool;
  readonly ledger: HostLedger;
  readonly driver: DriverName;
  /** Runs `code`; `run` must never throw, so a throw fails the test. */
  run(code: string, options?: ChainRunOptions): Promise<ChainRunResult>;
  /** The trace has one record per call the host saw (hooks), numbered 0..n-1. */
  expectTraceWhole(result: ChainRunResult): void;
  /** The next chain on the same tool succeeds with a tool call. */
  expectHealthy(): Promise<void>;
  close(): Promise<void>;
}

/** The standard host tools; `ledger` records what each receives. */
export function hostTools(ledger: HostLedger): AnyTool[] {
  const observe = (tool: string, args: unknown): void => {
    bump(ledger.executions, tool);
    ledger.received.push({ tool, args });
    for (const problem of plainDataViolations(args)) ledger.violations.push(`${tool}: ${problem}`);
  };
  return [
    defineTool({
      name: "spy",
      description: "Records what it receives and reports the host's view of it.",
      inputSchema: { type: "object" } as const,
      execute: (args) => {
        observe("spy", args);
        return { violations: plainDataViolations(args), keys: Object.keys(args) };
      },
    }),
    defineTool({
      name: "echo",
      description: "Echoes value.",
      inputSchema: { type: "object", properties: { value: {} } } as const,
      execute: (args) => {
        observe("echo", args);
        return { value: args.value ?? null };
      },
    }),
    defineTool({
      name: "emit",
      description: "Returns a hostile result by kind.",
      inputSchema: { type: "object", properties: { kind: { type: "string" } }, required: ["kind"] } as const,
      execute: ({ kind }) => {
        observe("emit", { kind });
        const make = HOSTILE_RESULTS[kind];
        if (make === undefined) throw new Error(`no such kind ${kind}`);
        return make();
      },
    }),
    defineTool({
      name: "hang",
      description: "Never finishes and ignores its signal.",
      inputSchema: { type: "object" } as const,
      execute: (args) => {
        observe("hang", args);
        return new Promise<never>(() => undefined);
      },
    }),
    defineTool({
      name: "wait",
      description: "Finishes when its signal fires.",
      inputSchema: { type: "object" } as const,
      execute: (args, ctx) => {
        observe("wait", args);
        return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve({ aborted: true }), { once: true }));
      },
    }),
    defineTool({
      name: "risky",
      description: "Needs approval.",
      risk: "high",
      inputSchema: { type: "object" } as const,
      execute: (args) => {
        observe("risky", args);
        return { done: true };
      },
    }),
  ];
}

/** A fresh ledger. */
export function createLedger(): HostLedger {
  return { toolEnds: new Map(), toolStarts: new Map(), executions: new Map(), received: [], violations: [], hookErrors: [] };
}

/** Builds a harness on `driver`. */
export function createHarness(driver: DriverName, options: HarnessOptions = {}): Harness {
  const ledger = createLedger();
  const userHooks = options.hooks;
  const hooks: Hooks = {
    TOOL_START: async (payload) => {
      bump(ledger.toolStarts, payload.chainId);
      await userHooks?.TOOL_START?.(payload);
    },
    TOOL_END: async (payload) => {
      bump(ledger.toolEnds, payload.chainId);
      await userHooks?.TOOL_END?.(payload);
    },
    ...(userHooks?.CHAIN_START ? { CHAIN_START: userHooks.CHAIN_START } : {}),
    ...(userHooks?.CHAIN_END ? { CHAIN_END: userHooks.CHAIN_END } : {}),
    onHookError: (error, event) => {
      ledger.hookErrors.push(error);
      userHooks?.onHookError?.(error, event);
    },
  };
  const blobStore = options.blobStore === undefined ? new MemoryBlobStore() : options.blobStore;
  const chain = new ToolChainTool({
    tools: [...hostTools(ledger), ...(options.tools ?? [])],
    policy: { ...ATTACK_POLICY, ...options.policy },
    hooks,
    driver: driverOption(driver),
    poolSize: 1,
    ...(options.approvalHandler ? { approvalHandler: options.approvalHandler } : {}),
    ...(blobStore ? { blobStore } : {}),
  });
  const harness: Harness = {
    chain,
    ledger,
    driver,
    run: (code, runOptions) => chain.run(code, runOptions),
    expectTraceWhole(result) {
      const seen = ledger.toolEnds.get(result.chainId) ?? 0;
      expect(result.callTrace.length + (result.droppedCallRecords ?? 0)).toBe(seen);
      expect(ledger.toolStarts.get(result.chainId) ?? 0).toBe(seen);
      expect(result.callTrace.map((record) => record.seq)).toEqual(result.callTrace.map((_record, index) => index));
      expect(result.stats.toolCalls).toBeLessThanOrEqual(chain.policy.maxToolCalls);
    },
    async expectHealthy() {
      const next = await chain.run("const r = await tools.echo({ value: 41 }); return r.structured.value + 1;");
      expect(next.error).toBeUndefined();
      expect(next.status).toBe("ok");
      expect(next.returnValue).toBe(42);
      harness.expectTraceWhole(next);
    },
    close: () => chain.close(),
  };
  return harness;
}

/** The exact outcome an attack must end with. */
export interface ExpectedOutcome {
  /** One status, or the few a row accepts (only where the drivers legitimately differ). */
  readonly status: ChainRunResult["status"] | readonly ChainRunResult["status"][];
  /** Compared with `toEqual` when given (use `undefined` via `noReturn`). */
  readonly returnValue?: unknown;
  /** Set when the script must return nothing. */
  readonly noReturn?: true;
  readonly phase?: "compile" | "runtime" | "limit";
  /** One error name, or the few a row accepts (only where the drivers legitimately differ). */
  readonly name?: string | readonly string[];
  readonly message?: RegExp;
}

/** Asserts `result` matches `expected` exactly in every field `expected` names. */
export function expectOutcome(result: ChainRunResult, expected: ExpectedOutcome): void {
  const summary = { status: result.status, returnValue: result.returnValue, error: result.error && { phase: result.error.phase, name: result.error.name, message: result.error.message.slice(0, 300) } };
  const statuses: readonly string[] = typeof expected.status === "string" ? [expected.status] : expected.status;
  expect(statuses, JSON.stringify(summary)).toContain(summary.status);
  if (result.status === "ok") {
    expect(result.error, JSON.stringify(summary)).toBeUndefined();
    if (expected.noReturn) expect(result.returnValue).toBeUndefined();
    else expect(result.returnValue).toEqual(expected.returnValue);
  } else if (result.status !== "cancelled") {
    expect(result.error?.phase, JSON.stringify(summary)).toBe(expected.phase);
    const names: readonly (string | undefined)[] = typeof expected.name === "string" || expected.name === undefined ? [expected.name] : expected.name;
    expect(names, JSON.stringify(summary)).toContain(result.error?.name);
    if (expected.message) expect(result.error?.message).toMatch(expected.message);
  }
}

/** The host is unharmed: prototypes clean, stack machinery untouched. */
export function expectHostUntouched(): void {
  expect(Reflect.ownKeys(Object.prototype).map(String).sort()).toEqual(HOST_OBJECT_PROTOTYPE_KEYS);
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(([] as unknown as Record<string, unknown>).polluted).toBeUndefined();
  expect(Error.prepareStackTrace).toBe(HOST_PREPARE_STACK_TRACE);
  expect(Error.captureStackTrace).toBe(HOST_CAPTURE_STACK_TRACE);
  expect(Error.stackTraceLimit).toBe(HOST_STACK_TRACE_LIMIT);
}

/** One row of an attack table. */
export interface Attack {
  readonly name: string;
  readonly code: string;
  readonly expected: ExpectedOutcome;
  /** Runs only under the process driver: it aborts a whole Node process in-process. */
  readonly processOnly?: string;
  /** Further checks of the result, beyond {@link ExpectedOutcome}. */
  readonly check?: (result: ChainRunResult, harness: Harness) => void | Promise<void>;
  /** A known bug makes this row fail today: registered with `it.fails` (see the row's comment). */
  readonly knownBug?: string;
  /** Extra harness options (policy overrides). */
  readonly policy?: Partial<ChainPolicy>;
}

let gcFunction: (() => void) | undefined;

/** Runs a full GC when the runtime allows it (`--expose-gc` is switched on here if needed). */
export function forceGc(): void {
  if (gcFunction === undefined) {
    const exposed = (globalThis as { gc?: () => void }).gc;
    if (typeof exposed === "function") gcFunction = exposed;
    else {
      setFlagsFromString("--expose-gc");
      gcFunction = runInNewContext("gc") as () => void;
    }
  }
  gcFunction();
  gcFunction();
}

/** Heap in use after a full GC, bytes. */
export function settledHeapBytes(): number {
  forceGc();
  return process.memoryUsage().heapUsed;
}

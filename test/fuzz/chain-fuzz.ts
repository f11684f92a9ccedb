/**
 * The chain fuzzer shared by the short CI property (`chain.fuzz.test.ts`) and the long, seedable
 * mode (`run-long.ts`). It generates random scripts (valid and broken TypeScript; sequential,
 * `Promise.all`, nested, fire-and-forget and looped tool calls with random argument values:
 * weird and lone-surrogate strings, deep nesting, huge and non-finite numbers) against one
 * `fuzz` tool whose behaviour each call picks (return, throw, throw a non-Error, hang until
 * aborted, huge string, `isError`, garbage: undefined, cyclic, BigInt), and checks after every
 * run that:
 *
 * - `run` resolved to a `ChainRunResult` with a valid status (the host did not crash or throw);
 * - `callTrace.length` (+ dropped records) equals the calls the host saw (`TOOL_END` hooks),
 *   and `TOOL_START` matched `TOOL_END`;
 * - tool executions of the chain never exceeded `maxToolCalls`;
 * - no unhandled rejection reached the host process.
 * @module
 */
import fc from "fast-check";
import { defineTool, type Hooks, MemoryBlobStore, ToolChainTool, type ChainRunResult } from "../../src/index.ts";

/** Behaviours the `fuzz` tool can be asked for. */
export const BEHAVIOURS = [
  "return",
  "throw",
  "throw-non-error",
  "hang",
  "huge",
  "is-error",
  "garbage-undefined",
  "garbage-cyclic",
  "garbage-bigint",
] as const;

/** One generated case. */
export interface FuzzCase {
  readonly script: string;
  readonly maxToolCalls: number;
}

const VALID_STATUSES = new Set(["ok", "error", "timeout", "cancelled", "suspended"]);

/** A JS literal for a random value (JSON text is a valid JS expression). */
function literal(value: unknown): string {
  return JSON.stringify(value) ?? "null";
}

const weirdString = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.constantFrom("\ud800", "\udfff", "a\u0000b", "\u2028\u2029", "__proto__", "constructor", "${x}", "`", "</script>", "\u{1F680}", ""),
);
const weirdNumber = fc.oneof(
  fc.integer(),
  fc.double(), // NaN and ±Infinity become null in JSON
  fc.constantFrom(1e308, -1e308, 5e-324, 2 ** 53 + 1, -0, Number.MAX_VALUE),
);

/** Random argument values, rendered to JS source. */
const valueSource: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    weirdString.map(literal),
    weirdNumber.map(literal),
    fc.constantFrom("true", "false", "null", "undefined"),
    fc.integer({ min: 1, max: 300 }).map((depth) => `${"[".repeat(depth)}1${"]".repeat(depth)}`),
    fc.array(tie("value"), { maxLength: 4 }).map((items) => `[${items.join(", ")}]`),
    fc
      .array(fc.tuple(weirdString, tie("value")), { maxLength: 4 })
      .map((entries) => `{ ${entries.map(([key, value]) => `${literal(key)}: ${value}`).join(", ")} }`),
  ),
})).value;

const behaviour = fc.constantFrom(...BEHAVIOURS);
const callSource = fc.tuple(behaviour, valueSource).map(([b, v]) => `tools.fuzz({ b: ${literal(b)}, v: ${v} })`);

const statement: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: callSource.map((call) => `await ${call};`) },
  { weight: 2, arbitrary: fc.array(callSource, { minLength: 1, maxLength: 6 }).map((calls) => `await Promise.all([${calls.join(", ")}]);`) },
  { weight: 1, arbitrary: fc.array(callSource, { minLength: 1, maxLength: 4 }).map((calls) => `await Promise.allSettled([${calls.join(", ")}]);`) },
  { weight: 2, arbitrary: fc.tuple(behaviour, callSource).map(([b, inner]) => `await tools.fuzz({ b: ${literal(b)}, v: (await ${inner}).status });`) },
  { weight: 1, arbitrary: callSource.map((call) => `${call};`) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 0, max: 5 }), callSource).map(([n, call]) => `for (let i = 0; i < ${n}; i++) await ${call};`) },
  { weight: 1, arbitrary: valueSource.map((v) => `console.log(${v});`) },
  { weight: 1, arbitrary: fc.constantFrom("budget.remaining;", "artifact(\"sha256:\" + \"0\".repeat(64));", "Math.random(); Date.now();") },
  { weight: 1, arbitrary: valueSource.map((v) => `if (budget.remaining < 2) return ${v};`) },
  { weight: 1, arbitrary: fc.constantFrom('throw new Error("boom");', "throw 42;", "throw undefined;", "null!.x;", "await new Promise(() => {});") },
  { weight: 1, arbitrary: fc.constantFrom("let t: number = 1 as any;", "interface I { a: string }", "type T = { [k: string]: T };", "enum E { A, B }", "const f = <T,>(x: T): T => x;") },
  // Broken TypeScript: syntax errors the compiler must report as results.
  { weight: 1, arbitrary: fc.constantFrom("const = ;", "if (", "}", "await tools.fuzz({ b: ", "import fs from 'node:fs';", "require('x');", "return return;", "let let = 1;", "class { }") },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
);

/** Random scripts and budgets. */
export const fuzzCase: fc.Arbitrary<FuzzCase> = fc.record({
  script: fc.tuple(fc.array(statement, { maxLength: 8 }), fc.option(valueSource, { nil: undefined })).map(
    ([statements, result]) => `${statements.join("\n")}${result === undefined ? "" : `\nreturn ${result};`}`,
  ),
  maxToolCalls: fc.integer({ min: 0, max: 8 }),
});

/** What the host saw of the chains a {@link ChainFuzzer} ran. */
interface Ledger {
  readonly toolStarts: Map<string, number>;
  readonly toolEnds: Map<string, number>;
  readonly executions: Map<string, number>;
}

function bump(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

/** Options of {@link ChainFuzzer}. */
export interface ChainFuzzerOptions {
  /** The sandbox driver. @defaultValue `"in-process"` */
  readonly driver?: string;
  /** Characters of the `huge` behaviour's string. @defaultValue 200 000 */
  readonly hugeChars?: number;
}

/** Runs generated cases against real chains and checks the properties of the module comment. */
export class ChainFuzzer {
  readonly #chains = new Map<number, ToolChainTool>();
  readonly #ledger: Ledger = { toolStarts: new Map(), toolEnds: new Map(), executions: new Map() };
  readonly #unhandled: unknown[] = [];
  readonly #onUnhandled = (reason: unknown): void => {
    this.#unhandled.push(reason);
  };
  readonly #driver: string;
  readonly #hugeChars: number;
  readonly #store = new MemoryBlobStore();
  /** Runs checked so far, by final status. */
  readonly statuses = new Map<string, number>();

  constructor(options: ChainFuzzerOptions = {}) {
    this.#driver = options.driver ?? "in-process";
    this.#hugeChars = options.hugeChars ?? 200_000;
    process.on("unhandledRejection", this.#onUnhandled);
  }

  #chain(maxToolCalls: number): ToolChainTool {
    let chain = this.#chains.get(maxToolCalls);
    if (chain !== undefined) return chain;
    const ledger = this.#ledger;
    const hooks: Hooks = {
      TOOL_START: (payload) => bump(ledger.toolStarts, payload.chainId),
      TOOL_END: (payload) => bump(ledger.toolEnds, payload.chainId),
    };
    const hugeChars = this.#hugeChars;
    const fuzz = defineTool({
      name: "fuzz",
      description: "Behaves as asked.",
      inputSchema: { type: "object", properties: { b: { type: "string" }, v: {} } } as const,
      execute: (args, ctx) => {
        bump(ledger.executions, ctx.chainId ?? "none");
        switch (args.b) {
          case "throw":
            throw new Error(`fuzz threw: ${String(args.v).slice(0, 20)}`);
          case "throw-non-error":
            throw args.v;
          case "hang":
            return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve({ late: true }), { once: true }));
          case "huge":
            return "h".repeat(hugeChars);
          case "is-error":
            return { content: [{ type: "text" as const, text: "reported failure" }], isError: true };
          case "garbage-undefined":
            return undefined;
          case "garbage-cyclic": {
            const cycle: Record<string, unknown> = {};
            cycle.self = cycle;
            return cycle;
          }
          case "garbage-bigint":
            return { n: 1n };
          default:
            return { v: args.v ?? null };
        }
      },
    });
    chain = new ToolChainTool({
      tools: [fuzz],
      hooks,
      blobStore: this.#store,
      driver: this.#driver as never,
      poolSize: 1,
      policy: {
        maxToolCalls,
        callTimeoutMs: 100,
        approvalTimeoutMs: 50,
        totalTimeoutMs: 400,
        cpuTimeMs: 300,
        memoryLimitMb: 32,
        maxInlineResultBytes: 1024,
        maxOutputBytes: 2048,
      },
    });
    this.#chains.set(maxToolCalls, chain);
    return chain;
  }

  /** Runs one case and throws (an assertion failure for fast-check) when a property breaks. */
  async check(input: FuzzCase): Promise<ChainRunResult> {
    const chain = this.#chain(input.maxToolCalls);
    let result: ChainRunResult;
    try {
      result = await chain.run(input.script);
    } catch (error) {
      throw new Error(`run() threw instead of returning a result: ${String(error)}`, { cause: error });
    }
    if (typeof result !== "object" || result === null || !VALID_STATUSES.has(result.status)) {
      throw new Error(`not a ChainRunResult with a valid status: ${JSON.stringify(result)?.slice(0, 200)}`);
    }
    if (result.status !== "ok" && result.error === undefined && result.status !== "cancelled") {
      throw new Error(`status ${result.status} without an error`);
    }
    const ends = this.#ledger.toolEnds.get(result.chainId) ?? 0;
    const starts = this.#ledger.toolStarts.get(result.chainId) ?? 0;
    const traced = result.callTrace.length + (result.droppedCallRecords ?? 0);
    if (traced !== ends || starts !== ends) {
      throw new Error(`trace not whole: ${traced} records, ${starts} TOOL_START, ${ends} TOOL_END`);
    }
    const executions = this.#ledger.executions.get(result.chainId) ?? 0;
    if (executions > input.maxToolCalls) {
      throw new Error(`${executions} executions over maxToolCalls ${input.maxToolCalls}`);
    }
    if (this.#unhandled.length > 0) {
      throw new Error(`unhandled rejection on the host: ${String(this.#unhandled[0])}`);
    }
    this.statuses.set(result.status, (this.statuses.get(result.status) ?? 0) + 1);
    return result;
  }

  /** Unhandled rejections seen so far. */
  get unhandledRejections(): readonly unknown[] {
    return this.#unhandled;
  }

  /** Closes every chain and removes the rejection listener. */
  async close(): Promise<void> {
    process.off("unhandledRejection", this.#onUnhandled);
    await Promise.all([...this.#chains.values()].map((chain) => chain.close()));
    this.#chains.clear();
  }
}

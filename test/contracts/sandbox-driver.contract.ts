/**
 * The behaviour every {@link SandboxDriver} must show, run against real isolates. A driver's
 * test file calls {@link runSandboxDriverContract} with a factory; scripts are written by hand
 * in the compile step's output shape: `(async function __chain__() {\n<body>\n})`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { InvocationResult } from "../../src/kernel/index.ts";
import { OUTPUT_TRUNCATED_MARKER } from "../../src/bridge/protocol.ts";
import {
  DEADLOCK_MESSAGE,
  MAX_CALLS_PAST_BUDGET,
  NEVER_ANSWERED_DEADLOCK_MESSAGE,
  neverAnswered,
  type SandboxDriver,
  type SandboxLimits,
  type SandboxLogLevel,
  type SandboxRunOutcome,
  type SandboxRunRequest,
  type SandboxToolCall,
} from "../../sandbox/sandbox-driver.ts";

/** How to make the driver under test. */
export interface SandboxDriverContractOptions {
  readonly create: () => SandboxDriver;
}

const LIMITS: SandboxLimits = {
  memoryLimitMb: 64,
  cpuTimeMs: 2_000,
  totalTimeoutMs: 3_000,
  maxOutputBytes: 4_096,
  maxArgumentBytes: 1_024,
};

/** Wraps a body the way the compile step does. */
export function chainScript(body: string): string {
  return `(async function __chain__() {\n${body}\n})`;
}

const ok = (text: string): InvocationResult => ({ status: "ok", text });

/** How a host answers a call the sandbox refused (the chain layer records it as a BRIDGE_ERROR). */
const refused = (call: SandboxToolCall): InvocationResult => ({ status: "error", code: "BRIDGE_ERROR", text: call.refusal ?? "" });

interface Harness {
  readonly calls: SandboxToolCall[];
  readonly logs: { level: SandboxLogLevel; text: string }[];
  readonly signals: AbortSignal[];
}

type RunOptions = Partial<Omit<SandboxRunRequest, "limits">> & { limits?: Partial<SandboxLimits> };

/** Registers the contract suite for one driver. */
export function runSandboxDriverContract(name: string, options: SandboxDriverContractOptions): void {
  describe(`SandboxDriver contract: ${name}`, () => {
    let driver: SandboxDriver;
    beforeAll(async () => {
      driver = options.create();
      await driver.warm?.();
    });
    afterAll(async () => {
      await driver.close();
    });

    const run = async (body: string, overrides: RunOptions = {}): Promise<SandboxRunOutcome & Harness> => {
      const harness: Harness = { calls: [], logs: [], signals: [] };
      const { limits, ...rest } = overrides;
      const outcome = await driver.run({
        chainId: "chain-1",
        script: chainScript(body),
        scriptName: "chain.js",
        toolNames: ["echo", "odd-name"],
        maxToolCalls: 20,
        seed: 42,
        clockStart: Date.UTC(2030, 0, 1),
        onToolCall: (call, signal) => {
          harness.calls.push(call);
          harness.signals.push(signal);
          return Promise.resolve(call.refusal === undefined ? ok(call.argsJson) : refused(call));
        },
        onLog: (level, text) => harness.logs.push({ level, text }),
        ...rest,
        limits: { ...LIMITS, ...limits },
      });
      return { ...outcome, ...harness };
    };

    describe("return values", () => {
      it.each([
        ["null", "null"],
        ["a number", "1.5e300"],
        ["a negative integer", "-42"],
        ["true", "true"],
        ["a unicode string", JSON.stringify("héllo ✓ 𝄞 \u2028 \"q\"")],
        ["a nested value", '{ a: [1, { b: null, c: "x" }], d: { e: [] }, "__proto__x": 1 }'],
      ])("round-trips %s exactly", async (_label, literal) => {
        const outcome = await run(`return ${literal};`);
        expect(outcome.status).toBe("ok");
        expect(JSON.parse(outcome.returnJson ?? "undefined")).toEqual(JSON.parse(JSON.stringify(new Function(`return ${literal}`)())));
      });

      it("turns -0 into 0, as JSON does", async () => {
        const outcome = await run("return -0;");
        expect(outcome.returnJson).toBe("0");
      });

      it("leaves returnJson absent when the script returns undefined", async () => {
        const outcome = await run("await null;");
        expect(outcome.status).toBe("ok");
        expect(outcome.returnJson).toBeUndefined();
      });

      it.each([
        ["throw undefined", "throw undefined;"],
        ["a rejection with no reason", "return Promise.reject();"],
        ["throw undefined after a call", "await tools.echo({}); throw undefined;"],
        ["throw null", "throw null;"],
      ])("fails on %s (never an ok run)", async (_label, body) => {
        const outcome = await run(body);
        expect(outcome.status).toBe("error");
        expect(outcome.error).toMatchObject({ phase: "runtime", name: "Error" });
        expect(outcome.error?.message).toMatch(/^Uncaught (undefined|null)$/);
      });

      it("refuses a return value that is not JSON-compatible", async () => {
        const outcome = await run("return { f() {} };");
        expect(outcome.status).toBe("error");
        expect(outcome.error).toMatchObject({ phase: "runtime", name: "TypeError" });
        expect(outcome.error?.message).toMatch(/return value must be JSON-compatible: found a function at \.f/);
      });
    });

    describe("tool calls", () => {
      it("runs sequential calls in order and resolves them with the host's result", async () => {
        const outcome = await run(
          'const a = await tools.echo({ n: 1 }); const b = await tools["odd-name"](); return [a, b, budget.total, budget.remaining];',
        );
        expect(outcome.status).toBe("ok");
        expect(JSON.parse(outcome.returnJson ?? "null")).toEqual([ok('{"n":1}'), ok("{}"), 20, 18]);
        expect(outcome.calls).toEqual([
          { callIndex: 0, tool: "echo", argsJson: '{"n":1}' },
          { callIndex: 1, tool: "odd-name", argsJson: "{}" },
        ]);
      });

      it("overlaps parallel calls: all ten reach the host before any resolves", async () => {
        const gate = Promise.withResolvers<void>();
        let seen = 0;
        const outcome = await run("const r = await Promise.all(Array.from({ length: 10 }, (_, i) => tools.echo({ i }))); return r.map((x) => x.text);", {
          onToolCall: async (call) => {
            seen++;
            if (seen === 10) gate.resolve();
            await gate.promise;
            return ok(call.argsJson);
          },
        });
        expect(outcome.status).toBe("ok");
        expect(seen).toBe(10);
        expect(JSON.parse(outcome.returnJson ?? "null")).toEqual(Array.from({ length: 10 }, (_, i) => `{"i":${i}}`));
      });

      it("assigns callIndex in program order", async () => {
        const outcome = await run("const p = [tools.echo({ a: 1 }), tools.echo({ a: 2 })]; await tools.echo({ a: 3 }); await Promise.all(p);");
        expect(outcome.calls.map((call) => [call.callIndex, call.argsJson])).toEqual([
          [0, '{"a":1}'],
          [1, '{"a":2}'],
          [2, '{"a":3}'],
        ]);
      });

      it.each([
        ["a function", "{ f: () => 1 }", /function at \.f/],
        ["a symbol", "{ s: Symbol('x') }", /symbol at \.s/],
        ["a BigInt", "{ n: 1n }", /BigInt at \.n/],
        ["a cycle", "(() => { const o = { a: {} }; o.a.self = o; return o; })()", /cycle at \.a\.self/],
        ["a getter", "{ get g() { return 1; } }", /getter or setter at \.g/],
        ["a Map", "{ m: new Map() }", /Map at \.m/],
        ["an array", "[1, 2]", /arguments must be one object/],
      ])("refuses %s in arguments: the call reaches the host with a refusal and the script sees BRIDGE_ERROR", async (_label, args, pattern) => {
        const outcome = await run(`const r = await tools.echo(${args}); return [r, budget.remaining];`);
        expect(outcome.status).toBe("ok");
        const [result, remaining] = JSON.parse(outcome.returnJson ?? "null") as [InvocationResult, number];
        expect(result).toMatchObject({ status: "error", code: "BRIDGE_ERROR" });
        expect(result.text).toMatch(pattern);
        expect(remaining).toBe(19);
        expect(outcome.calls).toHaveLength(1);
        expect(outcome.calls[0]).toMatchObject({ callIndex: 0, tool: "echo", argsJson: "{}" });
        expect(outcome.calls[0]?.refusal).toMatch(pattern);
      });

      it("refuses arguments over maxArgumentBytes as a call with a refusal that uses budget", async () => {
        const outcome = await run('const r = await tools.echo({ s: "é".repeat(600) }); return [r, budget.remaining];');
        const [result, remaining] = JSON.parse(outcome.returnJson ?? "null") as [InvocationResult, number];
        expect(result).toMatchObject({ status: "error", code: "BRIDGE_ERROR" });
        expect(result.text).toMatch(/over the 1024-byte limit/);
        expect(remaining).toBe(19);
        expect(outcome.calls).toEqual([{ callIndex: 0, tool: "echo", argsJson: "{}", refusal: result.text }]);
      });

      it("numbers refused calls in program order with the others and sends no refusal field otherwise", async () => {
        const outcome = await run("await Promise.all([tools.echo({ a: 1 }), tools.echo({ f() {} }), tools.echo({ a: 3 })]); return budget.remaining;");
        expect(outcome.returnJson).toBe("17");
        expect(outcome.calls.map((call) => [call.callIndex, call.argsJson, "refusal" in call])).toEqual([
          [0, '{"a":1}', false],
          [1, "{}", true],
          [2, '{"a":3}', false],
        ]);
      });

      it("keeps program order between calls and console lines of the same turn", async () => {
        const order: string[] = [];
        const outcome = await run("const p = tools.echo({ a: 1 }); console.log('after'); await p; tools.echo({ b: 2 }); return 1;", {
          onToolCall: (call) => {
            order.push(`call ${call.argsJson}`);
            return Promise.resolve(ok(call.argsJson));
          },
          onLog: (_level, text) => order.push(`log ${text}`),
        });
        expect(outcome.status).toBe("ok");
        expect(order).toEqual(['call {"a":1}', "log after", 'call {"b":2}']);
      });

      it("resolves a rejected onToolCall as a TOOL_ERROR result instead of failing the run", async () => {
        const outcome = await run("return await tools.echo({});", { onToolCall: () => Promise.reject(new Error("host broke")) });
        expect(JSON.parse(outcome.returnJson ?? "null")).toMatchObject({ status: "error", code: "TOOL_ERROR", text: "host broke" });
      });

      it("aborts the signal of calls still pending when the script returns", async () => {
        const signals: AbortSignal[] = [];
        const outcome = await run("tools.echo({ slow: true }); return 1;", {
          onToolCall: (_call, signal) => {
            signals.push(signal);
            return new Promise<InvocationResult>(() => undefined);
          },
        });
        expect(outcome.status).toBe("ok");
        expect(signals).toHaveLength(1);
        expect(signals[0]?.aborted).toBe(true);
      });

      it("passes a Node Buffer in a result as its JSON form only (results cross as JSON text)", async () => {
        const pool = Buffer.from("secret-secret-secret-ABC");
        const slice = pool.subarray(pool.length - 3);
        const outcome = await run("const r = await tools.echo({}); return r.structured.data;", {
          onToolCall: () => Promise.resolve({ status: "ok", text: "", structured: { data: slice } }),
        });
        expect(JSON.parse(outcome.returnJson ?? "null")).toEqual({ type: "Buffer", data: [65, 66, 67] });
      });
    });

    describe("errors and limits", () => {
      it("reports a runtime error with name, message and a stack in the script file", async () => {
        const outcome = await run("const x = null;\nx.boom();");
        expect(outcome.status).toBe("error");
        expect(outcome.error).toMatchObject({ phase: "runtime", name: "TypeError" });
        expect(outcome.error?.message).toMatch(/null/);
        expect(outcome.error?.stack).toMatch(/chain\.js:3:/);
      });

      it("reports a thrown non-Error value", async () => {
        const outcome = await run('throw "plain";');
        expect(outcome.error).toMatchObject({ phase: "runtime", name: "Error", message: "Uncaught plain" });
      });

      it("turns deep recursion into a RangeError, not a crash", async () => {
        const outcome = await run("const f = (n) => f(n + 1) + 1; f(0);");
        expect(outcome.error).toMatchObject({ phase: "runtime", name: "RangeError" });
        const next = await run("return 1;");
        expect(next.returnJson).toBe("1");
      });

      it("ends a synchronous infinite loop at totalTimeoutMs", async () => {
        const outcome = await run("for (;;) {}", { limits: { totalTimeoutMs: 200 } });
        expect(outcome.status).toBe("timeout");
        expect(outcome.error).toMatchObject({ phase: "limit", name: "TimeoutError" });
        expect(outcome.wallMs).toBeLessThan(1_000);
      });

      it("ends an infinite loop after an await while the host event loop keeps ticking", async () => {
        let ticks = 0;
        const timer = setInterval(() => ticks++, 10);
        const outcome = await run("await tools.echo({}); for (;;) {}", { limits: { totalTimeoutMs: 300 } });
        clearInterval(timer);
        expect(outcome.status).toBe("timeout");
        expect(outcome.error?.phase).toBe("limit");
        expect(ticks).toBeGreaterThan(5);
      });

      it.each([
        ["an await loop", "for (;;) await null;"],
        ["a recursive then chain", "await new Promise(() => { const spin = () => Promise.resolve().then(spin); spin(); });"],
      ])("ends a microtask storm (%s)", async (_label, body) => {
        const outcome = await run(body, { limits: { totalTimeoutMs: 300 } });
        expect(outcome.status).toBe("timeout");
        expect(outcome.error?.phase).toBe("limit");
      });

      it("ends a script that keeps calling past its budget at MAX_CALLS_PAST_BUDGET over it (CallLimitError), each call before run once", async () => {
        const outcome = await run("for (let i = 0; i < 100000; i++) tools.echo({ i });\nawait new Promise(() => {});", { limits: { totalTimeoutMs: 60_000 } });
        expect(outcome.status).toBe("error");
        expect(outcome.error).toMatchObject({ phase: "limit", name: "CallLimitError" });
        expect(outcome.error?.message).toContain(`the script made ${20 + MAX_CALLS_PAST_BUDGET} tool calls, ${MAX_CALLS_PAST_BUDGET} past its budget (maxToolCalls 20).`);
        expect(outcome.calls).toHaveLength(20 + MAX_CALLS_PAST_BUDGET);
        expect(new Set(outcome.calls.map((call) => call.callIndex)).size).toBe(20 + MAX_CALLS_PAST_BUDGET);
      });

      describe("a call the host never answers (neverAnswered)", () => {
        /** Answers calls to `odd-name` with a never-answered mark, the rest as usual. */
        const holding = (call: SandboxToolCall): Promise<InvocationResult> =>
          Promise.resolve(call.tool === "odd-name" ? neverAnswered(ok("the host never answered this")) : ok(call.argsJson));

        it("ends a script that awaits it at once, as a DeadlockError (not at totalTimeoutMs)", async () => {
          const outcome = await run('await tools["odd-name"]({}); return "after";', { onToolCall: holding, limits: { totalTimeoutMs: 60_000 } });
          expect(outcome.status).toBe("error");
          // Said so: calls still out get no answer (a stuck run without such calls is told DEADLOCK_MESSAGE).
          expect(outcome.error).toEqual({ phase: "limit", name: "DeadlockError", message: NEVER_ANSWERED_DEADLOCK_MESSAGE });
        });

        it("ends it once the calls awaited beside it are answered, their answers in", async () => {
          const body = 'const echoed = tools.echo({ n: 1 }).then((r) => console.log("echo", r.text));\nawait Promise.all([tools["odd-name"]({}), echoed]);';
          const outcome = await run(body, { onToolCall: holding, limits: { totalTimeoutMs: 60_000 } });
          expect(outcome.error).toMatchObject({ phase: "limit", name: "DeadlockError" });
          expect(outcome.logs).toEqual([{ level: "log", text: 'echo {"n":1}' }]);
        });

        it("delivers nothing into the script: one that does not await it goes on and ends ok", async () => {
          const body = 'let seen = "never";\ntools["odd-name"]({}).then((r) => { seen = r.text; }, () => { seen = "rejected"; });\nawait tools.echo({});\nawait tools.echo({});\nreturn seen;';
          const outcome = await run(body, { onToolCall: holding });
          expect(outcome.status).toBe("ok");
          expect(outcome.returnJson).toBe('"never"');
          expect(outcome.unansweredCalls).toEqual([0]);
        });
      });

      it("ends a never-resolving promise early as a DeadlockError (phase limit)", async () => {
        const outcome = await run("await new Promise(() => {});", { limits: { totalTimeoutMs: 2_000 } });
        expect(outcome.status).toBe("error");
        expect(outcome.error).toMatchObject({ phase: "limit", name: "DeadlockError", message: DEADLOCK_MESSAGE });
        // What happened, then what the script can change, as every limit error says.
        expect(outcome.error?.message).toBe(
          "script is waiting on a promise that can never settle (no tool call is pending). Await tool calls and promises the script " +
            "settles itself: a script has no timers or events, so a promise nothing in it resolves waits for ever",
        );
        expect(outcome.wallMs).toBeLessThan(1_000);
      });

      it("does not call it a deadlock while a tool call is pending", async () => {
        const outcome = await run("return (await tools.echo({})).text;", {
          onToolCall: () => new Promise((resolve) => setTimeout(() => resolve(ok("late")), 150)),
        });
        expect(outcome.returnJson).toBe('"late"');
      });

      it("enforces cpuTimeMs on a busy loop", async () => {
        const outcome = await run("for (;;) {}", { limits: { cpuTimeMs: 100, totalTimeoutMs: 2_000 } });
        expect(outcome.status).toBe("timeout");
        expect(outcome.error).toMatchObject({ phase: "limit", name: "CpuLimitError" });
        expect(outcome.cpuMs).toBeGreaterThanOrEqual(100);
        expect(outcome.wallMs).toBeLessThan(1_000);
      });

      it("ends a memory bomb as a limit error and serves the next run", async () => {
        const outcome = await run("const a = []; for (let i = 0; ; i++) a.push('x'.repeat(64) + i);", {
          limits: { memoryLimitMb: 32, totalTimeoutMs: 10_000, cpuTimeMs: 10_000 },
        });
        expect(outcome.status).toBe("error");
        expect(outcome.error).toMatchObject({ phase: "limit", name: "MemoryLimitError" });
        const next = await run("return 'alive';", { limits: { memoryLimitMb: 32 } });
        expect(next.returnJson).toBe('"alive"');
      });

      it("ends a leftover continuation that spins after the script returned", async () => {
        const outcome = await run("Promise.resolve().then(async () => { await null; for (;;) {} }); return 1;", {
          limits: { totalTimeoutMs: 300 },
        });
        expect(outcome.status).toBe("timeout");
        const next = await run("return 2;");
        expect(next.returnJson).toBe("2");
      });

      it("cancels the run when request.signal aborts", async () => {
        const controller = new AbortController();
        const outcome = await run("await tools.echo({}); for (;;) {}", {
          signal: controller.signal,
          onToolCall: (call) => {
            setTimeout(() => controller.abort(), 20);
            return Promise.resolve(ok(call.argsJson));
          },
        });
        expect(outcome.status).toBe("cancelled");
      });

      it("keeps unhandled rejections inside the isolate", async () => {
        const seen: unknown[] = [];
        const listener = (reason: unknown): void => {
          seen.push(reason);
        };
        process.on("unhandledRejection", listener);
        const outcome = await run("Promise.reject(new Error('stray')); await null; return 1;");
        await new Promise((resolve) => setTimeout(resolve, 20));
        process.off("unhandledRejection", listener);
        expect(outcome.returnJson).toBe("1");
        expect(seen).toEqual([]);
      });
    });

    it("does not end the run for a stray unhandled rejection while a call is pending", async () => {
      const outcome = await run("Promise.reject(new Error('stray')); return (await tools.echo({})).status;", {
        onToolCall: () => new Promise((resolve) => setTimeout(() => resolve(ok("late")), 30)),
      });
      expect(outcome.returnJson).toBe('"ok"');
    });

    it("reports a syntax error in the compiled script as a runtime SyntaxError, the first time and after", async () => {
      // A script is compiled with its first run, then into a cache when it comes back: both ways.
      for (let i = 0; i < 3; i++) {
        const outcome = await driver.run({
          chainId: "c",
          script: "(async function __chain__() {\nreturn );\n})",
          scriptName: "chain.js",
          toolNames: [],
          maxToolCalls: 0,
          seed: 1,
          clockStart: 0,
          limits: LIMITS,
          onToolCall: () => Promise.resolve(ok("")),
        });
        expect(outcome.status).toBe("error");
        expect(outcome.error).toMatchObject({ phase: "runtime", name: "SyntaxError" });
      }
    });

    describe("console", () => {
      it("forwards formatted lines with their level", async () => {
        const outcome = await run('console.log("a", 1, { b: [true, null] }, undefined); console.warn(new Map([[1, 2]])); const c = {}; c.c = c; console.error(c);');
        expect(outcome.logs).toEqual([
          { level: "log", text: "a 1 { b: [ true, null ] } undefined" },
          { level: "warn", text: "Map(1) { 1 => 2 }" },
          { level: "error", text: "{ c: [Circular] }" },
        ]);
      });

      it("bounds 10k lines with exactly one truncation marker", async () => {
        const outcome = await run("for (let i = 0; i < 10_000; i++) console.log('line', i);");
        expect(outcome.status).toBe("ok");
        const markers = outcome.logs.filter((log) => log.text === OUTPUT_TRUNCATED_MARKER);
        expect(markers).toHaveLength(1);
        expect(outcome.logs.at(-1)?.text).toBe(OUTPUT_TRUNCATED_MARKER);
        const bytes = outcome.logs.slice(0, -1).reduce((sum, log) => sum + Buffer.byteLength(log.text) + 1, 0);
        expect(bytes).toBeLessThanOrEqual(LIMITS.maxOutputBytes);
      });

      it("bounds 10 MB of output", async () => {
        const outcome = await run("const s = 'y'.repeat(1 << 20); for (let i = 0; i < 10; i++) console.log(s);");
        expect(outcome.logs.map((log) => log.text.length)).toEqual([LIMITS.maxOutputBytes - 1, OUTPUT_TRUNCATED_MARKER.length]);
      });

      it.each([
        ["2-byte", "é"],
        ["3-byte", "日本語"],
        ["4-byte (surrogate pairs)", "😀"],
      ])("cuts a %s line that crosses maxOutputBytes to the bytes left, never half a character", async (_label, piece) => {
        const outcome = await run(`console.log(${JSON.stringify(piece)}.repeat(1000));`, { limits: { maxOutputBytes: 100 } });
        const [head, marker] = outcome.logs.map((log) => log.text);
        expect(marker).toBe(OUTPUT_TRUNCATED_MARKER);
        expect(Buffer.byteLength(head ?? "")).toBeGreaterThan(99 - 4);
        expect(Buffer.byteLength(head ?? "")).toBeLessThanOrEqual(99);
        expect((head ?? "").isWellFormed()).toBe(true);
      });

      it("bounds output in UTF-8 bytes on the host too, when the script defeats the prelude's count", async () => {
        // The prelude counts bytes with charCodeAt; patched, it sees every '€' (3 bytes) as one.
        const outcome = await run("String.prototype.charCodeAt = () => 65; for (let i = 0; i < 1000; i++) console.log('€'.repeat(100));", {
          limits: { maxOutputBytes: 1_000 },
        });
        expect(outcome.status).toBe("ok");
        const bytes = outcome.logs.reduce((sum, log) => sum + Buffer.byteLength(log.text) + 1, 0);
        expect(bytes).toBeLessThanOrEqual(1_000 + OUTPUT_TRUNCATED_MARKER.length + 8 + outcome.logs.length);
        expect(outcome.logs.every((log) => !log.text.includes("\ufffd"))).toBe(true);
        // The host cut the output, so the host marks it, as the prelude would have.
        expect(outcome.logs.at(-1)?.text).toBe(OUTPUT_TRUNCATED_MARKER);
      });

      it("delivers output written before a kill", async () => {
        const outcome = await run("console.log('before'); for (;;) {}", { limits: { totalTimeoutMs: 200 } });
        expect(outcome.status).toBe("timeout");
        expect(outcome.logs).toEqual([{ level: "log", text: "before" }]);
      });
    });

    describe("isolation", () => {
      it("never dispatches a call index twice, even when the script hooks the prelude's call queue", async () => {
        // A setter at index 0 of Array.prototype sees the prelude's next batch and appends a
        // forged repeat of call 0 (already answered) after the real call 1.
        const outcome = await run(
          [
            "const first = await tools.echo({ n: 0 });",
            "Object.defineProperty(Array.prototype, '0', { configurable: true, set(value) {",
            "  Object.defineProperty(this, '0', { value, writable: true, enumerable: true, configurable: true });",
            "  Object.defineProperty(this, '4', { value: 0, writable: true, enumerable: true, configurable: true });",
            "  this[5] = 'echo'; this[6] = '{\"forged\":true}'; this[7] = undefined;",
            "} });",
            "const second = await tools.echo({ n: 1 });",
            "delete Array.prototype[0];",
            "return [first.text, second.text];",
          ].join("\n"),
        );
        expect(outcome.status).toBe("ok");
        expect(outcome.calls.map((call) => [call.callIndex, call.argsJson])).toEqual([
          [0, '{"n":0}'],
          [1, '{"n":1}'],
        ]);
      });

      it("keeps calls and results flowing when the script patches Array.prototype and Map.prototype", async () => {
        const outcome = await run(
          [
            "Array.prototype.push = () => 0;",
            "Map.prototype.get = () => undefined; Map.prototype.set = function () { return this; };",
            "Map.prototype.delete = () => false; Map.prototype.values = () => { throw new Error('no'); };",
            "Map.prototype.forEach = () => {};",
            "const [a, b] = await Promise.all([tools.echo({ n: 1 }), tools.echo({ n: 2 })]);",
            "const c = await tools.echo({ n: 3 });",
            "return [a.status, b.text, c.text];",
          ].join("\n"),
        );
        expect(outcome.status).toBe("ok");
        expect(JSON.parse(outcome.returnJson ?? "null")).toEqual(["ok", '{"n":2}', '{"n":3}']);
        expect(outcome.calls.map((call) => call.callIndex)).toEqual([0, 1, 2]);
      });

      it("exposes only standard built-ins plus tools, console, budget and artifact", async () => {
        const names = ["process", "require", "module", "fetch", "setTimeout", "setInterval", "setImmediate", "queueMicrotask", "Buffer", "global", "WebAssembly", "SharedArrayBuffer", "Atomics", "__isochain_send", "__isochain_bridge", "__isochain_resolve", "__isochain_probe", "__isochain_start"];
        const outcome = await run(`return [${names.map((n) => `typeof ${n}`).join(", ")}, typeof tools, typeof console, typeof budget, typeof artifact];`);
        expect(JSON.parse(outcome.returnJson ?? "null")).toEqual([...names.map(() => "undefined"), "object", "object", "object", "function"]);
      });

      it("keeps constructor-chain escapes inside the isolate", async () => {
        const escape = await run('return this.constructor.constructor("return process")();');
        expect(escape.error).toMatchObject({ phase: "runtime", name: "ReferenceError" });
        const global = await run("const g = tools.echo.constructor.constructor('return this')(); return [typeof g.tools, typeof g.process, typeof g.require];");
        expect(JSON.parse(global.returnJson ?? "null")).toEqual(["object", "undefined", "undefined"]);
      });

      it("keeps Error.prepareStackTrace tampering inside the isolate", async () => {
        const outcome = await run("Error.prepareStackTrace = () => 'pwned'; throw new Error('x');");
        expect(outcome.status).toBe("error");
        expect(new Error("host").stack).toMatch(/^Error: host\n\s+at /);
      });

      it("freezes tools and makes budget read-only", async () => {
        const outcome = await run("'use strict'; const r = []; try { tools.echo = 1; } catch (e) { r.push(e.name); } try { budget.remaining = 99; } catch (e) { r.push(e.name); } r.push(budget.remaining); return r;");
        expect(JSON.parse(outcome.returnJson ?? "null")).toEqual(["TypeError", "TypeError", 20]);
      });

      it("gives each run a fresh context", async () => {
        await run("globalThis.leak = 1;");
        const outcome = await run("return typeof leak;");
        expect(outcome.returnJson).toBe('"undefined"');
      });
    });

    describe("determinism", () => {
      it("seeds Math.random: same seed, same sequence; other seed, other sequence", async () => {
        const body = "return [Math.random(), Math.random(), Math.random()];";
        const a = await run(body, { seed: 7 });
        const b = await run(body, { seed: 7 });
        const c = await run(body, { seed: 8 });
        expect(a.returnJson).toBe(b.returnJson);
        expect(a.returnJson).not.toBe(c.returnJson);
      });

      it("starts Date.now and new Date at clockStart", async () => {
        const clockStart = Date.UTC(2001, 1, 3, 4, 5, 6);
        const outcome = await run("return [Date.now(), new Date().getTime(), new Date(0).getTime(), new Date() instanceof Date, typeof Date()];", { clockStart });
        const [now, constructed, epoch, isDate, called] = JSON.parse(outcome.returnJson ?? "null") as [number, number, number, boolean, string];
        expect(now - clockStart).toBeGreaterThanOrEqual(0);
        expect(now - clockStart).toBeLessThan(1_000);
        expect(constructed).toBeGreaterThanOrEqual(now);
        expect(epoch).toBe(0);
        expect(isDate).toBe(true);
        expect(called).toBe("string");
      });

      it("reports every clock reading, ahead of the calls after it, and reads a replay's back first", async () => {
        const clockStart = Date.UTC(2001, 1, 3, 4, 5, 6);
        const events: unknown[] = [];
        const body = `
          const t0 = Date.now(); const t1 = Date.now();
          const slow = await tools.echo({ wait: 1 });
          await new Promise((resolve) => { const end = Date.now() + 30; (function spin() { if (Date.now() < end) Promise.resolve().then(spin); else resolve(); })(); });
          const stamp = new Date().toISOString();
          await tools.echo({ stamp });
          return [t0, t1, stamp, Date.now()];`;
        const first = await run(body, {
          clockStart,
          onClock: (readings) => events.push(["clock", [...readings]]),
          onToolCall: (call) => {
            events.push(["call", call.callIndex]);
            return Promise.resolve(ok(call.argsJson));
          },
        });
        expect(first.status).toBe("ok");
        const [t0, t1, stamp, last] = JSON.parse(first.returnJson ?? "null") as [number, number, string, number];
        expect(t1).toBeGreaterThanOrEqual(t0);
        // Readings come before the call they precede; each batch is [elapsed, count, ...].
        expect(events[0]).toEqual(["clock", [t0 - clockStart, t1 === t0 ? 2 : 1, ...(t1 === t0 ? [] : [t1 - clockStart, 1])]]);
        expect(events[1]).toEqual(["call", 0]);
        const stampAt = events.findIndex((event) => (event as unknown[])[0] === "call" && (event as unknown[])[1] === 1);
        expect((events[stampAt - 1] as unknown[])[0]).toBe("clock");
        const readings = events.filter((event) => (event as unknown[])[0] === "clock").flatMap((event) => (event as [string, number[]])[1]);

        // Replayed: the same times in the same order, however fast the replay runs.
        const again = await run(body, { clockStart, clockReplay: readings });
        expect(JSON.parse(again.returnJson ?? "null")).toEqual([t0, t1, stamp, last]);
        // Past the recorded readings the clock goes on from real time, never back.
        const beyond = await run("const a = Date.now(); const b = Date.now(); return [a, b];", { clockStart, clockReplay: [5_000, 1] });
        const [a, b] = JSON.parse(beyond.returnJson ?? "null") as [number, number];
        expect(a).toBe(clockStart + 5_000);
        expect(b).toBeGreaterThanOrEqual(a);
      });

      it("builds artifact arguments", async () => {
        const outcome = await run("return artifact('sha256:' + 'a'.repeat(64));");
        expect(JSON.parse(outcome.returnJson ?? "null")).toEqual({ $artifact: `sha256:${"a".repeat(64)}` });
      });
    });

    it("runs concurrent scripts in separate isolates", async () => {
      const outcomes = await Promise.all(Array.from({ length: 4 }, (_, i) => run(`globalThis.mark = ${i}; await tools.echo({}); return globalThis.mark;`)));
      expect(outcomes.map((outcome) => outcome.returnJson)).toEqual(["0", "1", "2", "3"]);
    });
  });
}

/**
 * One isolated-vm isolate that runs scripts, one at a time, each in a fresh context. It knows
 * nothing of pools, invokers or processes: calls leave through `request.onToolCall`, so the same
 * unit serves the in-process driver and, later, the child side of the process driver.
 *
 * Life of a run:
 *
 * ```
 *  prepare() ─ createContext ─ set send callback ─ run cached prelude Script ─ keep refs
 *      │          (off the critical path: done after the previous run, while idle)
 *  run() ─ context.eval(`start(config, <script>)`) ─▶ frames via ignored callback ─▶ host
 *      │        host answers: resolveRef.applyIgnored(callIndex, resultJson)   (never *Sync)
 *      ├─ done frame ─ abort pending calls ─ quiesce probe (isolate idle) ─ outcome
 *      └─ watchdog (every WATCHDOG_INTERVAL_MS) ─ wall / CPU / OOM / stall ─ dispose ─ outcome
 * ```
 *
 * Invariants:
 * - No host call that can run script code is synchronous: `context.eval`, `apply` and
 *   `applyIgnored` run on the isolate's own thread, so a script that loops forever (even after
 *   an `await`, or in a microtask storm) cannot stall the host's event loop; the watchdog, a
 *   host timer, disposes the isolate instead.
 * - Only strings and numbers cross: the prelude serialises arguments and the return value
 *   inside the isolate; results go in as JSON text. No host object or Reference is ever handed
 *   to the isolate, so script code cannot reach host prototypes (a Node `Buffer` in a result is
 *   just its JSON form; no pooled bytes beyond it can leak).
 * - `run` settles only when the isolate is idle (a probe queued behind any leftover
 *   continuations has answered) or disposed; pending calls' signals have fired by then.
 * - After any limit hit, cancellation or fault the isolate is disposed and
 *   {@link IsolateRunner.isDisposed} is true; the owner must drop this runner.
 * - A never-resolving promise is detected early: when no call is pending and the probe finds
 *   the isolate idle with every frame accounted for, nothing can ever wake the script, and the
 *   run ends at once as a `DeadlockError` (phase `limit`).
 * @module
 */
import ivm from "isolated-vm";
import { BRIDGE_GLOBALS, FRAME_KIND, OUTPUT_TRUNCATED_MARKER } from "../src/bridge/protocol.ts";
import type { LogLevel, PreludeRunConfig } from "../src/bridge/protocol.ts";
import { describeThrown, type InvocationResult } from "../src/kernel/index.ts";
import { getPreludeSource } from "./prelude-bundle.ts";
import type { SandboxError, SandboxRunOutcome, SandboxRunRequest } from "./sandbox-driver.ts";

/** How often the watchdog samples CPU time, disposal and stalls, ms. */
export const WATCHDOG_INTERVAL_MS = 20;

/** Options of an {@link IsolateRunner}. */
export interface IsolateRunnerOptions {
  /** Heap limit of the isolate, MiB (isolated-vm's minimum is 8). */
  readonly memoryLimitMb: number;
  /** The prelude to install in each context. @defaultValue {@link getPreludeSource}() */
  readonly preludeSource?: string;
}

interface PreparedContext {
  readonly context: ivm.Context;
  readonly slot: { handler: FrameHandler };
  readonly resolveRef: ivm.Reference<(callIndex: number, resultJson: string) => void>;
  readonly probeRef: ivm.Reference<() => string>;
}

type FrameField = string | number | undefined;
type FrameHandler = (kind: FrameField, a: FrameField, b: FrameField, c: FrameField, d: FrameField) => void;

const LOG_LEVELS: ReadonlySet<string> = new Set(["log", "info", "warn", "error", "debug"]);
const noFrames: FrameHandler = () => undefined;

/** Why the host ended a run early. */
type KillReason = "timeout" | "cpu" | "memory" | "cancelled" | "crash";

/** Runs scripts in one isolate; see the module comment for the life of a run. */
export class IsolateRunner {
  /** The isolate's heap limit, MiB. */
  readonly memoryLimitMb: number;
  readonly #isolate: ivm.Isolate;
  readonly #prelude: ivm.Script;
  #prepared: Promise<PreparedContext> | undefined;
  #runs = 0;
  #busy = false;
  #lastHeapBytes = 0;
  #disposedByOwner = false;

  /** Creates the isolate and compiles the prelude. Throws `ChainRuntimeError` `SANDBOX_FAILED` if the prelude is missing. */
  constructor(options: IsolateRunnerOptions) {
    this.memoryLimitMb = options.memoryLimitMb;
    this.#isolate = new ivm.Isolate({ memoryLimit: options.memoryLimitMb });
    this.#prelude = this.#isolate.compileScriptSync(options.preludeSource ?? getPreludeSource(), {
      filename: "isochain:prelude",
    });
  }

  /** Runs completed in this isolate. */
  get runs(): number {
    return this.#runs;
  }

  /** True once the isolate is gone (limit hit, cancellation, OOM, {@link dispose}). */
  get isDisposed(): boolean {
    return this.#isolate.isDisposed;
  }

  /** True while a run is in progress. */
  get isBusy(): boolean {
    return this.#busy;
  }

  /** Used heap at the end of the last run, bytes. */
  get heapBytes(): number {
    return this.#lastHeapBytes;
  }

  /**
   * Creates the next run's context with the prelude installed, if not already under way.
   * Rejects when the isolate is disposed.
   */
  prepare(): Promise<void> {
    this.#prepared ??= this.#createContext();
    return this.#prepared.then(() => undefined);
  }

  /** Disposes the isolate; a run in progress ends as `crash`. Idempotent. */
  dispose(): void {
    this.#disposedByOwner = true;
    if (!this.#isolate.isDisposed) this.#isolate.dispose();
  }

  async #createContext(): Promise<PreparedContext> {
    const context = await this.#isolate.createContext();
    const slot = { handler: noFrames };
    const send = new ivm.Callback(
      (kind: FrameField, a: FrameField, b: FrameField, c: FrameField, d: FrameField) => slot.handler(kind, a, b, c, d),
      { ignored: true },
    );
    await context.global.set(BRIDGE_GLOBALS.send, send);
    await this.#prelude.run(context);
    const resolveRef = (await context.global.get(BRIDGE_GLOBALS.resolve, { reference: true })) as PreparedContext["resolveRef"];
    const probeRef = (await context.global.get(BRIDGE_GLOBALS.probe, { reference: true })) as PreparedContext["probeRef"];
    await Promise.all([context.global.delete(BRIDGE_GLOBALS.resolve), context.global.delete(BRIDGE_GLOBALS.probe)]);
    return { context, slot, resolveRef, probeRef };
  }

  /**
   * Runs one script. Never rejects for anything the script does; rejects only when called while
   * another run is in progress (a bug in the owner). After it settles, check
   * {@link isDisposed}: a disposed runner must be dropped.
   */
  async run(request: SandboxRunRequest): Promise<SandboxRunOutcome> {
    if (this.#busy) throw new Error("IsolateRunner.run called while a run is in progress");
    this.#busy = true;
    try {
      if (request.signal?.aborted) return { status: "cancelled", wallMs: 0, cpuMs: 0, heapBytes: this.#lastHeapBytes };
      let prepared: PreparedContext;
      try {
        prepared = await (this.#prepared ?? this.#createContext());
      } catch (error) {
        this.dispose();
        return {
          status: "error",
          error: { phase: "limit", name: "SandboxError", message: `could not create a context: ${describeThrown(error)}` },
          wallMs: 0,
          cpuMs: 0,
          heapBytes: 0,
        };
      } finally {
        this.#prepared = undefined;
      }
      const outcome = await this.#execute(prepared, request);
      this.#runs++;
      releaseContext(prepared);
      return outcome;
    } finally {
      this.#busy = false;
    }
  }

  #execute(prepared: PreparedContext, request: SandboxRunRequest): Promise<SandboxRunOutcome> {
    const isolate = this.#isolate;
    const { limits } = request;
    const wallStart = performance.now();
    const cpuStart = isolate.cpuTime;
    const cpuLimitNs = BigInt(limits.cpuTimeMs) * 1_000_000n;
    const hostOutputCap = limits.maxOutputBytes + OUTPUT_TRUNCATED_MARKER.length + 8;
    const pending = new Map<number, AbortController>();
    let cpuNs = 0n;
    let framesReceived = 0;
    let resultsSent = 0;
    let hostOutputBytes = 0;
    let settled: Omit<SandboxRunOutcome, "wallMs" | "cpuMs" | "heapBytes"> | undefined;
    let closed = false;
    let probing = false;
    let disposedByHost = false;

    let finishRun!: (outcome: SandboxRunOutcome) => void;
    const result = new Promise<SandboxRunOutcome>((resolve) => {
      finishRun = resolve;
    });

    const sampleCpu = (): void => {
      if (!isolate.isDisposed) cpuNs = isolate.cpuTime - cpuStart;
    };

    const close = (heapBytes: number): void => {
      if (closed) return;
      closed = true;
      clearTimeout(deadline);
      clearInterval(watchdog);
      request.signal?.removeEventListener("abort", onAbort);
      prepared.slot.handler = noFrames;
      sampleCpu();
      this.#lastHeapBytes = heapBytes;
      finishRun({
        ...(settled ?? { status: "error", error: { phase: "limit", name: "SandboxError", message: "the run ended without an outcome" } }),
        wallMs: performance.now() - wallStart,
        cpuMs: Number(cpuNs) / 1e6,
        heapBytes,
      });
    };

    const abortPending = (): void => {
      for (const controller of pending.values()) controller.abort(new Error("the chain ended before this call finished"));
      pending.clear();
    };

    /** The script's outcome is known; wait until the isolate is idle, then close. */
    const settle = (outcome: NonNullable<typeof settled>): void => {
      if (settled !== undefined) return;
      settled = outcome;
      abortPending();
      // The probe runs only after every microtask the script left behind; once it answers the
      // isolate is idle, so the synchronous heap read cannot wait on script code.
      const quiesced = (): void => {
          if (closed) return;
          let heapBytes = this.#lastHeapBytes;
          try {
            heapBytes = isolate.getHeapStatisticsSync().used_heap_size;
          } catch {
            return onIsolateGone();
          }
          close(heapBytes);
        };
      // A rejection with the isolate alive is an unhandled rejection reported by that task's
      // epilogue: the task ran, so the isolate is just as idle.
      prepared.probeRef.apply(undefined, []).then(quiesced, () => (isolate.isDisposed ? onIsolateGone() : quiesced()));
    };

    const kill = (reason: KillReason): void => {
      if (closed) return;
      sampleCpu();
      if (!isolate.isDisposed) {
        disposedByHost = true;
        isolate.dispose();
      }
      abortPending();
      settled = killOutcome(reason, limits);
      close(this.#lastHeapBytes);
    };

    /** The isolate vanished without the host disposing it: isolated-vm does that on OOM. */
    const onIsolateGone = (): void => {
      if (closed) return;
      kill(disposedByHost || this.#disposedByOwner ? "crash" : "memory");
    };

    const deliver = (callIndex: number, result: InvocationResult): void => {
      if (settled !== undefined || !pending.delete(callIndex)) return;
      let resultJson: string;
      try {
        resultJson = JSON.stringify(result);
      } catch (error) {
        resultJson = JSON.stringify({ status: "error", code: "RESULT_INVALID", text: `the result could not be serialised: ${describeThrown(error)}` });
      }
      resultsSent++;
      try {
        prepared.resolveRef.applyIgnored(undefined, [callIndex, resultJson]);
      } catch {
        onIsolateGone();
      }
    };

    const onCall = (callIndex: number, tool: string, argsJson: string): void => {
      if (pending.has(callIndex) || settled !== undefined) return;
      const controller = new AbortController();
      pending.set(callIndex, controller);
      if (argsJson.length > limits.maxArgumentBytes / 3 && Buffer.byteLength(argsJson) > limits.maxArgumentBytes) {
        deliver(callIndex, { status: "error", code: "BRIDGE_ERROR", text: `tools.${tool}: arguments exceed ${limits.maxArgumentBytes} bytes.` });
        return;
      }
      let answer: Promise<InvocationResult>;
      try {
        answer = request.onToolCall({ callIndex, tool, argsJson }, controller.signal);
      } catch (error) {
        answer = Promise.reject(error as Error);
      }
      answer.then(
        (value) => deliver(callIndex, value),
        (error: unknown) => deliver(callIndex, { status: "error", code: "TOOL_ERROR", text: describeThrown(error) }),
      );
    };

    const onLog = (level: string, text: string): void => {
      if (hostOutputBytes >= hostOutputCap) return;
      hostOutputBytes += text.length;
      try {
        request.onLog?.(level as LogLevel, text);
      } catch {
        // a failing log listener must not break the run
      }
    };

    prepared.slot.handler = (kind, a, b, c, d) => {
      framesReceived++;
      if (settled !== undefined) return;
      if (kind === FRAME_KIND.call) {
        if (typeof a === "number" && typeof b === "string" && typeof c === "string") onCall(a, b, c);
      } else if (kind === FRAME_KIND.log) {
        if (typeof a === "string" && LOG_LEVELS.has(a) && typeof b === "string") onLog(a, b);
      } else if (kind === FRAME_KIND.done) {
        if (typeof b === "string") {
          const error: SandboxError = {
            phase: "runtime",
            name: b,
            message: typeof c === "string" ? c : "",
            ...(typeof d === "string" ? { stack: d } : {}),
          };
          settle({ status: "error", error });
        } else {
          settle({ status: "ok", ...(typeof a === "string" ? { returnJson: a } : {}) });
        }
      }
    };

    const checkStall = (): void => {
      if (probing || settled !== undefined || pending.size > 0) return;
      probing = true;
      prepared.probeRef.apply(undefined, []).then(
        (state) => {
          probing = false;
          if (settled !== undefined || pending.size > 0) return;
          if (state === `${framesReceived},${resultsSent}`) {
            settle({
              status: "error",
              error: {
                phase: "limit",
                name: "DeadlockError",
                message: "script is waiting on a promise that can never settle (no tool call is pending)",
              },
            });
          }
        },
        () => {
          probing = false;
          if (isolate.isDisposed) onIsolateGone();
        },
      );
    };

    const deadline = setTimeout(() => kill("timeout"), limits.totalTimeoutMs);
    const watchdog = setInterval(() => {
      if (isolate.isDisposed) return onIsolateGone();
      sampleCpu();
      if (cpuNs > cpuLimitNs) return kill("cpu");
      checkStall();
    }, WATCHDOG_INTERVAL_MS);
    const onAbort = (): void => kill("cancelled");
    request.signal?.addEventListener("abort", onAbort, { once: true });

    const config: PreludeRunConfig = {
      toolNames: request.toolNames,
      maxToolCalls: request.maxToolCalls,
      seed: request.seed,
      clockStart: request.clockStart,
      maxOutputBytes: limits.maxOutputBytes,
      maxArgumentBytes: limits.maxArgumentBytes,
    };
    // The script keeps its own lines (2.. of the wrapper), so stack positions match the compiled
    // code; the per-run config travels as an argument, so the same script compiles to the same
    // source text and hits V8's compilation cache.
    const source = `${BRIDGE_GLOBALS.start}($0,${request.script}\n)`;
    prepared.context.evalClosure(source, [JSON.stringify(config)], { filename: request.scriptName }).catch((error: unknown) => {
      if (isolate.isDisposed) return onIsolateGone();
      // isolated-vm rejects a task whose microtasks left a promise rejection unhandled. That is
      // the script's own business (as in an async function, a stray rejection is not a throw):
      // only a failure before the prelude started (a syntax error) ends the run.
      prepared.probeRef.apply(undefined, []).then(
        (state) => {
          if (state === "not-started") failToStart(error);
        },
        () => (isolate.isDisposed ? onIsolateGone() : undefined),
      );
    });
    const failToStart = (error: unknown): void => {
      const thrown = error as { name?: unknown; message?: unknown; stack?: unknown };
      settle({
        status: "error",
        error: {
          phase: "runtime",
          name: typeof thrown.name === "string" ? thrown.name : "Error",
          message: typeof thrown.message === "string" ? thrown.message : describeThrown(error),
          ...(typeof thrown.stack === "string" ? { stack: thrown.stack } : {}),
        },
      });
    };
    return result;
  }
}

/** Drops every host handle into a finished context so the isolate can collect it. */
function releaseContext(prepared: PreparedContext): void {
  for (const handle of [prepared.resolveRef, prepared.probeRef, prepared.context]) {
    try {
      handle.release();
    } catch {
      // already gone with the isolate
    }
  }
}

function killOutcome(reason: KillReason, limits: SandboxRunRequest["limits"]): Omit<SandboxRunOutcome, "wallMs" | "cpuMs" | "heapBytes"> {
  switch (reason) {
    case "timeout":
      return {
        status: "timeout",
        error: { phase: "limit", name: "TimeoutError", message: `the chain ran past totalTimeoutMs (${limits.totalTimeoutMs} ms)` },
      };
    case "cpu":
      return {
        status: "timeout",
        error: { phase: "limit", name: "CpuLimitError", message: `the script used more than cpuTimeMs (${limits.cpuTimeMs} ms) of CPU` },
      };
    case "memory":
      return {
        status: "error",
        error: { phase: "limit", name: "MemoryLimitError", message: `the script exceeded memoryLimitMb (${limits.memoryLimitMb} MiB)` },
      };
    case "cancelled":
      return { status: "cancelled" };
    case "crash":
      return { status: "error", error: { phase: "limit", name: "SandboxError", message: "the isolate was disposed during the run" } };
  }
}

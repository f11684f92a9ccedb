/**
 * `run_chain`: one chain from source to result.
 *
 *   code ──compile──▶ JS + source map ──driver.run──▶ isolate
 *                                          │  tools.x(args)  (one frame out, one back)
 *                                          ▼
 *                                   ToolInvoker.invoke ── budget, approval, refs, timeout, shaping
 *                                          │
 *   ChainRunResult ◀── map stack, offload return value, collect trace ◀┘
 *
 * Invariants:
 * - `run` never throws for anything the script does; every fault is a `ChainRunResult`.
 * - The host keeps the trace (the invoker session), not the isolate: every call that reached the
 *   host is in `callTrace` whatever the outcome, calls still running when the script ends included
 *   (they are cancelled and awaited before `run` returns, so nothing starts after it).
 * - This layer knows nothing of isolated-vm; it talks to a `SandboxDriver`.
 * @module
 */
import { randomInt, randomUUID } from "node:crypto";
import type { SandboxDriver, SandboxLogLevel, SandboxRunOutcome, SandboxToolCall } from "../../sandbox/sandbox-driver.ts";
import { compileScript, type CompileResult } from "../compile/compile-script.ts";
import { DEFAULT_SCRIPT_NAME } from "../compile/compiled-script-contract.ts";
import { mapRuntimeError } from "../compile/map-runtime-error.ts";
import { ToolInvoker } from "../invoker/tool-invoker.ts";
import type { InvokerSession } from "../invoker/invoker-session.ts";
import {
  type AnyTool,
  type ApprovalHandler,
  type ArtifactRef,
  type BlobStore,
  brandChainTool,
  type ChainError,
  type ChainPolicy,
  type ChainRunResult,
  ChainRuntimeError,
  type ChainRunStatus,
  type Hooks,
  type InvocationResult,
  type ObjectJsonSchema,
  type ProgressListener,
  resolveChainPolicy,
  type Tool,
  type ToolContext,
  type ToolExecutionResult,
  type ToolRisk,
} from "../kernel/index.ts";
import type { Skill } from "../skills/skill.ts";
import { renderDeclarations } from "../toolbox/render-declarations.ts";
import { Toolbox } from "../toolbox/toolbox.ts";
import { createSandboxDriver, type DriverChoice } from "./create-driver.ts";
import { summarizeRun } from "./summarize-run.ts";

/** How `ToolChainTool` is built. Give `toolbox` or `tools`. */
export interface ToolChainToolOptions {
  /** The tools scripts may call (hosted, provider-defined and `run_chain` itself are left out). */
  readonly toolbox?: Toolbox;
  /** Shorthand for `toolbox: new Toolbox(tools)`. */
  readonly tools?: Iterable<AnyTool>;
  /** Limits; unset fields take `DEFAULT_CHAIN_POLICY`. Throws `POLICY_INVALID` when inconsistent. */
  readonly policy?: Partial<ChainPolicy>;
  /** Who approves calls above `policy.maxRiskUnapproved`. None: those calls are denied. */
  readonly approvalHandler?: ApprovalHandler;
  /** Where large results, media and large return values go. None: everything stays inline. */
  readonly blobStore?: BlobStore;
  /** Observers of tool and chain events. */
  readonly hooks?: Hooks;
  /**
   * The sandbox: `"in-process"`, `"process"`, or a driver instance (shared drivers are not
   * closed by `close()`). @defaultValue `"in-process"`
   */
  readonly driver?: DriverChoice;
  /** Warm sandboxes kept ready. @defaultValue 2 */
  readonly poolSize?: number;
  /** The tool's name. @defaultValue `"run_chain"` */
  readonly name?: string;
  /** When given, scripts see only the skill's `allowedTools`. */
  readonly skill?: Skill;
}

/** Options of one run. */
export interface ChainRunOptions {
  /** Aborting cancels the chain: `status: "cancelled"`, pending calls' signals fire. */
  readonly signal?: AbortSignal;
  /** Receives `tool_call`, `tool_result` and `log` steps as they happen. */
  readonly onProgress?: ProgressListener;
  /** Use this chain id instead of a random one. */
  readonly chainId?: string;
  /** Seed of the script's `Math.random` (recorded in the result). @defaultValue random */
  readonly seed?: number;
  /** Start of the script's virtual clock. @defaultValue `Date.now()` */
  readonly clockStart?: number;
}

/** The input of `run_chain`. */
export interface ChainInput {
  readonly code: string;
}

const SCRIPT_NAME = DEFAULT_SCRIPT_NAME;
const MAX_ARGUMENT_BYTES = 8 * 1024 * 1024;

/**
 * The `run_chain` tool: a model writes a TypeScript script that calls `tools.*`; this runs it in
 * an isolated sandbox and routes every call through a {@link ToolInvoker}.
 *
 * ```ts
 * const chain = new ToolChainTool({ toolbox, policy: { maxToolCalls: 50 }, approvalHandler, blobStore });
 * const run = await chain.run(code);            // ChainRunResult, never throws for script faults
 * const forModel = await chain.execute({ code }); // text summary + structuredContent = run
 * await chain.close();
 * ```
 */
export class ToolChainTool implements Tool<ChainInput, ChainRunResult> {
  readonly name: string;
  readonly inputSchema: ObjectJsonSchema = Object.freeze({
    type: "object",
    properties: {
      code: {
        type: "string",
        description: "TypeScript or JavaScript: the body of an async function. Use await, call tools.*, and return a JSON value.",
      },
    },
    required: ["code"],
    additionalProperties: false,
  });
  readonly risk: ToolRisk = "safe";
  /** The resolved policy every run of this tool uses. */
  readonly policy: ChainPolicy;
  /** The invoker every call of every run goes through. */
  readonly invoker: ToolInvoker;

  readonly #toolbox: Toolbox;
  readonly #blobStore: BlobStore | undefined;
  readonly #hooks: Hooks | undefined;
  readonly #driver: SandboxDriver;
  readonly #ownsDriver: boolean;
  #declarations: string | undefined;
  #toolNames: readonly string[] | undefined;
  #closed = false;

  constructor(options: ToolChainToolOptions) {
    this.policy = resolveChainPolicy(options.policy);
    let toolbox = options.toolbox ?? new Toolbox(options.tools ?? []);
    if (options.skill) toolbox = toolbox.withSkill(options.skill);
    this.#toolbox = toolbox;
    this.#blobStore = options.blobStore;
    this.#hooks = options.hooks;
    this.name = options.name ?? "run_chain";
    this.invoker = new ToolInvoker({
      toolbox,
      policy: this.policy,
      ...(options.approvalHandler ? { approvalHandler: options.approvalHandler } : {}),
      ...(options.blobStore ? { blobStore: options.blobStore } : {}),
      ...(options.hooks ? { hooks: options.hooks } : {}),
    });
    const driver = options.driver ?? "in-process";
    this.#ownsDriver = typeof driver === "string";
    this.#driver = createSandboxDriver(driver, { poolSize: options.poolSize ?? 2, memoryLimitMb: this.policy.memoryLimitMb });
    brandChainTool(this);
  }

  /** What the model reads: how to write a script, and the `tools.*` declarations. */
  get description(): string {
    return (
      "Run a short TypeScript script that calls several tools and combines their results in one step. " +
      "The script is the body of an async function: use top-level await, call tools as `await tools.name({...})`, " +
      "and `return` a JSON value. Large results come back as artifact refs; pass them on with `artifact(ref)`. " +
      `At most ${this.policy.maxToolCalls} tool calls per script.\n\n` +
      this.declarations()
    );
  }

  /** The TypeScript declarations of `tools.*`, generated from the tools' schemas. */
  declarations(): string {
    this.#declarations ??= renderDeclarations(this.#toolbox.callable());
    return this.#declarations;
  }

  /** The toolbox scripts call into. */
  get toolbox(): Toolbox {
    return this.#toolbox;
  }

  /** Warms the sandbox pool so the first chain does not pay for isolate start-up. */
  async warm(): Promise<void> {
    await this.#driver.warm?.();
  }

  /**
   * Runs one script. Never throws for anything the script does: syntax errors, runtime errors,
   * limits and cancellation are statuses of the result. Throws `CHAIN_CLOSED` after `close()`.
   */
  async run(code: string, options: ChainRunOptions = {}): Promise<ChainRunResult> {
    if (this.#closed) throw new ChainRuntimeError("CHAIN_CLOSED", "This ToolChainTool was closed; create a new one.");
    const started = performance.now();
    const chainId = options.chainId ?? randomUUID();
    const seed = options.seed ?? randomInt(0, 2 ** 31 - 1);
    const clockStart = options.clockStart ?? Date.now();
    await this.#fireChainStart(chainId, code);

    const compiled = typeof code === "string" ? compileScript(code) : invalidInput();
    if (!compiled.ok) {
      return this.#finish(chainId, started, { status: "error", error: compiled.error, outputText: "", seed, clockStart });
    }

    const session = this.invoker.openSession({
      chainId,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const inFlight = new Set<Promise<InvocationResult>>();
    let output = "";
    const onProgress = options.onProgress;
    const onToolCall = (call: SandboxToolCall, signal: AbortSignal): Promise<InvocationResult> => {
      const pending = this.invoker.invoke(
        { id: `c${call.callIndex}`, name: call.tool, arguments: call.argsJson },
        { session, ctx: { signal, callId: `c${call.callIndex}` }, ...(onProgress ? { onProgress } : {}) },
      );
      inFlight.add(pending);
      void pending.finally(() => inFlight.delete(pending));
      return pending;
    };
    const onLog = (level: SandboxLogLevel, text: string): void => {
      output += `${text}\n`; // one console call = one line
      if (onProgress) safeProgress(onProgress, { type: "log", level, text });
    };

    let outcome: SandboxRunOutcome;
    try {
      outcome = await this.#driver.run({
        chainId,
        script: compiled.code,
        scriptName: SCRIPT_NAME,
        toolNames: this.#toolNames ??= this.#toolbox.callable().map((tool) => tool.name),
        maxToolCalls: this.policy.maxToolCalls,
        limits: {
          memoryLimitMb: this.policy.memoryLimitMb,
          cpuTimeMs: this.policy.cpuTimeMs,
          totalTimeoutMs: this.policy.totalTimeoutMs,
          maxOutputBytes: this.policy.maxOutputBytes,
          maxArgumentBytes: MAX_ARGUMENT_BYTES,
        },
        seed,
        clockStart,
        ...(options.signal ? { signal: options.signal } : {}),
        onToolCall,
        onLog,
      });
    } catch (error) {
      outcome = {
        status: "error",
        error: { phase: "limit", name: "SandboxError", message: `The sandbox failed: ${String((error as Error)?.message ?? error)}` },
        wallMs: performance.now() - started,
        cpuMs: 0,
        heapBytes: 0,
      };
    }
    // Calls still running were cancelled by the driver; wait for their records so the trace is whole.
    if (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    await session.close();
    return this.#finish(chainId, started, {
      status: outcome.status,
      outcome,
      compiled,
      source: code,
      session,
      outputText: output,
      seed,
      clockStart,
    });
  }

  /** `run_chain` as a tool: a bounded text summary for the model, the full run as `structuredContent`. */
  async execute(args: ChainInput, ctx?: ToolContext): Promise<ToolExecutionResult> {
    const code = typeof args === "object" && args !== null ? (args as { code?: unknown }).code : undefined;
    if (typeof code !== "string") {
      return { content: [{ type: "text", text: 'run_chain needs { "code": string }: the script to run.' }], isError: true };
    }
    const run = await this.run(code, ctx ? { signal: ctx.signal } : {});
    return {
      content: [{ type: "text", text: summarizeRun(run, { maxReturnBytes: this.policy.maxInlineResultBytes }) }],
      isError: run.status !== "ok",
      structuredContent: run as unknown as Record<string, unknown>,
    };
  }

  /** Disposes the sandboxes this tool owns. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#ownsDriver) await this.#driver.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #finish(
    chainId: string,
    started: number,
    parts: {
      status: ChainRunStatus;
      outputText: string;
      seed: number;
      clockStart: number;
      error?: ChainError;
      outcome?: SandboxRunOutcome;
      compiled?: Extract<CompileResult, { ok: true }>;
      source?: string;
      session?: InvokerSession;
    },
  ): Promise<ChainRunResult> {
    const { outcome, compiled, session } = parts;
    let error = parts.error;
    if (!error && outcome?.error && compiled && parts.source !== undefined) {
      error = mapRuntimeError(outcome.error, { source: parts.source, map: compiled.map, scriptName: SCRIPT_NAME });
    }
    let returnValue: unknown;
    let returnArtifactRef: ArtifactRef | undefined;
    if (outcome?.status === "ok" && outcome.returnJson !== undefined) {
      if (Buffer.byteLength(outcome.returnJson, "utf8") > this.policy.maxInlineResultBytes && this.#blobStore) {
        try {
          returnArtifactRef = await this.#blobStore.put(outcome.returnJson, { mimeType: "application/json", name: "return-value" });
        } catch {
          returnValue = JSON.parse(outcome.returnJson);
        }
      } else {
        returnValue = JSON.parse(outcome.returnJson);
      }
    }
    const durationMs = performance.now() - started;
    const result: ChainRunResult = {
      chainId,
      status: parts.status,
      ...(returnValue !== undefined ? { returnValue } : {}),
      ...(returnArtifactRef ? { returnArtifactRef } : {}),
      outputText: parts.outputText,
      ...(error ? { error } : {}),
      // Records are kept in completion order; the trace reads in arrival order.
      callTrace: session ? [...session.trace].sort((a, b) => a.seq - b.seq) : [],
      ...(session && session.droppedRecords > 0 ? { droppedCallRecords: session.droppedRecords } : {}),
      durationMs,
      stats: {
        wallMs: outcome?.wallMs ?? durationMs,
        cpuMs: outcome?.cpuMs ?? 0,
        heapBytes: outcome?.heapBytes ?? 0,
        toolCalls: session ? session.callCount : 0,
      },
      seed: parts.seed,
      clockStart: parts.clockStart,
    };
    await this.#fireChainEnd(chainId, result);
    return result;
  }

  async #fireChainStart(chainId: string, code: string): Promise<void> {
    const hook = this.#hooks?.CHAIN_START;
    if (!hook) return;
    try {
      await hook({ event: "CHAIN_START", chainId, code: typeof code === "string" ? code : "" });
    } catch (error) {
      this.#hooks?.onHookError?.(error, "CHAIN_START");
    }
  }

  async #fireChainEnd(chainId: string, result: ChainRunResult): Promise<void> {
    const hook = this.#hooks?.CHAIN_END;
    if (!hook) return;
    try {
      await hook({ event: "CHAIN_END", chainId, result });
    } catch (error) {
      this.#hooks?.onHookError?.(error, "CHAIN_END");
    }
  }
}

function invalidInput(): { ok: false; error: ChainError } {
  return {
    ok: false,
    error: { phase: "compile", name: "CompileError", message: "The script must be a string of TypeScript or JavaScript." },
  };
}

function safeProgress(listener: ProgressListener, step: Parameters<ProgressListener>[0]): void {
  try {
    listener(step);
  } catch {
    // A progress listener never breaks a chain.
  }
}

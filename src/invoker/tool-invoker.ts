/**
 * The ToolInvoker: the one door every chained tool call goes through.
 *
 * ```
 *  invoke(call, { session, ctx, onProgress })          TOOL_START hook (every call)
 *    │
 *    ├─ session closed? ────────────────────────────── error   CANCELLED
 *    ├─ 1 budget      callCount >= maxToolCalls ─────── error   BUDGET_EXCEEDED   (else callCount++)
 *    ├─ 2 lookup      registry.get(name) ───────────── error   UNKNOWN_TOOL      ("did you mean …")
 *    ├─ 3 type gate   hosted / provider / run_chain ── error   NOT_CALLABLE
 *    ├─ 4 arguments   JSON string → object → ONE plain copy; ajv against inputSchema
 *    │                ({ $artifact } counts as the string it will become)
 *    │                                     ─────────── error   INVALID_ARGUMENTS (field + why)
 *    ├─ 5 approval    risk above the line (critical always) → handler, ≤ approvalTimeoutMs
 *    │                                     ─────────── denied  APPROVAL_DENIED / _TIMEOUT / _SKIPPED
 *    ├─ 6 refs        { $artifact: ref } → content ─── error   ARTIFACT_NOT_FOUND / STORE_FAILED
 *    │                content re-validated ─────────── error   INVALID_ARGUMENTS
 *    ├─ 7 cancelled?  session or ctx signal ───────── error   CANCELLED  (execute never runs)
 *    │    slot        wait for one of maxConcurrentCalls (cancellable while queued)
 *    ├─   progress    tool_call
 *    ├─ 8 execute     ctx.signal fires on callTimeoutMs / session / ctx abort
 *    │                                     ─────────── error   TIMEOUT / CANCELLED / TOOL_ERROR
 *    ├─   progress    tool_result
 *    └─ 9 shape       normalise; isError → TOOL_FAILED; media → ChainFile; small → inline;
 *                     large → blob store, pinned, preview + artifactRef
 *    │
 *    ▼  trace record appended (status "timeout" for TIMEOUT) + TOOL_END hook (every outcome)
 * ```
 *
 * Invariants:
 * - `invoke` never throws and never rejects: every gate returns a failure value, and anything
 *   unexpected (a registry, store or tool that misbehaves) becomes an `error` result. Hooks and
 *   progress listeners that throw are reported (`hooks.onHookError`) or swallowed, never fatal.
 * - No failure text grows with what a tool or caller hands over, so neither does the record's
 *   `error`: a tool's thrown name and message are cut at `MAX_ERROR_NAME_CHARS` and
 *   `MAX_ERROR_MESSAGE_CHARS` (200 and 4096 characters, the bounds of a script's own error), a
 *   caller's tool name is repeated up to `MAX_ECHOED_NAME_CHARS` (256), and an `isError` result
 *   keeps a success's size rules (offloaded past `maxInlineResultBytes`; without a store, cut
 *   past `MAX_RESULT_BYTES_WITHOUT_STORE`: see `shapeResult`).
 * - Every call that reaches the invoker fires `TOOL_START` and `TOOL_END` and leaves exactly one
 *   trace record (subject to the session's record cap), under its own `seq`: a call that is not
 *   an object, cannot be read or carries a malformed `rejection` too.
 * - Each field of the call is read once (`readCall`): a getter or proxy cannot pass the checks
 *   under one name and run or be recorded under another. A `rejection` is used only when it is
 *   a failure, and then as a copy; anything else refuses the call, never passes as a success.
 * - Every call that reaches the budget gate and passes it consumes budget, even an unknown tool.
 * - The arguments are copied once (plain JSON, `__proto__` keys dropped); that copy is what is
 *   validated, shown to the approver (as a frozen copy of its own), resolved and executed. A
 *   denied call never touches the blob store; a cancelled call never executes.
 * - The invoker holds configuration only; all per-chain state is in the {@link InvokerSession}.
 */
import { randomUUID } from "node:crypto";
import { BLOB_STORE_METHODS, checkHooks, checkMethods, checkOptionNames, describeKind, optionNames } from "../kernel/check-option-shape.ts";
import { fireHook } from "../kernel/fire-hook.ts";
import {
  ChainRuntimeError,
  describeThrown,
  digestJson,
  overrideChainPolicy,
  resolveChainPolicy,
  type ApprovalHandler,
  type BlobStore,
  type CallRecordStatus,
  type ChainCallRecord,
  type ChainPolicy,
  type Hooks,
  isInvocationErrorCode,
  type InvocationFailure,
  type InvocationResult,
  type ProgressListener,
  type ProgressStep,
  type ToolCall,
  requiresApproval,
} from "../kernel/index.ts";
import { checkBudget } from "./gates/check-budget.ts";
import { checkCallable } from "./gates/check-callable.ts";
import { executeWithTimeout, type ExecuteOutcome } from "./gates/execute-with-timeout.ts";
import { lookupTool, MAX_ECHOED_NAME_CHARS } from "./gates/lookup-tool.ts";
import { digestArguments, normalizeArguments } from "./gates/normalize-arguments.ts";
import { effectiveRisk, requestApproval } from "./gates/request-approval.ts";
import { resolveArtifactRefs } from "./gates/resolve-artifact-refs.ts";
import { shapeResult } from "./gates/shape-result.ts";
import { ArgumentValidator } from "./gates/validate-arguments.ts";
import { containsArtifactArgument } from "./contains-artifact-argument.ts";
import { invocationFailure, isInvocationFailure } from "./invocation-failure.ts";
import { DEFAULT_MAX_TRACE_RECORDS, InvokerSession, sessionStateOf, type SessionState } from "./invoker-session.ts";
import type { ToolRegistry } from "./tool-registry.ts";
import { readErrorFields } from "../kernel/error-fields.ts";
import { clipText, MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_NAME_CHARS } from "../kernel/bound-error-text.ts";

/** What a {@link ToolInvoker} is built from. */
export interface ToolInvokerOptions {
  /** Where tools are looked up (a `Toolbox`). */
  readonly toolbox: ToolRegistry;
  /** Overrides of {@link DEFAULT_CHAIN_POLICY}; resolved (and checked) with `resolveChainPolicy`. @defaultValue `{}` */
  readonly policy?: Partial<ChainPolicy>;
  /** Who approves calls above `maxRiskUnapproved`. @defaultValue none: every such call is denied */
  readonly approvalHandler?: ApprovalHandler;
  /** Where large results and media go, and `{ $artifact }` arguments come from. @defaultValue none: results stay inline */
  readonly blobStore?: BlobStore;
  /** `TOOL_START` / `TOOL_END` observers. @defaultValue none */
  readonly hooks?: Hooks;
  /** Trace records a session keeps before only counting. @defaultValue 1000 */
  readonly maxTraceRecords?: number;
}

/** Options of {@link ToolInvoker.openSession}. */
export interface OpenSessionOptions {
  /** The session's (chain's) id. @defaultValue a random UUID */
  readonly chainId?: string;
  /** Overrides of the invoker's policy for this session. @defaultValue `{}` */
  readonly policy?: Partial<ChainPolicy>;
  /** Cancels every call of the session when it fires. @defaultValue none */
  readonly signal?: AbortSignal;
  /** Trace records kept before only counting. @defaultValue the invoker's `maxTraceRecords` */
  readonly maxTraceRecords?: number;
}

/** Per-call context of {@link ToolInvoker.invoke}. */
export interface InvokeContext {
  /** Cancels this call: before execute it never runs; during execute `ctx.signal` fires. */
  readonly signal?: AbortSignal;
  /** The call's id in records, hooks and `ToolContext`. @defaultValue `call.id`, else `<chainId>:<seq>` */
  readonly callId?: string;
}

/** Options of {@link ToolInvoker.invoke}. */
export interface InvokeOptions {
  /** The chain's session, from {@link ToolInvoker.openSession}. */
  readonly session: InvokerSession;
  /** The call's signal and id (see {@link InvokeContext}). */
  readonly ctx?: InvokeContext;
  /** Receives `tool_call` and `tool_result` steps; errors it throws are swallowed. */
  readonly onProgress?: ProgressListener;
}

/** @internal The facts of one call, gathered as it passes the gates. */
class CallState {
  readonly seq: number;
  readonly callId: string;
  readonly tool: string;
  readonly raw: unknown;
  readonly startedAt = Date.now();
  readonly started = performance.now();
  /** The argument copy, once made. */
  args: Record<string, unknown> | undefined;
  /** Digest of {@link args}, taken as the copy is made: before the tool can change it. */
  digest: string | undefined;
  /** Set when the call timed out in execute (record status `timeout`). */
  timedOut = false;
  /** Set once the tool's `execute` is entered (see `ToolEndEvent.executed`). */
  executed = false;
  /** The caller's own refusal of the call (`ToolCall.rejection`), or the invoker's of a malformed call. */
  rejection: InvocationFailure | undefined;

  constructor(seq: number, callId: string, tool: string, raw: unknown) {
    this.seq = seq;
    this.callId = callId;
    this.tool = tool;
    this.raw = raw;
  }

  /** Digest of the argument copy, or of a copy of the raw arguments when the call stopped first. */
  argsDigest(): string {
    if (this.digest !== undefined) return this.digest;
    if (this.args !== undefined) return digestJson(this.args);
    return digestArguments(this.raw);
  }
}

/**
 * Runs tool calls under a {@link ChainPolicy}: budget, lookup, type gate, argument validation,
 * approval, artifact resolution, cancellation, timeout and result shaping, in that order (see
 * the module comment). One per process; per-chain state lives in an {@link InvokerSession}.
 *
 * Throws `ChainRuntimeError` `POLICY_INVALID` from the constructor or `openSession` when a
 * policy is out of range, and `ARGUMENT_INVALID` from the constructor when an option is not
 * what it must be (see the constructor); `invoke` itself never throws.
 */
export class ToolInvoker {
  /** The resolved default policy of sessions. */
  readonly policy: ChainPolicy;
  readonly #toolbox: ToolRegistry;
  readonly #approvalHandler: ApprovalHandler | undefined;
  readonly #blobStore: BlobStore | undefined;
  readonly #hooks: Hooks | undefined;
  readonly #maxTraceRecords: number;
  readonly #validator = new ArgumentValidator();

  /**
   * @param options - see {@link ToolInvokerOptions}.
   * @throws ChainRuntimeError `ARGUMENT_INVALID` when `options` is not an object, or an option
   * lacks a method the invoker calls (`toolbox` without `get`/`names`, `approvalHandler`
   * without `request`, `blobStore` without `put`/`resolve`/`pin`/`unpin`, a hook that is not
   * a function); `POLICY_INVALID` for a policy or `maxTraceRecords` out of range.
   */
  constructor(options: ToolInvokerOptions) {
    checkInvokerOptions(options);
    this.policy = resolveChainPolicy(options.policy);
    this.#toolbox = options.toolbox;
    this.#approvalHandler = options.approvalHandler;
    this.#blobStore = options.blobStore;
    this.#hooks = options.hooks;
    this.#maxTraceRecords = options.maxTraceRecords ?? DEFAULT_MAX_TRACE_RECORDS;
  }

  /** The blob store results are offloaded to, when configured. */
  get blobStore(): BlobStore | undefined {
    return this.#blobStore;
  }

  /**
   * Opens the state of one chain. Close it when the chain ends (`await using` does): that
   * unpins its artifacts. Throws `POLICY_INVALID` for a bad policy override, `ARGUMENT_INVALID`
   * for a `chainId` that is not a non-empty string.
   */
  openSession(options: OpenSessionOptions = {}): InvokerSession {
    checkOptionNames("openSession()", options, OPEN_SESSION_OPTION_NAMES);
    if (options.chainId !== undefined && (typeof options.chainId !== "string" || options.chainId === "")) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `openSession() chainId must be a non-empty string; got ${typeof options.chainId}.`, {
        details: { argument: "chainId" },
      });
    }
    const policy = options.policy ? overrideChainPolicy(this.policy, options.policy) : this.policy;
    return new InvokerSession({
      id: options.chainId ?? randomUUID(),
      policy,
      blobStore: this.#blobStore,
      signal: options.signal,
      maxTraceRecords: options.maxTraceRecords ?? this.#maxTraceRecords,
    });
  }

  /**
   * Runs one call through every gate and returns its outcome. Never throws: every refusal,
   * failure, timeout and crash is an {@link InvocationResult}, and a trace record is appended to
   * the session for each.
   */
  async invoke(call: ToolCall, options: InvokeOptions): Promise<InvocationResult> {
    let state: SessionState | undefined;
    let callId: string | undefined;
    try {
      state = sessionStateOf(options?.session);
      if (state === undefined) {
        return invocationFailure("CANCELLED", "invoke() needs an open session from ToolInvoker.openSession(); the call did not run.");
      }
      callId = options.ctx?.callId;
    } catch (error) {
      return failedBeforeStart(error);
    }
    // From here on the call has its seq: whatever it is, it is recorded under it.
    const current = readCall(call, state, callId);

    const hooks = this.#hooks;
    if (hooks?.TOOL_START) {
      await fireHook(hooks, "TOOL_START", {
        event: "TOOL_START",
        chainId: state.id,
        callId: current.callId,
        seq: current.seq,
        tool: current.tool,
        args: current.raw,
        startedAt: current.startedAt,
      });
    }

    let result: InvocationResult;
    try {
      result = await this.#run(current, state, options.ctx?.signal, options.onProgress);
    } catch (error) {
      result = invocationFailure(
        "TOOL_ERROR",
        `Invoker error while calling "${clipText(current.tool, MAX_ECHOED_NAME_CHARS)}": ${clipText(describeThrown(error), MAX_ERROR_MESSAGE_CHARS)}`,
      );
    }

    try {
      const record = makeRecord(current, result);
      state.record(record, current.executed);
      if (hooks?.TOOL_END) {
        await fireHook(hooks, "TOOL_END", {
          event: "TOOL_END",
          chainId: state.id,
          callId: current.callId,
          seq: current.seq,
          tool: current.tool,
          record,
          result,
          executed: current.executed,
        });
      }
    } catch {
      // A record that cannot be digested (never expected) must not turn a result into a throw.
    }
    return result;
  }

  async #run(
    call: CallState,
    state: SessionState,
    signal: AbortSignal | undefined,
    onProgress: ProgressListener | undefined,
  ): Promise<InvocationResult> {
    if (state.closed) {
      // Not looked up yet: the name is the caller's, of any length.
      const name = clipText(call.tool, MAX_ECHOED_NAME_CHARS);
      return invocationFailure("CANCELLED", `The session was closed; the call of "${name}" did not run. Open a new session.`);
    }
    // 1 budget
    const overBudget = checkBudget(state);
    if (overBudget) return overBudget;
    // refused by the caller (a script value that is not plain data) or not a readable call at
    // all: counted and recorded only
    if (call.rejection) return call.rejection;
    // 2 lookup
    const found = lookupTool(this.#toolbox, call.tool);
    if (isInvocationFailure(found)) return found;
    // 3 type gate
    const tool = checkCallable(found, call.tool);
    if (isInvocationFailure(tool)) return tool;
    // 4 arguments: one copy, validated
    const normalized = normalizeArguments(call.raw);
    if (!normalized.ok) return normalized.failure;
    call.args = normalized.args;
    // The record's digest is of the arguments the caller passed: a tool may change the object it
    // is handed (its own copy), and that must not change what the record says was asked.
    call.digest = digestJson(normalized.args);
    const invalid = this.#validator.validate(tool, normalized.args);
    if (invalid) return invalid;
    // 5 approval (the gate itself is skipped, not its rule, when the risk needs none)
    if (requiresApproval(effectiveRisk(tool.risk), state.policy.maxRiskUnapproved)) {
      const refused = await requestApproval({
        handler: this.#approvalHandler,
        state,
        tool: call.tool,
        risk: tool.risk,
        args: normalized.args,
        callId: call.callId,
        signal,
      });
      if (refused) return refused;
    }
    // 6 inbound artifact refs (none: the common case, no await)
    let args = normalized.args;
    if (containsArtifactArgument(args)) {
      const resolved = await resolveArtifactRefs(args, state.blobStore);
      if (!resolved.ok) return resolved.failure;
      if (resolved.args !== args) {
        const invalidContent = this.#validator.validateResolved(tool, resolved.args);
        if (invalidContent) return invalidContent;
      }
      args = resolved.args;
    }
    // 7 cancellation, then a concurrency slot (cancellable while queued)
    if (state.aborted || signal?.aborted) return cancelledBeforeRun(call.tool, signal);
    if (!state.slots.tryAcquire() && !(await state.slots.acquire(state.signal, signal))) {
      return cancelledBeforeRun(call.tool, signal);
    }
    let outcome: ExecuteOutcome;
    let running: ExecuteOutcome | Promise<ExecuteOutcome>;
    try {
      if (onProgress) {
        emitProgress(onProgress, { type: "tool_call", callId: call.callId, seq: call.seq, tool: call.tool, args: normalized.args });
      }
      // 8 execute
      call.executed = true;
      running = executeWithTimeout({
        tool,
        args,
        chainId: state.id,
        callId: call.callId,
        timeoutMs: state.policy.callTimeoutMs,
        session: state,
        signal,
      });
    } catch (error) {
      state.slots.release();
      throw error;
    }
    if (running instanceof Promise) {
      try {
        outcome = await running;
      } finally {
        // Released on timeout too: the tool was told to stop, and a tool that ignores its signal
        // must not hold a slot forever.
        state.slots.release();
      }
    } else {
      // A tool that returned without a promise is done: its slot is free before any other call
      // of this session resumes (parallel calls of sync tools never queue for a slot).
      state.slots.release();
      outcome = running;
    }
    if (onProgress) {
      emitProgress(onProgress, {
        type: "tool_result",
        callId: call.callId,
        seq: call.seq,
        tool: call.tool,
        status: outcomeStatus(outcome),
        durationMs: performance.now() - call.started,
      });
    }
    // 9 shaping
    switch (outcome.kind) {
      case "returned":
        return shapeResult(outcome.value, call.tool, state);
      case "threw":
        return invocationFailure("TOOL_ERROR", describeToolThrow(call.tool, outcome.error));
      case "timeout":
        call.timedOut = true;
        return invocationFailure(
          "TIMEOUT",
          `Tool "${call.tool}" did not finish within ${outcome.timeoutMs} ms (callTimeoutMs); its signal was aborted. ` +
            "It may have had side effects: check before calling it again.",
        );
      case "cancelled":
        return invocationFailure("CANCELLED", `The call of "${call.tool}" was cancelled while running; its signal was aborted.`);
    }
  }
}

/** The methods each object option must have: the ones the invoker (or its sessions) calls. */
const REQUIRED_METHODS = [
  ["toolbox", "a Toolbox", ["get", "names"]],
  ["approvalHandler", "an ApprovalHandler", ["request"]],
  ["blobStore", "a BlobStore", BLOB_STORE_METHODS],
] as const;

/**
 * Refuses, at construction, options a call would otherwise trip over later (a blob store of
 * `5` failing every large result). Shape only: reads each option once, calls nothing.
 * @throws ChainRuntimeError `ARGUMENT_INVALID` naming the option (and the missing method),
 * `POLICY_INVALID` for `maxTraceRecords`.
 */
function checkInvokerOptions(options: ToolInvokerOptions): void {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `new ToolInvoker() needs options ({ toolbox, policy, ... }); got ${describeKind(options)}.`);
  }
  checkOptionNames("ToolInvoker", options, INVOKER_OPTION_NAMES);
  for (const [argument, expected, methods] of REQUIRED_METHODS) {
    const value: unknown = options[argument];
    if (value !== undefined || argument === "toolbox") checkMethods("ToolInvoker", argument, expected, value, methods);
  }
  if (options.hooks !== undefined) checkHooks("ToolInvoker", options.hooks);
  const max = options.maxTraceRecords;
  if (max !== undefined && !(Number.isInteger(max) && max >= 0)) {
    throw new ChainRuntimeError("POLICY_INVALID", `ToolInvoker options.maxTraceRecords must be an integer >= 0; got ${describeKind(max)}.`, {
      details: { field: "maxTraceRecords", value: max },
    });
  }
}

/** Every field of {@link ToolInvokerOptions}. */
const INVOKER_OPTION_NAMES = optionNames<ToolInvokerOptions>({
  toolbox: true,
  policy: true,
  approvalHandler: true,
  blobStore: true,
  hooks: true,
  maxTraceRecords: true,
});

/** Every field of {@link OpenSessionOptions}. */
const OPEN_SESSION_OPTION_NAMES = optionNames<OpenSessionOptions>({ chainId: true, policy: true, signal: true, maxTraceRecords: true });

/**
 * The facts of `call`, under the session's next seq. Never throws, and reads each field of the
 * call once (a getter or proxy trap answers once: the name looked up is the name recorded and
 * run); `id` only when `ctxCallId` does not replace it. A call that is not an object, whose
 * fields (or name's text) cannot be read, or whose rejection is not a failure, gets a
 * {@link CallState.rejection}: it is still numbered, counted and recorded like any refused call.
 * An id that cannot be read refuses the call, as `ToolManager` refuses it: a caller keying
 * answers by id could not find this one.
 */
function readCall(call: ToolCall, state: SessionState, ctxCallId: string | undefined): CallState {
  const seq = state.seq++;
  let tool = NOT_A_CALL;
  let id: unknown;
  let raw: unknown;
  let rejection: unknown;
  let refused: InvocationFailure | undefined;
  if (typeof call !== "object" || call === null) {
    refused = invocationFailure("INVALID_ARGUMENTS", `invoke() needs a call object { name, arguments }; got ${call === null ? "null" : typeof call}. The call did not run.`);
  } else {
    try {
      const name: unknown = call.name;
      tool = typeof name === "string" ? name : String(name);
      if (ctxCallId === undefined) id = call.id;
      raw = call.arguments;
      rejection = call.rejection;
      if (typeof name !== "string") {
        const got = name === undefined ? "no name" : `a name that is ${name === null ? "null" : `a ${typeof name}`}`;
        refused = invocationFailure("INVALID_ARGUMENTS", `invoke() needs a call { name: string, arguments }; got ${got}. The call did not run.`);
        tool = NOT_A_CALL;
      }
    } catch (error) {
      refused = failedBeforeStart(error);
    }
  }
  const callId = ctxCallId ?? (typeof id === "string" && id !== "" ? id : `${state.id}:${seq}`);
  const current = new CallState(seq, callId, tool, raw);
  if (refused !== undefined) current.rejection = refused;
  else if (rejection !== undefined) current.rejection = checkRejection(rejection);
  return current;
}

/** The `TOOL_ERROR` of a call whose options or fields threw when read, before it started. */
function failedBeforeStart(error: unknown): InvocationFailure {
  return invocationFailure("TOOL_ERROR", `Invoker error before the call started: ${clipText(describeThrown(error), MAX_ERROR_MESSAGE_CHARS)}`);
}

/** The tool name recorded for a call that is not an object, or whose name cannot be read. */
const NOT_A_CALL = "(not a tool call)";

/**
 * `rejection` (`ToolCall.rejection`) as a failure of the invoker's own making: its fields read
 * once and copied, so a getter cannot say "error" to the record and "ok" to the caller. Anything
 * but a failure (`status` "error" or "denied", a known code, a string text) makes the call
 * malformed: refused `INVALID_ARGUMENTS`, never a success.
 */
function checkRejection(rejection: unknown): InvocationFailure {
  try {
    if (typeof rejection === "object" && rejection !== null) {
      const { status, code, text } = rejection as Partial<Record<keyof InvocationFailure, unknown>>;
      if ((status === "error" || status === "denied") && isInvocationErrorCode(code) && typeof text === "string") {
        return invocationFailure(code, clipText(text, MAX_ERROR_MESSAGE_CHARS), status);
      }
    }
  } catch {
    // a getter that throws: as malformed as any other
  }
  return invocationFailure(
    "INVALID_ARGUMENTS",
    'The call\'s rejection is malformed (not a failure: status "error" or "denied", a known code and a text); the call did not run.',
  );
}

/**
 * The failure of a call cancelled before it ran. A caller that aborted the call's signal with an
 * `InvocationFailure` as its reason (a chain refusing a call whose start its durable trace could
 * not log) gets that failure instead: it says why.
 */
function cancelledBeforeRun(tool: string, signal?: AbortSignal): InvocationResult {
  const reason: unknown = signal?.aborted ? signal.reason : undefined;
  if (isInvocationFailure(reason) && typeof (reason as { text?: unknown }).text === "string") return reason;
  return invocationFailure("CANCELLED", `The call of "${tool}" was cancelled before it ran; the tool was not executed.`);
}

/**
 * Never throws, whatever the tool threw (see `describeThrown`). The name and message are cut
 * at `MAX_ERROR_NAME_CHARS` and `MAX_ERROR_MESSAGE_CHARS`, as a script's own error is: the text
 * goes to the script, the record and the trace.
 */
function describeToolThrow(tool: string, error: unknown): string {
  if (error === undefined) return `Tool "${tool}" threw undefined (no error message).`;
  const fields = readErrorFields(error);
  if (fields === undefined) return `Tool "${tool}" threw a non-Error value: ${clipText(describeThrown(error), MAX_ERROR_MESSAGE_CHARS)}`;
  if (fields !== "unreadable" && typeof fields.name === "string" && typeof fields.message === "string") {
    return `Tool "${tool}" threw ${clipText(fields.name, MAX_ERROR_NAME_CHARS)}: ${clipText(fields.message, MAX_ERROR_MESSAGE_CHARS) || "(no message)"}`;
  }
  return `Tool "${tool}" threw an Error whose name or message cannot be read.`;
}

function outcomeStatus(outcome: ExecuteOutcome): InvocationResult["status"] {
  if (outcome.kind !== "returned") return "error";
  const value = outcome.value;
  try {
    return typeof value === "object" && value !== null && (value as { isError?: unknown }).isError === true ? "error" : "ok";
  } catch {
    return "error";
  }
}

function makeRecord(call: CallState, result: InvocationResult): ChainCallRecord {
  const durationMs = Math.round((performance.now() - call.started) * 1000) / 1000;
  const status: CallRecordStatus = call.timedOut ? "timeout" : result.status;
  if (result.status === "ok") {
    return { seq: call.seq, callId: call.callId, tool: call.tool, argsDigest: call.argsDigest(), status, startedAt: call.startedAt, durationMs };
  }
  return {
    seq: call.seq,
    callId: call.callId,
    tool: call.tool,
    argsDigest: call.argsDigest(),
    status,
    startedAt: call.startedAt,
    durationMs,
    error: result.text,
    code: result.code,
  };
}

function emitProgress(listener: ProgressListener, step: ProgressStep): void {
  try {
    listener(step);
  } catch {
    // A progress listener is an observer; its faults never touch the call.
  }
}


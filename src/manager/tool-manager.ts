/**
 * The ToolManager: direct (non-chain) tool calls of one model turn.
 *
 * ```
 *  tools() / forcedToolChoices()     what the model may call this round
 *     enabled ∩ ¬disabled → exclusive (if any is available: only those)
 *                         → forced    (first round only: only those)
 *
 *  executeSelectedTools(calls)
 *     0 snapshot     each entry's id, name, arguments read once into a plain call, which is what
 *                    every later step checks and the invoker runs; a hole, a non-call or a
 *                    field whose read throws → INVALID_ARGUMENTS response (not run); `calls`
 *                    not an array → one INVALID_ARGUMENTS response saying so
 *     1 ids, dedup   given ids kept; a repeated id → error response (not run), see "Ids";
 *                    same name + same canonical args as an earlier call → a duplicate: not run,
 *                    answered with that call's response under its own id, see "Dedup"
 *     2 round cap    calls past maxCallsPerRound (duplicates not counted) → error response each
 *     3 take-control >1 call and one takes control → nothing runs; every call is told why
 *     4 dispatch     all in parallel, each by kind:
 *                      provider-defined → handleCall (bounded by callTimeoutMs; counted and
 *                                         recorded as below for run_chain)
 *                      hosted           → skipped (the provider runs it)
 *                      run_chain        → the chain tool's execute (see "run_chain" below)
 *                      local            → ToolInvoker.invoke (every policy gate)
 *     → one ToolCallResponse per call, duplicates included, in call order; never a throw
 * ```
 *
 * Ids: every response has an id no other response of the round has. A call keeps the id it was
 * given (a non-empty string) unless an earlier call of the round already has it: that later call
 * is not run and gets an `INVALID_ARGUMENTS` error response naming the repeated id, under a
 * generated id, so a caller that keys responses by id never loses the first call's answer. A call
 * without a usable id gets `call_<index>` (its index in `calls`), or `call_<index>_<n>` when a
 * given id already is that name; generated ids never collide with a given one.
 *
 * Dedup: a call with the same name and canonical arguments (JSON-string arguments parsed first)
 * as an earlier call of the round that is answered on its own is a duplicate. The tool runs once;
 * the duplicate gets the same response as that call, under its own id, so every tool-call id the
 * model sent has a result (OpenAI and Anthropic refuse the next request otherwise). The one
 * exception: the very same call sent twice under one id is answered once (its id has its result).
 * Calls whose arguments cannot be compared, and entries that are not calls, are never duplicates.
 *
 * run_chain: a `ToolChainTool` in the toolbox is offered by `tools()` like any tool, and a direct
 * call of it in a model turn runs its chain (the invoker refuses it: it is the in-chain door, and
 * a chain must not start another). The manager calls the chain tool's `execute(args, ctx)` and
 * shapes what it returns (summary text + the run as `structuredContent`; `isError` for a run that
 * did not end `ok` → `TOOL_FAILED`) with the invoker's result shaping. Of the invoker's gates:
 * - kept, as for a local call: a closed session → `CANCELLED`; the session's budget
 *   (`maxToolCalls`): the call counts as one direct call, however many calls its script makes;
 *   argument normalisation (an object, or a JSON string of one); cancellation by the session or
 *   the round's signal (it reaches the script as the chain's cancel); a trace record in the
 *   session (`session.trace`), for every outcome.
 * - left out: the type gate (that is the refusal); approval, `{ $artifact }` resolution and
 *   concurrency slots (the chain's script calls go through the chain tool's own invoker, with its
 *   own policy, budget, approval handler and slots; `run_chain` itself is `safe` and its one
 *   argument is source text); `callTimeoutMs`, meant for one tool (a chain is bounded by its own
 *   `totalTimeoutMs`: by default 300 s against 60 s per call); the invoker's `TOOL_START`/`TOOL_END`
 *   hooks, which only the invoker can fire (the chain tool fires its own `CHAIN_START`/`CHAIN_END`
 *   and its calls' hooks).
 *
 * Provider-defined tools (a local shell answering the provider's `shell_call`) run here, with
 * effects like a local tool's: a closed session refuses them, each call counts against the
 * session's budget and is recorded in `session.trace`, every outcome; `handleCall` gets the
 * provider's call shape and is bounded by `callTimeoutMs`. Risk, approval and schema validation
 * are the invoker's and do not apply (the tool has no `risk` or `inputSchema`; the provider
 * defines the call).
 *
 * Failure texts are bounded as the invoker's, in the response and the record alike: a name or
 * id the caller gave is repeated up to `MAX_ECHOED_NAME_CHARS` (256) characters, a thrown
 * message up to `MAX_ERROR_MESSAGE_CHARS` (4096), and an `isError` result keeps a success's
 * size rules (`shapeResult`).
 *
 * Rounds: `tools()` and `forcedToolChoices()` describe the current round; every
 * `executeSelectedTools` ends a round. Forced tools restrict only the first round, so a forced
 * choice cannot loop forever.
 */
import {
  ChainRuntimeError,
  canonicalJson,
  describeThrown,
  isChainTool,
  isHostedTool,
  isProviderDefinedTool,
  type AnyTool,
  type InvocationResult,
  type ProviderDefinedTool,
  type Tool,
  type ToolCall,
} from "../kernel/index.ts";
import { checkMethods, checkOptionNames, describeKind, optionNames, refuseOption } from "../kernel/check-option-shape.ts";
import { cloneArguments } from "../invoker/clone-arguments.ts";
import { checkBudget } from "../invoker/gates/check-budget.ts";
import { MAX_ECHOED_NAME_CHARS } from "../invoker/gates/lookup-tool.ts";
import { executeWithTimeout } from "../invoker/gates/execute-with-timeout.ts";
import { digestArguments, normalizeArguments } from "../invoker/gates/normalize-arguments.ts";
import { shapeResult } from "../invoker/gates/shape-result.ts";
import { suggestNames } from "../kernel/suggest-names.ts";
import { clipText, MAX_ERROR_MESSAGE_CHARS } from "../kernel/bound-error-text.ts";
import { invocationFailure } from "../invoker/invocation-failure.ts";
import { sessionStateOf, type InvokerSession, type SessionState } from "../invoker/invoker-session.ts";
import type { ToolInvoker } from "../invoker/tool-invoker.ts";
import type { ToolCallResponse } from "./tool-call-response.ts";

/** Default of {@link ToolManagerOptions.maxCallsPerRound}. */
export const DEFAULT_MAX_CALLS_PER_ROUND = 10;

/** What the manager needs of a registry (`Toolbox` satisfies it). */
export interface ToolManagerToolbox {
  /** The tool of that name, if any. */
  get(name: string): AnyTool | undefined;
  /** Every tool the toolbox holds. */
  all(): Iterable<AnyTool>;
}

/** What a {@link ToolManager} is built from. */
export interface ToolManagerOptions {
  /** Every tool a turn may call, local, hosted and provider-defined (a `Toolbox`). */
  readonly toolbox: ToolManagerToolbox;
  /** Runs local tools (budget, approval, timeouts, shaping). */
  readonly invoker: ToolInvoker;
  /** Tools the admin enabled: a name list or a predicate. @defaultValue every tool */
  readonly enabled?: readonly string[] | ((name: string) => boolean);
  /** Tools never offered or run; wins over every other list. @defaultValue none */
  readonly disabled?: readonly string[];
  /** When any of these is available, only these are offered and run (e.g. deep research). @defaultValue none */
  readonly exclusive?: readonly string[];
  /** Tools the user picked: the first round offers (and forces) only these. @defaultValue none */
  readonly forced?: readonly string[];
  /** Calls run per round; later ones get an error response. @defaultValue 10 */
  readonly maxCallsPerRound?: number;
}

/** Options of {@link ToolManager.executeSelectedTools}. */
export interface ExecuteSelectedToolsOptions {
  /** The invoker session local calls count against. @defaultValue the manager's own session */
  readonly session?: InvokerSession;
  /** Cancels the round's calls. @defaultValue none */
  readonly signal?: AbortSignal;
}

/** A forced tool choice in the OpenAI shape. */
export interface ForcedToolChoice {
  readonly type: "function";
  readonly function: { readonly name: string };
}

/**
 * Selects, guards and runs the direct tool calls of a model turn (see the module comment).
 * Throws `ChainRuntimeError` `POLICY_INVALID` from the constructor when `maxCallsPerRound` is
 * not an integer >= 1; every per-call failure is a {@link ToolCallResponse}, never a throw.
 */
export class ToolManager implements AsyncDisposable {
  /** Calls run per round. */
  readonly maxCallsPerRound: number;
  readonly #toolbox: ToolManagerToolbox;
  readonly #invoker: ToolInvoker;
  readonly #enabled: ((name: string) => boolean) | undefined;
  readonly #disabled: ReadonlySet<string>;
  readonly #exclusive: ReadonlySet<string>;
  readonly #forced: ReadonlySet<string>;
  #session: InvokerSession | undefined;
  #round = 0;

  /**
   * @param options - see {@link ToolManagerOptions}.
   * @throws ChainRuntimeError `ARGUMENT_INVALID` for options that are not an object, an unknown
   * option, a `toolbox` or `invoker` without the methods the manager calls, or tool lists that
   * are not lists of names; `POLICY_INVALID` for `maxCallsPerRound` out of range.
   */
  constructor(options: ToolManagerOptions) {
    checkManagerOptions(options);
    const cap = options.maxCallsPerRound ?? DEFAULT_MAX_CALLS_PER_ROUND;
    if (!Number.isInteger(cap) || cap < 1) {
      throw new ChainRuntimeError("POLICY_INVALID", `maxCallsPerRound must be an integer >= 1; got ${String(cap)}.`, {
        details: { field: "maxCallsPerRound", value: cap },
      });
    }
    this.maxCallsPerRound = cap;
    this.#toolbox = options.toolbox;
    this.#invoker = options.invoker;
    const enabled = options.enabled;
    if (typeof enabled === "function") this.#enabled = enabled;
    else if (enabled !== undefined) {
      const names = new Set(enabled);
      this.#enabled = (name) => names.has(name);
    }
    this.#disabled = new Set(options.disabled ?? []);
    this.#exclusive = new Set(options.exclusive ?? []);
    this.#forced = new Set(options.forced ?? []);
  }

  /** The current round, from 0; each `executeSelectedTools` ends one. */
  get round(): number {
    return this.#round;
  }

  /** The invoker session the manager opened for itself (on first use). */
  get session(): InvokerSession {
    this.#session ??= this.#invoker.openSession();
    return this.#session;
  }

  /**
   * The tools the model may call this round: enabled and not disabled; only the exclusive ones
   * when any is available; in the first round only the forced ones when any is available.
   */
  tools(): AnyTool[] {
    let list: AnyTool[] = [];
    for (const tool of this.#toolbox.all()) {
      if (this.#disabled.has(tool.name)) continue;
      if (this.#enabled && !this.#isEnabledSafely(tool.name)) continue;
      list.push(tool);
    }
    if (this.#exclusive.size > 0) {
      const exclusive = list.filter((tool) => this.#exclusive.has(tool.name));
      if (exclusive.length > 0) list = exclusive;
    }
    if (this.#round === 0 && this.#forced.size > 0) {
      const forced = list.filter((tool) => this.#forced.has(tool.name));
      if (forced.length > 0) list = forced;
    }
    return list;
  }

  /** The forced tools of the first round as OpenAI tool choices; `[]` after it. */
  forcedToolChoices(): ForcedToolChoice[] {
    if (this.#round > 0 || this.#forced.size === 0) return [];
    return this.tools()
      .filter((tool) => this.#forced.has(tool.name))
      .map((tool) => ({ type: "function", function: { name: tool.name } }));
  }

  /** True when any of `calls` names a tool that takes control (hands the turn over). */
  doesATakeControl(calls: readonly ToolCall[]): boolean {
    return this.#takeControlNames(calls).length > 0;
  }

  /**
   * `calls` without repeats: two calls are the same when the names match and the arguments
   * are equal as canonical JSON (JSON-string arguments parsed first). The first is kept
   * ({@link ToolManager.executeSelectedTools} answers the others with its response).
   */
  filterDuplicateCalls(calls: readonly ToolCall[]): ToolCall[] {
    const seen = new Set<string>();
    const unique: ToolCall[] = [];
    for (const call of calls) {
      const key = dedupKey(call);
      if (key !== undefined) {
        if (seen.has(key)) continue;
        seen.add(key);
      }
      unique.push(call);
    }
    return unique;
  }

  /**
   * Runs the selected calls of one round and returns one response per call, in call order: a
   * duplicate (same name and canonical arguments as an earlier call) is not run again and gets
   * that call's response under its own id, so every tool-call id has a result (the very same
   * call sent twice under one id is answered once). Never throws: `calls` that is not an array
   * gets one `INVALID_ARGUMENTS` error response saying so, and nothing runs. Ends the round.
   */
  async executeSelectedTools(calls: readonly ToolCall[], options: ExecuteSelectedToolsOptions = {}): Promise<ToolCallResponse[]> {
    const available = new Set(this.tools().map((tool) => tool.name));
    try {
      if (!Array.isArray(calls)) return [notAnArrayResponse(calls)];
      // Array.from, not map: a hole in a sparse list is an entry too (a malformed call, answered).
      const all = Array.from(calls, asToolCall);
      const { ids, repeatOf, duplicateOf, answered } = planRound(all);
      const responses = new Map<number, ToolCallResponse | Promise<ToolCallResponse>>();
      const runnable = answered.slice(0, this.maxCallsPerRound);
      for (let k = runnable.length; k < answered.length; k++) {
        const i = answered[k] as number;
        responses.set(
          i,
          failureResponse(
            ids[i] as string,
            (all[i] as ToolCall).name,
            invocationFailure(
              "BUDGET_EXCEEDED",
              `Not executed: at most ${this.maxCallsPerRound} tool calls run per round (duplicates not counted) and this was call ${i + 1}, the ` +
                `${ordinal(k + 1)} distinct one. Call it again next round if it is still needed.`,
            ),
          ),
        );
      }
      const takeControl = runnable.length > 1 ? this.#takeControlNames(runnable.map((i) => all[i] as ToolCall)) : [];
      if (takeControl.length > 0) {
        for (const i of runnable) {
          const call = all[i] as ToolCall;
          responses.set(i, failureResponse(ids[i] as string, call.name, takeControlConflict(call.name, takeControl)));
        }
      } else {
        const session = options.session ?? this.session;
        for (const i of runnable) {
          const call = all[i] as ToolCall;
          const id = ids[i] as string;
          const first = repeatOf[i];
          responses.set(
            i,
            malformedCalls.has(call)
              ? failureResponse(id, call.name, invocationFailure("INVALID_ARGUMENTS", `Not executed: call ${i + 1} is not a readable tool call { name: string, arguments }.`))
              : first !== undefined
                ? failureResponse(id, call.name, repeatedIdRefusal(i, first, ids[first] as string))
                : this.#dispatch(call, id, available, session, options.signal),
          );
        }
      }
      const ordered: Promise<ToolCallResponse>[] = [];
      for (let i = 0; i < all.length; i++) {
        const id = ids[i];
        if (id === undefined) continue; // the same call again under the same id: answered once
        const original = duplicateOf[i];
        const response = Promise.resolve(responses.get(original ?? i) as ToolCallResponse | Promise<ToolCallResponse>);
        ordered.push(original === undefined ? response : response.then((answer) => ({ ...answer, id })));
      }
      return await Promise.all(ordered);
    } finally {
      this.#round++;
    }
  }

  /** Closes the manager's own session (unpinning its artifacts); a session passed in is left open. */
  async close(): Promise<void> {
    await this.#session?.close();
  }

  /** `await using manager = new ToolManager(...)` closes it. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Runs `call`, a snapshot made by {@link asToolCall}: its fields are plain data, read once. */
  async #dispatch(
    call: ToolCall,
    id: string,
    available: ReadonlySet<string>,
    session: InvokerSession,
    signal: AbortSignal | undefined,
  ): Promise<ToolCallResponse> {
    const name = call.name;
    try {
      const tool = this.#toolbox.get(name);
      if (tool === undefined || !available.has(name)) return failureResponse(id, name, this.#unavailable(name, tool, available));
      if (isProviderDefinedTool(tool)) return await this.#handleProviderCall(tool, call, id, session, signal);
      if (isChainTool(tool)) return await runChainCall(tool, name, call, id, session, signal);
      if (isHostedTool(tool)) {
        return {
          id,
          name,
          status: "skipped",
          content: `Tool "${name}" is run by the model provider, not here; its result arrives with the model's next turn.`,
        };
      }
      const result = await this.#invoker.invoke(call, { session, ctx: { callId: id, ...(signal ? { signal } : {}) } });
      return resultResponse(id, name, result);
    } catch (error) {
      return failureResponse(id, name, toolThrew(name, error));
    }
  }

  /** A provider-defined call: `handleCall` with the provider's call shape, bounded by `callTimeoutMs`, counted and recorded (see {@link runCounted}). */
  #handleProviderCall(
    tool: ProviderDefinedTool,
    call: ToolCall,
    id: string,
    session: InvokerSession,
    signal: AbortSignal | undefined,
  ): Promise<ToolCallResponse> {
    const state = stateOf(session);
    return runCounted(tool.name, call, id, state, async () => {
      const providerCall = { id, type: tool.callTypes[0] ?? tool.name, name: tool.name, arguments: parseArguments(call.arguments) };
      const runner: Tool<Record<string, unknown>, unknown> = {
        name: tool.name,
        description: tool.description,
        inputSchema: { type: "object" },
        execute: (_args, ctx) => tool.handleCall(providerCall, ctx),
      };
      return executeDirect(runner, tool.name, {}, id, state, signal, state.policy.callTimeoutMs);
    });
  }

  #unavailable(name: string, tool: AnyTool | undefined, available: ReadonlySet<string>): InvocationResult {
    if (tool !== undefined) {
      return invocationFailure("NOT_CALLABLE", `Tool "${name}" is not enabled for this turn. Use one of the tools offered.`);
    }
    const names = [...available];
    const close = suggestNames(name, names);
    const hint =
      close.length > 0
        ? ` Did you mean ${close.map((n) => `"${n}"`).join(", ")}?`
        : names.length > 0
          ? ` Available tools: ${names.slice(0, 10).map((n) => `"${n}"`).join(", ")}.`
          : "";
    return invocationFailure("UNKNOWN_TOOL", `Unknown tool "${clipText(name, MAX_ECHOED_NAME_CHARS)}".${hint}`);
  }

  #takeControlNames(calls: readonly ToolCall[]): string[] {
    const names: string[] = [];
    for (const call of calls) {
      const name = String(call?.name);
      const tool = this.#toolbox.get(name);
      if (tool && (tool as { takesControl?: unknown }).takesControl === true && !names.includes(name)) names.push(name);
    }
    return names;
  }

  #isEnabledSafely(name: string): boolean {
    try {
      return this.#enabled?.(name) !== false;
    } catch {
      return false;
    }
  }
}

/** Every field of {@link ToolManagerOptions}. */
const MANAGER_OPTION_NAMES = optionNames<ToolManagerOptions>({
  toolbox: true,
  invoker: true,
  enabled: true,
  disabled: true,
  exclusive: true,
  forced: true,
  maxCallsPerRound: true,
});

/** @throws ChainRuntimeError `ARGUMENT_INVALID` naming what is wrong with the constructor's options (see the constructor). */
function checkManagerOptions(options: ToolManagerOptions): void {
  const owner = "ToolManager";
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `new ToolManager() needs options ({ toolbox, invoker, ... }); got ${describeKind(options)}.`);
  }
  checkOptionNames(owner, options, MANAGER_OPTION_NAMES);
  checkMethods(owner, "toolbox", "a Toolbox", options.toolbox, ["get", "all"]);
  checkMethods(owner, "invoker", "a ToolInvoker", options.invoker, ["openSession", "invoke"]);
  if (options.enabled !== undefined && typeof options.enabled !== "function") checkNameList(owner, "enabled", options.enabled, "a list of tool names or a function (name) => boolean");
  for (const list of ["disabled", "exclusive", "forced"] as const) {
    if (options[list] !== undefined) checkNameList(owner, list, options[list], "a list of tool names");
  }
}

function checkNameList(owner: string, argument: string, value: unknown, expected: string): void {
  if (typeof value === "string" || typeof (value as Partial<Iterable<unknown>> | null)?.[Symbol.iterator] !== "function") {
    refuseOption(owner, argument, expected, `got ${describeKind(value)}`);
  }
  for (const name of value as Iterable<unknown>) {
    if (typeof name !== "string") refuseOption(owner, argument, expected, `it holds ${describeKind(name)}`);
  }
}

/** The state behind `session`; the manager only ever holds sessions its invoker opened. */
function stateOf(session: InvokerSession): SessionState {
  const state = sessionStateOf(session);
  if (state === undefined) throw new Error("the session is not an InvokerSession");
  return state;
}

/**
 * A call the manager runs itself (a direct `run_chain`, a provider-defined tool), with the
 * invoker's gates that make sense for it: a closed session → `CANCELLED`, the session's budget
 * (one call, counted as the invoker counts), then `body`; every outcome recorded in the
 * session's trace like a local call's.
 */
async function runCounted(
  name: string,
  call: ToolCall,
  id: string,
  state: SessionState,
  body: (normalized: ReturnType<typeof normalizeArguments>) => Promise<InvocationResult>,
): Promise<ToolCallResponse> {
  const seq = state.seq++;
  const startedAt = Date.now();
  const started = performance.now();
  const normalized = normalizeArguments(call.arguments);
  let result: InvocationResult;
  // Whether `body` ran: a record of a call that acted outranks a refusal's in a full trace.
  let ran = false;
  try {
    const refused = state.closed
      ? invocationFailure("CANCELLED", `The session was closed; the call of "${name}" did not run. Open a new session.`)
      : checkBudget(state);
    if (refused !== undefined) result = refused;
    else {
      ran = true;
      result = await body(normalized);
    }
  } catch (error) {
    result = toolThrew(name, error);
  }
  state.record({
    seq,
    callId: id,
    tool: name,
    argsDigest: digestArguments(call.arguments, normalized),
    status: result.status,
    startedAt,
    durationMs: Math.round((performance.now() - started) * 1000) / 1000,
    ...(result.status === "ok" ? {} : { error: result.text, code: result.code }),
  }, ran);
  return resultResponse(id, name, result);
}

/** A direct `run_chain` call: the chain tool's `execute` on object arguments, with no per-call timeout (the chain ends itself at its own `totalTimeoutMs`). */
function runChainCall(tool: AnyTool, name: string, call: ToolCall, id: string, session: InvokerSession, signal: AbortSignal | undefined): Promise<ToolCallResponse> {
  const state = stateOf(session);
  return runCounted(name, call, id, state, (normalized) =>
    normalized.ok ? executeDirect(tool as unknown as Tool<Record<string, unknown>, unknown>, name, normalized.args, id, state, signal, 0) : Promise.resolve(normalized.failure),
  );
}

/** Runs `tool` through the invoker's execution gate (`timeoutMs` 0: none) and shapes what it returns as the invoker does. */
async function executeDirect(
  tool: Tool<Record<string, unknown>, unknown>,
  name: string,
  args: Record<string, unknown>,
  id: string,
  state: SessionState,
  signal: AbortSignal | undefined,
  timeoutMs: number,
): Promise<InvocationResult> {
  const outcome = await executeWithTimeout({ tool, args, chainId: state.id, callId: id, timeoutMs, session: state, signal });
  switch (outcome.kind) {
    case "returned":
      return shapeResult(outcome.value, name, state);
    case "threw":
      return toolThrew(name, outcome.error);
    case "timeout":
      return invocationFailure("TIMEOUT", `Tool "${name}" did not finish within ${outcome.timeoutMs} ms (callTimeoutMs).`);
    case "cancelled":
      return invocationFailure("CANCELLED", `The call of "${name}" was cancelled.`);
  }
}

/** How {@link ToolManager.executeSelectedTools} answers each call of a round (indexes into the round's calls). */
interface RoundPlan {
  /** The response id of each call; `undefined` for the very same call sent again under the same id (answered once). */
  readonly ids: (string | undefined)[];
  /** For a call that repeats an earlier call's given id (with other arguments): that call's index. Refused, not run. */
  readonly repeatOf: (number | undefined)[];
  /** For a duplicate: the index of the call whose response it shares. Not run. */
  readonly duplicateOf: (number | undefined)[];
  /** The calls answered on their own (run or refused), in call order: every call but duplicates and folded repeats. */
  readonly answered: number[];
}

/**
 * The ids, duplicates and repeated ids of a round's calls, in one pass in call order (see "Ids"
 * and "Dedup" in the module comment). A call refused for its id is no call's original, so a
 * later copy of it under a fresh id runs.
 */
function planRound(all: readonly ToolCall[]): RoundPlan {
  const given = new Set<string>();
  for (const call of all) {
    if (call.id !== undefined) given.add(call.id);
  }
  const plan: RoundPlan = { ids: [], repeatOf: [], duplicateOf: [], answered: [] };
  const owner = new Map<string, number>();
  const keys: (string | undefined)[] = [];
  const originalOf = new Map<string, number>();
  for (let i = 0; i < all.length; i++) {
    const call = all[i] as ToolCall;
    const key = dedupKey(call);
    keys.push(key);
    const holder = call.id === undefined ? undefined : owner.get(call.id);
    if (holder !== undefined && key !== undefined && keys[holder] === key) {
      plan.ids.push(undefined); // the same call again under the same id: that id has its answer
      plan.repeatOf.push(undefined);
      plan.duplicateOf.push(undefined);
      continue;
    }
    let id = holder === undefined ? call.id : undefined;
    if (id === undefined) {
      id = `call_${i}`;
      for (let n = 1; given.has(id) || owner.has(id); n++) id = `call_${i}_${n}`;
    }
    owner.set(id, i);
    plan.ids.push(id);
    plan.repeatOf.push(holder);
    const original = holder === undefined && key !== undefined ? originalOf.get(key) : undefined;
    plan.duplicateOf.push(original);
    if (original !== undefined) continue;
    if (holder === undefined && key !== undefined) originalOf.set(key, i);
    plan.answered.push(i);
  }
  return plan;
}

/**
 * The one response to `calls` that is not an array: nothing runs. One tool call passed alone is
 * named, under its own id when it has one, with the fix (wrap it in an array).
 */
function notAnArrayResponse(calls: unknown): ToolCallResponse {
  let name: unknown;
  let id: unknown;
  let iterable = false;
  try {
    if (typeof calls === "object" && calls !== null) ({ name, id } = calls as { name?: unknown; id?: unknown });
    iterable = typeof (calls as Partial<Iterable<unknown>> | null | undefined)?.[Symbol.iterator] === "function" && typeof calls !== "string";
  } catch {
    // a getter or Proxy trap that throws: described by kind only
  }
  const got =
    typeof name === "string"
      ? `one tool call ("${clipText(name, MAX_ECHOED_NAME_CHARS)}"); wrap it in an array: executeSelectedTools([call])`
      : iterable
        ? "an iterable that is not an array; spread it: executeSelectedTools([...calls])"
        : describeKind(calls);
  return failureResponse(
    typeof id === "string" && id !== "" ? id : "call_0",
    typeof name === "string" ? name : "(not a tool call)",
    invocationFailure("INVALID_ARGUMENTS", `Not executed: executeSelectedTools() takes an array of tool calls ({ id, name, arguments }); got ${got}.`),
  );
}

/** The response of a call whose id an earlier call of the round already has. */
function repeatedIdRefusal(index: number, first: number, id: string): InvocationResult {
  return invocationFailure(
    "INVALID_ARGUMENTS",
    `Not executed: call ${index + 1} has the tool-call id "${clipText(id, MAX_ECHOED_NAME_CHARS)}", which call ${first + 1} of this turn already has, ` +
      "so its answer could not be told apart. Call the tool again if it is still needed.",
  );
}

/**
 * The `TOOL_ERROR` of a call whose run threw: the message cut at `MAX_ERROR_MESSAGE_CHARS` and
 * the name at `MAX_ECHOED_NAME_CHARS`, as the invoker cuts them (the text is also the record's).
 */
function toolThrew(name: string, error: unknown): InvocationResult {
  return invocationFailure(
    "TOOL_ERROR",
    `Tool "${clipText(name, MAX_ECHOED_NAME_CHARS)}" failed: ${clipText(describeThrown(error), MAX_ERROR_MESSAGE_CHARS)}`,
  );
}

/** The response of a call refused by the take-control guard. */
function takeControlConflict(name: string, takeControl: readonly string[]): InvocationResult {
  if (takeControl.includes(name)) {
    return invocationFailure(
      "NOT_CALLABLE",
      `Tool \`${name}\` hands its answer straight to the user and therefore must be called on its own. ` +
        "None of the tools in this batch were executed. " +
        `Recover by first calling the other tools, then calling \`${name}\` alone.`,
    );
  }
  const names = takeControl.map((n) => `\`${n}\``).join(", ");
  return invocationFailure(
    "NOT_CALLABLE",
    `Not executed because ${names} must be called on ${takeControl.length > 1 ? "their" : "its"} own. ` +
      "None of the tools in this batch were executed; call this tool again without it.",
  );
}

function resultResponse(id: string, name: string, result: InvocationResult): ToolCallResponse {
  if (result.status !== "ok") return failureResponse(id, name, result);
  let content = result.text;
  for (const file of result.files ?? []) {
    if (!content.includes(file.path)) content += `${content ? "\n" : ""}[file ${file.path} (${file.mimeType}, ${file.bytes} bytes)]`;
  }
  return { id, name, status: "ok", content, result };
}

function failureResponse(id: string, name: string, result: InvocationResult): ToolCallResponse {
  return { id, name, status: result.status, content: result.text, result, error: result.text };
}

/** JSON-string arguments parsed (an unparseable string is kept as it is). */
function parseArguments(raw: unknown): unknown {
  if (typeof raw !== "string") return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** `name \0 canonical args`, or `undefined` when the arguments cannot be compared (never deduplicated). */
function dedupKey(call: ToolCall): string | undefined {
  // Each gets its own answer: an entry that is not a call, and a call its caller already refused
  // (`rejection`: the same name and arguments may come again without one, and run).
  if (malformedCalls.has(call) || call.rejection !== undefined) return undefined;
  try {
    const args = parseArguments(call.arguments);
    if (typeof args === "object" && args !== null) {
      const copy = cloneArguments(args);
      if (!copy.ok) return undefined;
      return `${String(call.name)}\u0000${canonicalJson(copy.value)}`;
    }
    return `${String(call.name)}\u0000${canonicalJson(args)}`;
  } catch {
    return undefined;
  }
}

/** `1st`, `2nd`, `3rd`, `4th`, ... `11th`, `12th`, `13th`, `21st`. */
function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

/** Stand-ins for entries of a call list that are not tool calls (answered INVALID_ARGUMENTS, never run). */
const malformedCalls = new WeakSet<ToolCall>();

/**
 * A snapshot of `entry`: a plain object of its `id` (kept when a non-empty string), `name`,
 * `arguments` and `rejection`, each read once. What the manager checks (the name against the
 * tools offered, the id) is then what the invoker runs and labels, whatever a getter or proxy
 * would answer next. An entry that is not a tool call (not an object with a string `name`, a
 * hole, a field whose read throws, the id included, as the invoker refuses it) gets a stand-in.
 */
function asToolCall(entry: unknown): ToolCall {
  let id: unknown;
  if (typeof entry === "object" && entry !== null) {
    try {
      const call = entry as ToolCall;
      id = call.id;
      const name: unknown = call.name;
      if (typeof name === "string") {
        const args: unknown = call.arguments;
        const rejection = call.rejection;
        return {
          ...(typeof id === "string" && id !== "" ? { id } : {}),
          name,
          arguments: args,
          ...(rejection !== undefined ? { rejection } : {}),
        };
      }
    } catch {
      // a getter that throws: not a tool call either
    }
  }
  const standIn: ToolCall = { ...(typeof id === "string" && id !== "" ? { id } : {}), name: "(not a tool call)", arguments: {} };
  malformedCalls.add(standIn);
  return standIn;
}

/**
 * `replay(trace, { mode })`: re-runs a traced chain's script with its seed and clock, its tool
 * calls answered from the trace by a {@link ReplayRouter}.
 *
 * - `strict` checks that the script still does what the trace says: same calls (tool and
 *   arguments, matched by program-order call id) and the same outcome (status, return value,
 *   error). It needs no tool implementations: `tools.*` is installed from the names the trace
 *   knows, and every call is answered from the trace or stops the run: as a divergence, or where
 *   the recording ends (a call in doubt, or past the end of a trace with no outcome: `partialAt`,
 *   and the outcome is not compared). Nothing is written anywhere.
 * - `resume` continues a chain that died or was suspended: completed calls are answered from the
 *   trace (never run again), the rest run live through a real invoker, and everything is
 *   written to a NEW trace whose `parentChainId` is the old chain. In-doubt calls are never
 *   re-run unless the tool is safe or the caller decides (`inDoubt`). A trace already resumed
 *   (a trace in the store names it as parent) is refused, since the calls its resume ran live
 *   are not in it; resume the newest trace instead, which answers from the whole line of
 *   chains it resumes (a resume cut short holds only the calls it reached: see
 *   `inheritedCalls`). Before anything runs live, the resume
 *   claims the trace in the store (`TraceStore.claimResume`), so two resumes started at the
 *   same moment, in one process or two, cannot both run its remaining calls.
 * @module
 */
import { randomUUID } from "node:crypto";
import { NEVER_ANSWERED_DEADLOCK_MESSAGE } from "../../sandbox/sandbox-driver.ts";
import { checkChainTrace } from "../trace/check-chain-trace.ts";
import {
  compareToolNames,
  ChainRuntimeError,
  isChainRuntimeError,
  knownPolicyFields,
  overrideChainPolicy,
  recordedChainPolicy,
  sha256Hex,
  type AnyTool,
  type ApprovalDecision,
  type ApprovalHandler,
  type BlobStore,
  type ChainError,
  type ChainPolicy,
  type Hooks,
  type ProgressListener,
  type ToolRisk,
} from "../kernel/index.ts";
import { APPROVAL_DECISIONS, isApprovalDecision } from "../approval/check-approval-args.ts";
import { BLOB_STORE_METHODS, checkHooks, checkMethods, checkOptionNames, describeKind, isAbortSignalLike, optionNames, refuseOption, refuseToolsBesideToolbox } from "../kernel/check-option-shape.ts";
import { Toolbox } from "../toolbox/toolbox.ts";
import type { ChainTrace, TraceCallEntry } from "../trace/chain-trace.ts";
import { fingerprintToolbox } from "../trace/fingerprint-toolbox.ts";
import { isTraceChainId, type TraceStore } from "../trace/trace-store.ts";
import type { DriverChoice } from "./create-driver.ts";
import { describeJsonDiff } from "./describe-json-diff.ts";
import {
  isInDoubtOnResume,
  recordingEndsEarly,
  ReplayRouter,
  suspendedCallIds,
  type InDoubtCall,
  type InDoubtDecision,
  type InheritedCall,
  type ReplayDivergence,
} from "./replay-router.ts";
import { runWithPlan, ToolChainTool, type ChainRunOptions } from "./tool-chain-tool.ts";
import type { TracedChainRunResult } from "./traced-chain-run-result.ts";

/** Options of {@link replay}. */
export interface ReplayOptions {
  /** `strict`: check the script against the trace, offline. `resume`: continue the chain live. */
  readonly mode: "strict" | "resume";
  /** The script to replay instead of the recorded one (to check an edited script against a trace). @defaultValue `trace.source` */
  readonly source?: string;
  /** Resume: the tools calls not answered from the trace run against. Required for resume. */
  readonly toolbox?: Toolbox;
  /** Resume: shorthand for `toolbox: new Toolbox(tools)`. */
  readonly tools?: Iterable<AnyTool>;
  /**
   * Resume: where the new trace goes, and where the resume is claimed so that a second resume of
   * the same trace is refused (the calls it would run again ran once). Required for resume: use
   * the store the original trace came from; for a trace file, a `FileTraceStore` on its folder.
   * A new `MemoryTraceStore` stops a second resume only through that same store object.
   */
  readonly traceStore?: TraceStore;
  /**
   * Resume: what to do with each in-doubt call (started, never finished), by call id. Calls
   * without a decision re-run when their tool is `safe`, and otherwise get an `IN_DOUBT` error.
   * @defaultValue `{}`
   */
  readonly inDoubt?: Readonly<Record<string, InDoubtDecision>>;
  /** Resume: approval decisions for calls the chain was suspended on, by call id (see `resumeChain`). */
  readonly approvals?: Readonly<Record<string, ApprovalDecision>>;
  /** Resume: approves later calls that need it. */
  readonly approvalHandler?: ApprovalHandler;
  /** Resume: `"suspend"` suspends again on the next call that needs approval. @defaultValue `"wait"` */
  readonly approvalMode?: "wait" | "suspend";
  /** Resume: the blob store the original run used (artifact refs in recorded results point there). */
  readonly blobStore?: BlobStore;
  /** Resume: observers of the live calls. */
  readonly hooks?: Hooks;
  /** Overrides of the recorded policy. @defaultValue the trace's policy */
  readonly policy?: Partial<ChainPolicy>;
  /** The sandbox. @defaultValue `ToolChainTool`'s default */
  readonly driver?: DriverChoice;
  /** Resume: the new chain's id. @defaultValue random */
  readonly chainId?: string;
  /**
   * Resume: run even when the store shows this trace was already resumed, or another resume
   * holds its claim (see `TraceStore.claimResume`); a forced resume records no claim.
   * @defaultValue false
   */
  readonly force?: boolean;
  /** Aborting cancels the replayed chain: its run ends `cancelled` and pending calls' signals fire. */
  readonly signal?: AbortSignal;
  /** Progress events of the replayed chain (as `ToolChainTool.run`'s `onProgress`). */
  readonly onProgress?: ProgressListener;
}

/** What {@link replay} found. */
export interface ReplayReport {
  /** The mode the replay ran in (`ReplayOptions.mode`). */
  readonly mode: "strict" | "resume";
  /** True when no divergence was found (strict: same calls and outcome; resume: recorded calls matched). */
  readonly identical: boolean;
  /** The first divergence, when there is one. */
  readonly divergence?: ReplayDivergence;
  /**
   * Strict: the recording ends at this call, and the replay stopped there without comparing the
   * outcome. Either the call is in doubt (started, never finished: a crash, a suspension), or the
   * trace has no outcome and ends before it (the chain died between calls).
   */
  readonly partialAt?: string;
  /** The chain the trace recorded. */
  readonly sourceChainId: string;
  /** The replayed run (resume: the new chain, traced with `parentChainId = sourceChainId`). */
  readonly run: TracedChainRunResult;
  /** Calls answered from the trace. */
  readonly replayedCalls: readonly string[];
  /** Calls that ran live (resume). */
  readonly liveCalls: readonly string[];
  /** In-doubt calls met, and how each was settled (resume). */
  readonly inDoubt: readonly InDoubtCall[];
  /** Resume: the live toolbox differs from the recorded one (tools added, removed or changed). */
  readonly toolboxChanged: boolean;
}

/**
 * Replays `trace` (see the module comment). Never throws for what the script does; divergences
 * are in the report.
 * @throws ChainRuntimeError `TRACE_INVALID` for a trace that is not one, or whose format
 * `version` this reader does not know (as loading it from a file would); `REPLAY_FAILED` for a
 * trace the store shows was already resumed or is being resumed (unless `force`);
 * `ARGUMENT_INVALID` for an unknown option, an unknown mode, a resume without tools or without a
 * `traceStore`, an option
 * whose value cannot be what {@link ReplayOptions} says (`details.argument` names it: a `source`
 * that is not a string, a `toolbox` that is not a `Toolbox`, ...), in either mode, and for an `inDoubt` or `approvals`
 * decision that is not one, or that names no in-doubt (suspended) call of the trace (then
 * `details.reason` says why and `details.known` lists the calls that could be decided).
 */
export async function replay(trace: ChainTrace, options: ReplayOptions): Promise<ReplayReport> {
  checkChainTrace(trace, "replay()");
  if (typeof options !== "object" || options === null) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", 'replay() needs options: { mode: "strict" } or { mode: "resume", tools or toolbox, ... }.');
  }
  checkOptionNames("replay()", options, REPLAY_OPTION_NAMES);
  const { mode } = options;
  if (mode !== "strict" && mode !== "resume") {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `replay() options.mode must be "strict" or "resume"; got ${describeKind(mode)}.`, { details: { argument: "mode" } });
  }
  checkReplayOptions(options);
  return mode === "strict" ? replayStrict(trace, options) : replayResume(trace, options);
}

/** Every field of {@link ReplayOptions}. */
const REPLAY_OPTION_NAMES = optionNames<ReplayOptions>({
  mode: true,
  source: true,
  toolbox: true,
  tools: true,
  traceStore: true,
  inDoubt: true,
  approvals: true,
  approvalHandler: true,
  approvalMode: true,
  blobStore: true,
  hooks: true,
  policy: true,
  driver: true,
  chainId: true,
  force: true,
  signal: true,
  onProgress: true,
});

/** The run options both modes share: the trace's seed and clock, the caller's signal and progress listener. */
function replayRunOptions(trace: ChainTrace, options: ReplayOptions): ChainRunOptions {
  return {
    seed: trace.seed,
    clockStart: trace.clockStart,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  };
}

async function replayStrict(trace: ChainTrace, options: ReplayOptions): Promise<ReplayReport> {
  const router = new ReplayRouter(trace, { mode: "strict" });
  const chain = new ToolChainTool({
    toolbox: new Toolbox([]),
    policy: overrideChainPolicy(recordedChainPolicy(knownPolicyFields(trace.policy)), options.policy),
    poolSize: 1,
    ...(options.driver === undefined ? {} : { driver: options.driver }),
  });
  let run: TracedChainRunResult;
  try {
    run = await runWithPlan(
      chain,
      options.source ?? trace.source,
      replayRunOptions(trace, options),
      { toolNames: traceToolNames(trace), router, ...clockReplayOf(trace) },
    );
  } finally {
    await chain.close();
  }
  let divergence = router.divergence;
  if (divergence === undefined && router.partialAt === undefined) {
    divergence = withRunFailure(router.findMissingCall(), run) ?? compareOutcome(trace, run);
  }
  // Left waiting with calls out that the recording never answered, most likely on them (an edited
  // script that awaits them): isochain's drivers end such a run at once, in a DeadlockError that
  // says calls got no answer (see neverAnswered); a driver from elsewhere holds them until its
  // time limit. Said, rather than only that the chain deadlocked or timed out.
  const stuck = run.error?.message === NEVER_ANSWERED_DEADLOCK_MESSAGE || run.error?.name === "TimeoutError";
  if (divergence !== undefined && stuck && router.unanswered.length > 0) {
    const calls = router.unanswered.map(({ callId, tool }) => `${callId} (tools.${tool})`).join(", ");
    const [those, it] = router.unanswered.length === 1 ? ["that call", "it"] : ["those calls", "them"];
    divergence = {
      ...divergence,
      message:
        `${divergence.message}\nThe replayed script was left waiting with ${calls} out, which the recorded chain never answered: it returned while ${those} still ran. ` +
        `A strict replay has no answer to give; if the script awaits ${it}, replay the recorded script, or resume the trace to run ${it} live.`,
    };
  }
  return {
    mode: "strict",
    identical: divergence === undefined,
    ...(divergence ? { divergence } : {}),
    ...(router.partialAt === undefined ? {} : { partialAt: router.partialAt }),
    sourceChainId: trace.chainId,
    run,
    replayedCalls: router.replayed,
    liveCalls: [],
    inDoubt: [],
    toolboxChanged: false,
  };
}

async function replayResume(trace: ChainTrace, options: ReplayOptions): Promise<ReplayReport> {
  if (!options.toolbox && !options.tools) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", "replay(trace, { mode: \"resume\" }) needs the tools (toolbox or tools): calls the trace lacks run live.", {
      details: { argument: "tools" },
    });
  }
  const traceStore = options.traceStore;
  if (traceStore === undefined) {
    // Without it nothing records the resume, and each later one would run the same calls again.
    throw new ChainRuntimeError(
      "ARGUMENT_INVALID",
      'replay(trace, { mode: "resume" }) needs the traceStore the trace came from: the resume is claimed there, so a second resume ' +
        "of the same trace is refused instead of running its calls again. For a trace from a file, pass a FileTraceStore on that file's folder " +
        "(as the CLI does), which keeps the claim beside it; traceStore: new MemoryTraceStore() stops a second resume only in this process.",
      { details: { argument: "traceStore" } },
    );
  }
  const inherited = await inheritedCalls(trace, traceStore, options.force === true);
  checkDecisions(trace, options, inherited);
  const toolbox = options.toolbox ?? new Toolbox(options.tools ?? []);
  if (options.chainId !== undefined) await refuseTakenChainId(traceStore, trace.chainId, options.chainId);
  if (!options.force) {
    await refuseIfResumed(traceStore, trace.chainId);
    await refuseIfRunningOrStale(traceStore, trace);
  }
  const risks = new Map<string, ToolRisk>(toolbox.callable().map((tool) => [tool.name, tool.risk ?? "safe"]));
  const router = new ReplayRouter(trace, {
    mode: "resume",
    ...(options.inDoubt ? { inDoubt: options.inDoubt } : {}),
    ...(options.approvals ? { approvals: options.approvals } : {}),
    riskOf: (tool) => risks.get(tool),
    ...(inherited ? { inherited } : {}),
  });
  const approvalMode = options.approvalMode ?? "wait";
  // A resumed approval decision reaches its call through the tool's approval handler, so one must exist.
  const needsHandler = options.approvals !== undefined && Object.keys(options.approvals).length > 0 && approvalMode === "wait";
  const approvalHandler = options.approvalHandler ?? (needsHandler ? DENY_ALL : undefined);
  const chain = new ToolChainTool({
    toolbox,
    policy: overrideChainPolicy(recordedChainPolicy(knownPolicyFields(trace.policy)), options.policy),
    traceStore,
    approvalMode,
    poolSize: 1,
    ...(approvalHandler ? { approvalHandler } : {}),
    ...(options.blobStore ? { blobStore: options.blobStore } : {}),
    ...(options.hooks ? { hooks: options.hooks } : {}),
    ...(options.driver === undefined ? {} : { driver: options.driver }),
  });
  const toolNames = [...new Set([...traceToolNames(trace), ...toolbox.callable().map((tool) => tool.name)])].sort(compareToolNames);
  const chainId = options.chainId ?? randomUUID();
  let run: TracedChainRunResult;
  try {
    // The last step before anything runs live: of two resumes of this trace, only one gets past it.
    if (!options.force) await claimResume(traceStore, trace.chainId, chainId);
    run = await runWithPlan(
      chain,
      options.source ?? trace.source,
      { ...replayRunOptions(trace, options), chainId },
      { toolNames, router, parentChainId: trace.chainId, ...clockReplayOf(trace), ...liveClockOf(trace) },
    );
  } finally {
    await chain.close();
  }
  return {
    mode: "resume",
    identical: router.divergence === undefined,
    ...(router.divergence ? { divergence: router.divergence } : {}),
    sourceChainId: trace.chainId,
    run,
    replayedCalls: router.replayed,
    liveCalls: router.live,
    inDoubt: router.inDoubt,
    toolboxChanged: fingerprintToolbox(toolbox.callable()).digest !== trace.toolbox.digest,
  };
}

/**
 * Throws `ARGUMENT_INVALID` (`details.argument` names the option) for the first option whose
 * value cannot be what {@link ReplayOptions} says. Checked in both modes, options a mode does not
 * read included: a wrong value is a mistake either way, and found here it is named, instead of
 * surfacing as a `TypeError` from inside a resume, or as a replay of something else (a `source`
 * that is not a string replays as a script that does not compile). `mode` is checked apart;
 * `inDoubt` and `approvals` by {@link checkDecisions}; `driver` and the `policy` fields by
 * `ToolChainTool`.
 */
function checkReplayOptions(options: ReplayOptions): void {
  const owner = "replay()";
  const refuse = (argument: string, expected: string, value: unknown, hint = ""): never => refuseOption(owner, argument, expected, `got ${describeKind(value)}${hint}`);
  const { source, toolbox, tools, traceStore, approvalHandler, approvalMode, blobStore, hooks, policy, chainId, force, signal, onProgress } = options;
  if (source !== undefined && typeof source !== "string") refuse("source", "a string (the script to replay; leave it out for the recorded one)", source);
  if (toolbox !== undefined && !(toolbox instanceof Toolbox) && typeof (toolbox as Partial<Toolbox> | null)?.callable !== "function") {
    refuse("toolbox", "a Toolbox", toolbox, "; wrap the tools in one (toolbox: new Toolbox([...])) or pass them as tools: [...]");
  }
  if (tools !== undefined && !isIterableObject(tools)) refuse("tools", "an array of tools", tools);
  refuseToolsBesideToolbox(owner, options);
  if (traceStore !== undefined) checkMethods(owner, "traceStore", "a TraceStore, e.g. new FileTraceStore({ dir })", traceStore, ["append", "load", "list"]);
  if (blobStore !== undefined) checkMethods(owner, "blobStore", "a BlobStore, e.g. the one the original run used", blobStore, BLOB_STORE_METHODS);
  if (approvalHandler !== undefined) checkMethods(owner, "approvalHandler", "an ApprovalHandler", approvalHandler, ["request"]);
  if (approvalMode !== undefined && approvalMode !== "wait" && approvalMode !== "suspend") refuse("approvalMode", '"wait" or "suspend"', approvalMode);
  if (hooks !== undefined) checkHooks(owner, hooks);
  if (policy !== undefined && (typeof policy !== "object" || policy === null || Array.isArray(policy))) {
    refuse("policy", "an object of ChainPolicy fields, e.g. { callTimeoutMs: 5000 }", policy);
  }
  if (chainId !== undefined && !isTraceChainId(chainId)) refuse("chainId", 'an id of 1 to 128 letters, digits, "_" or "-"', chainId);
  if (force !== undefined && typeof force !== "boolean") refuse("force", "true or false", force);
  if (signal !== undefined && !isAbortSignalLike(signal)) refuse("signal", "an AbortSignal", signal);
  if (onProgress !== undefined && typeof onProgress !== "function") refuse("onProgress", "a function", onProgress);
}

function isIterableObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && typeof (value as { [Symbol.iterator]?: unknown })[Symbol.iterator] === "function";
}

/** Longest script error message a divergence quotes, in characters. */
const MAX_QUOTED_ERROR_CHARS = 300;

/**
 * `divergence` (a missing call) with the replayed script's failure appended, when it failed: a
 * script that stopped on a compile error or a throw never made the calls after it, and the
 * error is why.
 */
function withRunFailure(divergence: ReplayDivergence | undefined, run: TracedChainRunResult): ReplayDivergence | undefined {
  if (divergence === undefined || run.status === "ok" || run.error === undefined) return divergence;
  const [summary = "", ...rest] = divergence.message.split("\n");
  const message = `${summary.replace(/\.$/, "")}: it ${describeRunFailure(run.error)}`;
  return { ...divergence, message: [message, ...rest].join("\n") };
}

/** `failed first (runtime error at 2:10) with TypeError: x is undefined.`, on one bounded line. */
function describeRunFailure(error: ChainError): string {
  const phase = error.phase === "compile" ? "compile error" : error.phase === "runtime" ? "runtime error" : "limit";
  const at = error.line === undefined ? "" : ` at ${error.line}${error.column === undefined ? "" : `:${error.column}`}`;
  const name = oneLine(error.name, 60) || "Error";
  const text = oneLine(error.message, MAX_QUOTED_ERROR_CHARS);
  return `failed first (${phase}${at}) with ${name}${text === "" ? "" : `: ${text}`}${/[.!?…]$/.test(text) ? "" : "."}`;
}

/** `text` with its whitespace runs (newlines too) as single spaces, cut to `maxChars` with an ellipsis. */
function oneLine(text: string, maxChars: number): string {
  const flat = String(text).replace(/\s+/g, " ").trim();
  return flat.length > maxChars ? `${flat.slice(0, maxChars - 1)}…` : flat;
}

const DENY_ALL: ApprovalHandler = { request: async () => "denied" };

/** How far a run's clock may start from the time its trace was created and still count as real time, ms. */
const REAL_CLOCK_SLACK_MS = 60_000;

/**
 * A resume's `clockLiveAt`: once the recorded readings run out, a chain that ran on real time
 * (its clock started when it did: no `clockStart` was chosen) reads on from the time of the
 * resume, not the old run's (a call made live after a late approval carries the time it runs).
 * A chain run on a clock of its caller's choosing (a fixed day, for a reproducible run) keeps it.
 */
function liveClockOf(trace: ChainTrace): { clockLiveAt?: number } {
  return Math.abs(trace.clockStart - trace.createdAt) <= REAL_CLOCK_SLACK_MS ? { clockLiveAt: Date.now() } : {};
}

/** The trace's clock readings as a run plan's `clockReplay`: the replayed script reads the same times. */
function clockReplayOf(trace: ChainTrace): { clockReplay?: readonly number[] } {
  return trace.clockReadings === undefined ? {} : { clockReplay: trace.clockReadings };
}

const IN_DOUBT_DECISIONS: readonly InDoubtDecision[] = ["assume-done", "re-execute"];

/**
 * Throws `ARGUMENT_INVALID` unless every `inDoubt` decision is one and names an in-doubt call of
 * `trace`, and every `approvals` decision is one and names a call the chain was suspended on: a
 * decision the resume would never read must not look as if it had been taken.
 */
function checkDecisions(trace: ChainTrace, options: ReplayOptions, inherited: ReadonlyMap<string, InheritedCall> | undefined): void {
  const suspendedIds = new Set(suspendedCallIds(trace));
  const inDoubtIds = new Set<string>();
  for (const call of trace.calls) if (!inherited?.has(call.callId) && isInDoubtOnResume(call)) inDoubtIds.add(call.callId);
  for (const [callId, { entry, suspended }] of inherited ?? []) {
    if (suspended) suspendedIds.add(callId);
    else if (isInDoubtOnResume(entry)) inDoubtIds.add(callId);
  }
  // A call suspended for approval never ran: it is decided by an approval, and an in-doubt
  // decision on it would be taken and never read (the resume asks its approval, whatever it says).
  for (const callId of suspendedIds) inDoubtIds.delete(callId);
  const check = (
    field: "inDoubt" | "approvals",
    valid: (value: unknown) => boolean,
    allowed: string,
    calls: ReadonlySet<string>,
    [what, whats]: readonly [string, string],
    hint = "",
  ): void => {
    const decisions: unknown = options[field];
    if (decisions === undefined) return;
    if (typeof decisions !== "object" || decisions === null || Array.isArray(decisions)) {
      throw new ChainRuntimeError("ARGUMENT_INVALID", `replay() ${field} must be an object of decisions by call id, e.g. { c1: ${allowed.split(" or ")[0] ?? ""} }.`, {
        details: { argument: field },
      });
    }
    for (const [callId, decision] of Object.entries(decisions)) {
      if (!valid(decision)) {
        throw new ChainRuntimeError("ARGUMENT_INVALID", `replay() ${field}.${callId} must be ${allowed}; got ${JSON.stringify(decision) ?? String(decision)}.`, {
          details: { argument: `${field}.${callId}` },
        });
      }
      if (!calls.has(callId)) {
        const known = [...calls].join(", ");
        const reason =
          field === "inDoubt" && suspendedIds.has(callId)
            ? `${callId} of chain ${trace.chainId} is suspended waiting for approval (it never ran), not in doubt: decide it with approvals (--decision on the CLI).`
            : `chain ${trace.chainId} has no ${what} ${callId}; ${known === "" ? "it has none" : `${calls.size === 1 ? `its ${what} is` : `its ${whats} are`} ${known}`}${hint}.`;
        throw new ChainRuntimeError("ARGUMENT_INVALID", `replay() ${field}.${callId}: ${reason}`, {
          details: { argument: `${field}.${callId}`, reason, known: [...calls] },
        });
      }
    }
  };
  check("inDoubt", (value) => IN_DOUBT_DECISIONS.includes(value as InDoubtDecision), quoteChoices(IN_DOUBT_DECISIONS), inDoubtIds, ["in-doubt call", "in-doubt calls"]);
  check(
    "approvals",
    isApprovalDecision,
    quoteChoices(APPROVAL_DECISIONS),
    suspendedIds,
    ["call suspended for approval", "calls suspended for approval"],
    " (approvals are keyed by call id, the request's callId, not its id)",
  );
}

/** `"a", "b" or "c"`. */
function quoteChoices(choices: readonly string[]): string {
  const quoted = choices.map((choice) => JSON.stringify(choice));
  return quoted.length < 2 ? (quoted[0] ?? "") : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1) ?? ""}`;
}

/** Most chains in a line of resumes {@link inheritedCalls} walks: far past any real line, short of a loop. */
const MAX_RESUME_ANCESTORS = 1000;

/**
 * The calls of the chains `trace` resumes (its parent, the parent's parent, ...) that a resume of
 * it answers by (see `InheritedCall`): each call the trace lacks, from the nearest chain that
 * holds it, and each call the trace holds in doubt that such a chain completed with the same
 * tool and arguments. A resume that died, or stopped at a divergence, before answering every
 * completed call of its parent holds only the calls it reached; without these, a resume of it
 * would run the others live again (the payment its parent made, made twice).
 * @throws ChainRuntimeError `REPLAY_FAILED` when a chain of the line is not in `store` (its calls
 * cannot be known), unless `force`.
 */
async function inheritedCalls(trace: ChainTrace, store: TraceStore, force: boolean): Promise<ReadonlyMap<string, InheritedCall> | undefined> {
  if (trace.parentChainId === undefined) return undefined;
  const own = new Map(trace.calls.map((call) => [call.callId, call]));
  const inherited = new Map<string, InheritedCall>();
  const seen = new Set([trace.chainId]);
  let child = trace;
  for (let parentId: string | undefined = trace.parentChainId; parentId !== undefined && !seen.has(parentId) && seen.size <= MAX_RESUME_ANCESTORS; parentId = child.parentChainId) {
    seen.add(parentId);
    let parent: ChainTrace;
    try {
      parent = await store.load(parentId);
    } catch (error) {
      if (force) break;
      throw new ChainRuntimeError(
        "REPLAY_FAILED",
        `Chain ${trace.chainId} resumes chain ${parentId}, whose trace is not in the store (${isChainRuntimeError(error) ? error.code : "unreadable"}): ` +
          `the calls it completed cannot be known, and a resume could run them again. Resume with the store that holds it (--store on the CLI), or force it (force: true, or --force on the CLI).`,
        { details: { chainId: trace.chainId, parentChainId: parentId } },
      );
    }
    const suspended = suspendedCallIds(parent);
    for (const entry of parent.calls) {
      if (inherited.has(entry.callId)) continue;
      const mine = own.get(entry.callId);
      if (mine === undefined || (isInDoubtOnResume(mine) && !isInDoubtOnResume(entry) && sameCall(mine, entry))) {
        inherited.set(entry.callId, { entry, chainId: parent.chainId, suspended: suspended.has(entry.callId) });
      }
    }
    child = parent;
  }
  return inherited.size > 0 ? inherited : undefined;
}

function sameCall(a: TraceCallEntry, b: TraceCallEntry): boolean {
  return a.tool === b.tool && a.argsDigest === b.argsDigest;
}

/** Every tool name the trace knows, in the order a run installs them: its toolbox fingerprint and the tools its calls named. */
function traceToolNames(trace: ChainTrace): string[] {
  return [...new Set([...trace.toolbox.tools.map((tool) => tool.name), ...trace.calls.map((call) => call.tool)])].sort(compareToolNames);
}

/** @throws ChainRuntimeError `REPLAY_FAILED` when a trace in `store` names `chainId` as its parent. */
async function refuseIfResumed(store: TraceStore, chainId: string): Promise<void> {
  const child = (await store.list()).find((summary) => summary.parentChainId === chainId);
  if (child) {
    throw new ChainRuntimeError(
      "REPLAY_FAILED",
      `Chain ${chainId} was already resumed as chain ${child.chainId}: resuming it again could repeat the calls that resume ran. ` +
        `Resume ${child.chainId} instead (or force it: force: true, or --force on the CLI).`,
      { details: { chainId, resumedAs: child.chainId } },
    );
  }
}

/**
 * Refuses to resume a chain that is still running, or a copy of its trace older than the store's.
 * A chain whose run is alive would go on making the calls the resume is about to run live (the
 * same email sent twice); a copy loaded while it ran lacks calls the run made since, which the
 * resume would repeat. The writer ends its lease only after its `chain-end` is stored, so once
 * no live writer is found, the store's trace is final.
 * @throws ChainRuntimeError `REPLAY_FAILED`.
 */
async function refuseIfRunningOrStale(store: TraceStore, trace: ChainTrace): Promise<void> {
  const { chainId } = trace;
  const force = "force: true, or --force on the CLI";
  const writer = trace.outcome === undefined && typeof store.liveWriter === "function" ? await store.liveWriter(chainId) : undefined;
  if (writer !== undefined) {
    throw new ChainRuntimeError(
      "REPLAY_FAILED",
      `Chain ${chainId} is still running (${writer} is writing its trace): resuming it now would run again the calls it is about to make. ` +
        `Wait for it to end, then resume its trace; if that process is gone or no longer runs the chain, force it (${force}).`,
      { details: { chainId, writer } },
    );
  }
  // An ended chain's log is final (nothing is appended after chain-end): only a trace without
  // an outcome can be behind the store's.
  if (trace.outcome !== undefined) return;
  const stored = await store.load(chainId).catch(() => undefined);
  if (stored === undefined || !isBehind(trace, stored)) return;
  throw new ChainRuntimeError(
    "REPLAY_FAILED",
    `The trace of chain ${chainId} given to resume is older than the one in the store (${describeProgress(trace)} against ${describeProgress(stored)}): ` +
      `the run went on after it was loaded, and resuming the old copy would repeat what it did since. Load it again from the store and resume that (or ${force}).`,
    { details: { chainId } },
  );
}

/** True when `stored` records more of the run than `given`: more calls, calls further along, or an outcome. */
function isBehind(given: ChainTrace, stored: ChainTrace): boolean {
  if (stored.calls.length !== given.calls.length || (stored.outcome === undefined) !== (given.outcome === undefined)) return true;
  const states = new Map(given.calls.map((call) => [call.callId, call.state]));
  return stored.calls.some((call) => states.get(call.callId) !== call.state);
}

function describeProgress(trace: ChainTrace): string {
  const done = trace.calls.filter((call) => call.state === "completed").length;
  return `${trace.calls.length} call(s), ${done} completed, ${trace.outcome === undefined ? "no outcome" : `ended ${trace.outcome.status}`}`;
}

/**
 * @throws ChainRuntimeError `ARGUMENT_INVALID` when `resumedAs`, the id asked for the resumed
 * chain, is the source chain's or already names a trace in `store` (its run would be refused a
 * log of its own, after the claim made it the resume).
 */
async function refuseTakenChainId(store: TraceStore, sourceChainId: string, resumedAs: string): Promise<void> {
  const taken =
    resumedAs === sourceChainId ||
    (await store.load(resumedAs).then(
      () => true,
      (error: unknown) => isChainRuntimeError(error) && error.code === "TRACE_INVALID" && isTraceChainId(resumedAs),
    ));
  if (taken) {
    throw new ChainRuntimeError(
      "ARGUMENT_INVALID",
      `chainId ${JSON.stringify(resumedAs)} already names a trace${resumedAs === sourceChainId ? " (the chain being resumed)" : ""}; the resumed chain needs a new id (leave chainId out for a fresh one).`,
      { details: { chainId: resumedAs } },
    );
  }
}

/**
 * Claims the resume of `chainId` as `resumedAs` in `store` (see `TraceStore.claimResume`), when
 * the store can.
 * @throws ChainRuntimeError `REPLAY_FAILED` when another resume holds the claim.
 */
async function claimResume(store: TraceStore, chainId: string, resumedAs: string): Promise<void> {
  if (typeof store.claimResume !== "function") return;
  const holder = await store.claimResume(chainId, resumedAs);
  if (holder === undefined) return;
  // Loaded, not found, or there but unreadable: each says something else about that resume.
  const found: true | "missing" | Error = isTraceChainId(holder)
    ? await store.load(holder).then(
        () => true as const,
        // A trace with no whole record yet is one being started (the window before its first
        // record is on disk), as good as missing: not damage.
        (error: unknown) =>
          isChainRuntimeError(error) && (error.code === "TRACE_NOT_FOUND" || error.details.noRecord === true)
            ? "missing"
            : error instanceof Error
              ? error
              : new Error(String(error)),
      )
    : "missing";
  const force = "force it (force: true, or --force on the CLI)";
  throw new ChainRuntimeError(
    "REPLAY_FAILED",
    found === true
      ? `Chain ${chainId} was already resumed as chain ${holder}: resuming it again could repeat the calls that resume ran. Resume ${holder} instead (or ${force}).`
      : found === "missing"
        ? `Chain ${chainId} is being resumed as chain ${holder} by another caller, or was resumed into another trace store, or that resume ` +
          `stopped before it logged anything: resuming it again could repeat the calls it runs. Wait for it and resume ${holder} (from the ` +
          `store that holds it); if no resume is running and it logged nothing, ${force}.`
        : `Chain ${chainId} was already resumed as chain ${holder}, whose trace is in the store but cannot be read (${found.message}): ` +
          `resuming ${chainId} again would repeat the calls ${holder} ran, and so would forcing it. Repair or restore ${holder}'s trace and resume that.`,
    { details: { chainId, resumedAs: holder } },
  );
}

/**
 * The outcome the trace recorded against the replayed one; `undefined` when they agree, or the
 * recording ends early (no outcome, or cancelled by its caller: see `recordingEndsEarly`).
 */
function compareOutcome(trace: ChainTrace, run: TracedChainRunResult): ReplayDivergence | undefined {
  const recorded = trace.outcome;
  if (recorded === undefined || recordingEndsEarly(trace)) return undefined;
  const expected = outcomeView(recorded.status, recorded.returnValue, recorded.returnArtifactRef, recorded.error);
  const actual = outcomeView(run.status, run.returnValue, run.returnArtifactRef, run.error);
  // A return value offloaded on one side and inline on the other compares by content digest.
  if (expected.returnArtifactRef !== undefined && actual.returnArtifactRef === undefined && actual.returnValue !== undefined) {
    actual.returnArtifactRef = `sha256:${sha256Hex(JSON.stringify(actual.returnValue))}`;
    delete actual.returnValue;
  } else if (actual.returnArtifactRef !== undefined && expected.returnArtifactRef === undefined && expected.returnValue !== undefined) {
    expected.returnArtifactRef = `sha256:${sha256Hex(JSON.stringify(expected.returnValue))}`;
    delete expected.returnValue;
  }
  const diff = describeJsonDiff(expected, actual);
  if (diff.length === 0) return undefined;
  return {
    kind: "outcome-mismatch",
    expected,
    actual,
    diff,
    message: ["The calls match, but the outcome differs from the trace:", ...diff.map((line) => `  ${line}`)].join("\n"),
  };
}

interface OutcomeView {
  status: string;
  returnValue?: unknown;
  returnArtifactRef?: string;
  error?: { name: string; message: string };
}

function outcomeView(
  status: string,
  returnValue: unknown,
  returnArtifactRef: string | undefined,
  error: { name: string; message: string } | undefined,
): OutcomeView {
  return {
    status,
    ...(returnValue === undefined ? {} : { returnValue }),
    ...(returnArtifactRef === undefined ? {} : { returnArtifactRef }),
    ...(error === undefined ? {} : { error: { name: error.name, message: error.message } }),
  };
}

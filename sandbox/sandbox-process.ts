/**
 * The host's handle on one sandbox child process: spawns it, runs one chain at a time in it,
 * and turns its death into an outcome. The pool around it is `process-driver.ts`.
 *
 * ```
 *  spawn(node --no-node-snapshot child) ─ child-init ─▶ ◀─ child-ready      starting → idle
 *  run(request) ─ chain-run ─▶ ◀─ tool-calls ─ onToolCall (host) ─ tool-results ─▶  idle → busy
 *               ◀─ console-log ─ onLog                      ◀─ chain-outcome  busy → idle
 *     │ request.signal aborts ─ chain-cancel ─▶ (SIGKILL after killGraceMs: cancelled)
 *     │ totalTimeoutMs + killGraceMs with no outcome ─ SIGKILL (timeout)
 *     └ the process dies (abort, OOM kill, signal) ─ error, phase limit           → exited
 * ```
 *
 * Invariants:
 * - The host owns the clock: however wedged the child is (event loop blocked, stopped), a run
 *   settles by `totalTimeoutMs + killGraceMs` (plus the time the kernel takes to reap it).
 * - Tool calls run on the host, so the caller's trace holds every call the child sent, however
 *   the child ends; when a run settles every pending call's signal has fired.
 * - A run that ended because the process died settles only after the pipe is drained: console
 *   lines and calls written before the death are delivered first.
 * - Idle (prepared) and retired processes do not hold the host's event loop open (the handles
 *   are unref'd); a child exits by itself when its pipe closes, and one computing when the host
 *   dies is ended by its entry guard (it sees its parent change), so the host exiting leaves no
 *   orphans.
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { type Duplex, PassThrough } from "node:stream";
import { FRAME_KIND, OUTPUT_TRUNCATED_MARKER } from "../src/bridge/protocol.ts";
import { MAX_FRAME_BYTES } from "../src/bridge/codec.ts";
import { encodeUtf8 } from "../src/kernel/encode-utf8.ts";
import { errorResultJson, toWireResult } from "../src/bridge/wire-result.ts";
import { ChainRuntimeError, describeThrown, type InvocationResult, MAX_POLICY_DURATION_MS } from "../src/kernel/index.ts";
import { guardReasonIn } from "./child/entry-guard.ts";
import { callFromFrame, forwardClock, killOutcome } from "./isolate-common.ts";
import { LIMIT_HINTS } from "./limits.ts";
import { boundLogLine } from "./output-cap.ts";
import { ProcessChannel } from "./process-channel.ts";
import { spinWait } from "./spin-wait.ts";
import {
  CALL_FIELDS,
  isChildMessage,
  PROCESS_MESSAGE_KIND,
  RESULT_FIELDS,
  splitBatch,
  type ChildMessage,
  type HostMessage,
} from "./process-protocol.ts";
import { isNeverAnswered, MAX_CALLS_PAST_BUDGET, pastCallLimit, type SandboxRunOutcome, type SandboxRunRequest, wallBudgetMs } from "./sandbox-driver.ts";

/** Options of a {@link SandboxProcess}. */
export interface SandboxProcessOptions {
  /** The child entry file (`child/sandbox-child.ts` or `.js`). */
  readonly entry: string;
  /** Heap limit of the isolate the child keeps warm, MiB. */
  readonly memoryLimitMb: number;
  /** Runs an isolate serves inside the child before it is replaced. */
  readonly maxRunsPerIsolate: number;
  /** The prelude, built by the host. */
  readonly preludeSource: string;
  /** How long past a limit or a cancel the host waits for the child before SIGKILL, ms. */
  readonly killGraceMs: number;
  /** Budget of the spin after each message to the child, and of the child's after each batch of calls, µs (see spin-wait.ts). @defaultValue 0 */
  readonly spinWaitUs?: number;
  /** How long the child may take to become ready before it is killed as a failed start, and to report its next context prepared after a run before it is killed and replaced, ms. @defaultValue 30000 */
  readonly startTimeoutMs?: number;
  /** Called once when the process is gone (died, killed or retired); `startError` when it never became ready. */
  readonly onExit?: (process: SandboxProcess, startError: Error | undefined) => void;
}

/** Where a {@link SandboxProcess} is in its life. */
export type SandboxProcessState = "starting" | "idle" | "busy" | "exited";

/** Why the host killed a child during a run. */
type KillReason = "timeout" | "cancelled" | "closed";

interface ActiveRun {
  readonly request: SandboxRunRequest;
  readonly started: number;
  /** Calls sent to the host's tools and not answered yet. */
  readonly pending: Set<number>;
  /** The highest call index run: the prelude numbers calls in program order and they come in order, so an index at or below it is repeated or forged, and dropped. */
  lastCallIndex: number;
  /** The signal of every call of this run (made with the first call), fired when the run ends. */
  calls: AbortController | undefined;
  /** Results answered this tick and not sent yet, {@link RESULT_FIELDS} slots each (one `tool-results` message at the end of the tick). */
  results: (number | string | Uint8Array | null)[];
  readonly resolve: (outcome: SandboxRunOutcome) => void;
  readonly outputCap: number;
  outputBytes: number;
  killReason: KillReason | undefined;
  /** Whether the child has sent anything about this run (a call, a log line, a clock reading, the outcome). */
  heard: boolean;
  /** Pieces of a return value too large for one frame, as they came (see `chain-return-part`). */
  returnParts: string[];
  /** Their total length, UTF-16 units. */
  returnChars: number;
  /** Set when the child broke the protocol: it is being killed, and nothing more it sends counts. */
  faulted: boolean;
  timers: ReturnType<typeof setTimeout>[];
  onAbort: (() => void) | undefined;
}

const STDERR_TAIL_BYTES = 4_096;

/**
 * A child's outcome cut to what its runner could have said: an `ok` run has no error, and its
 * unanswered calls are calls it made (up to `lastCallIndex`), each once.
 */
function asRunnerSaidIt(outcome: SandboxRunOutcome, lastCallIndex: number): SandboxRunOutcome {
  const { error, unansweredCalls, ...rest } = outcome;
  const unanswered = unansweredCalls === undefined ? [] : [...new Set(unansweredCalls.filter((index) => index <= lastCallIndex))];
  return {
    ...rest,
    ...(error === undefined || outcome.status === "ok" ? {} : { error }),
    ...(unanswered.length === 0 ? {} : { unansweredCalls: unanswered }),
  };
}

/** The longest string V8 makes (2^29 - 24 UTF-16 units, on 64-bit builds). */
const MAX_STRING_CHARS = 2 ** 29 - 24;
/** How long a killed child may take to be reaped before its run settles anyway, ms. */
const REAP_FALLBACK_MS = 1_000;
/**
 * Default of {@link SandboxProcessOptions.startTimeoutMs}: a start takes 0.1-0.4 s here; one that
 * has not answered in 30 s is stuck (stopped, wedged, starved), and while it counts as starting
 * the pool spawns no other child for the chains waiting.
 */
const START_TIMEOUT_MS = 30_000;
/** How long a retired child may take to exit on its own before SIGKILL, ms. */
const RETIRE_GRACE_MS = 2_000;
/** Signals a process raises on itself (V8's fatal abort, a crash): a death by one is the run's, or the child's, own fault. */
const SELF_INFLICTED_SIGNALS: ReadonlySet<NodeJS.Signals> = new Set(["SIGABRT", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGTRAP", "SIGSYS"]);

/** One supervised sandbox child; see the module comment. */
export class SandboxProcess {
  /** The child's process id (0 if the spawn itself failed). */
  readonly pid: number;
  /** Resolves when the child is ready for chains; rejects with `SANDBOX_FAILED` when it exits first. */
  readonly ready: Promise<void>;
  /** Resolves when the process has exited and its pipes are closed. */
  readonly exited: Promise<void>;
  readonly #child: ChildProcess;
  readonly #channel: ProcessChannel<ChildMessage, HostMessage>;
  readonly #options: SandboxProcessOptions;
  /** How long a start, or preparing the next context after a run, may take (see {@link SandboxProcessOptions.startTimeoutMs}). */
  get #startTimeoutMs(): number {
    return this.#options.startTimeoutMs ?? START_TIMEOUT_MS;
  }
  /** Budget of the spin after each message to the child, µs (`options.spinWaitUs`, default 0). */
  readonly #spinWaitUs: number;
  readonly #readiness = Promise.withResolvers<void>();
  readonly #exit = Promise.withResolvers<void>();
  #state: SandboxProcessState = "starting";
  #runs = 0;
  #active: ActiveRun | undefined;
  #stderrTail = "";
  #channelFault: string | undefined;
  #retired = false;
  #exitReported = false;
  #prepared = false;
  #preparedWaiters: (() => void)[] = [];
  /** Ends a child that does not report its next context prepared in time after a run (see #finish). */
  #prepareTimer: ReturnType<typeof setTimeout> | undefined;
  /** Set by {@link kill}: nothing may unref the process while its exit is awaited. */
  #killed = false;
  /** Why a start was ended by the host (it took past `startTimeoutMs`). */
  #startTimedOut: string | undefined;
  /** Set when the host killed the child for breaking the pipe or the protocol: its death is not from outside. */
  #killedByHost = false;
  #killedFromOutside = false;

  /** Spawns the child; watch {@link ready}. */
  constructor(options: SandboxProcessOptions) {
    this.#options = options;
    this.#spinWaitUs = options.spinWaitUs ?? 0;
    this.ready = this.#readiness.promise;
    this.ready.catch(() => undefined);
    this.exited = this.#exit.promise;
    const child = spawn(process.execPath, ["--no-node-snapshot", options.entry], {
      stdio: ["ignore", "ignore", "pipe", "pipe"],
    });
    this.#child = child;
    this.pid = child.pid ?? 0;
    child.on("error", (error) => {
      if (child.pid === undefined) this.#onExit(null, null, `${error.message}${SPAWN_ERROR_HINTS[(error as NodeJS.ErrnoException).code ?? ""] ?? ""}`);
    });
    child.on("close", (code: number | null, signal: NodeJS.Signals | null) => this.#onExit(code, signal));
    const stderr = child.stderr as Socket | null;
    stderr?.setEncoding("utf8");
    stderr?.on("data", (text: string) => {
      this.#stderrTail = (this.#stderrTail + text).slice(-STDERR_TAIL_BYTES);
    });
    stderr?.unref();
    // A spawn the system refused (EMFILE, EAGAIN) has no pid and no pipes; Node says why in the
    // 'error' event above, on the next tick, which ends this start. Until then: a closed pipe.
    const spawned = child.pid !== undefined;
    const pipe = spawned ? (child.stdio[3] as Socket | null | undefined) : closedPipe();
    if (pipe == null) {
      child.kill("SIGKILL");
      throw new ChainRuntimeError("SANDBOX_FAILED", "The sandbox process has no pipe on fd 3.");
    }
    this.#channel = new ProcessChannel<ChildMessage, HostMessage>(pipe, isChildMessage, {
      onMessage: (message) => this.#onMessage(message),
      onClose: (reason, malformed) => {
        if (reason !== undefined) this.#channelFault ??= reason; // the first fault is the cause
        // The child cannot be told anything any more: make sure it is gone (a child that sent
        // what is no message dies by the host's hand, not from outside).
        if (this.#state !== "exited" && !this.#retired) {
          if (malformed === true) this.#killedByHost = true;
          this.#child.kill("SIGKILL");
        }
      },
    });
    if (!spawned) return;
    const startTimeoutMs = this.#startTimeoutMs;
    const startTimer = setTimeout(() => {
      if (this.#state !== "starting") return;
      this.#startTimedOut = `it did not become ready within ${startTimeoutMs} ms and was killed`;
      this.#child.kill("SIGKILL");
    }, startTimeoutMs);
    void this.ready.then(
      () => clearTimeout(startTimer),
      () => clearTimeout(startTimer),
    );
    this.#channel.send({
      kind: PROCESS_MESSAGE_KIND.init,
      memoryLimitMb: options.memoryLimitMb,
      maxRunsPerIsolate: options.maxRunsPerIsolate,
      preludeSource: options.preludeSource,
    });
  }

  /** Where the process is in its life. */
  get state(): SandboxProcessState {
    return this.#state;
  }

  /** Chains started in this process. */
  get runs(): number {
    return this.#runs;
  }

  /** True while idle with the next chain's context already prepared in the child. */
  get isPrepared(): boolean {
    return this.#prepared && this.#state === "idle";
  }

  /** Resolves once the child reports its next context prepared (or the process is gone). */
  whenPrepared(): Promise<void> {
    if (this.#prepared || this.#state === "exited") return Promise.resolve();
    return new Promise((resolve) => this.#preparedWaiters.push(resolve));
  }

  #setPrepared(prepared: boolean): void {
    this.#prepared = prepared;
    if (!prepared) return;
    for (const resolve of this.#preparedWaiters.splice(0)) resolve();
  }

  /**
   * True when something outside killed the process (a signal other than a fault of its own, not
   * sent by the host, no V8 out-of-memory report) before it said anything about its work then:
   * while it started, or during a run before any call, output or outcome of the run reached the
   * host. Such work had no effect anywhere, so it can be done again.
   */
  get killedFromOutside(): boolean {
    return this.#killedFromOutside;
  }

  /** The chain id of the run in progress, if any. */
  get chainId(): string | undefined {
    return this.#active?.request.chainId;
  }

  /**
   * Runs one chain. Never rejects; the process must be `idle` (rejects with `SANDBOX_FAILED`
   * otherwise, a bug in the owner). After it settles, check {@link state}: `exited` means the
   * process is gone and must be dropped.
   */
  run(request: SandboxRunRequest): Promise<SandboxRunOutcome> {
    if (this.#state !== "idle") {
      return Promise.reject(new ChainRuntimeError("SANDBOX_FAILED", `The sandbox process is ${this.#state}, not idle.`));
    }
    // Counted while the child works on it: a spin (here or in the child) needs a core beside it.
    spinWait.runStarted();
    const message: HostMessage = {
      kind: PROCESS_MESSAGE_KIND.run,
      spinWaitUs: this.#childSpin(),
      chainId: request.chainId,
      script: request.script,
      scriptName: request.scriptName,
      toolNames: request.toolNames,
      maxToolCalls: request.maxToolCalls,
      limits: {
        memoryLimitMb: request.limits.memoryLimitMb,
        cpuTimeMs: request.limits.cpuTimeMs,
        totalTimeoutMs: request.limits.totalTimeoutMs,
        maxOutputBytes: request.limits.maxOutputBytes,
        maxArgumentBytes: request.limits.maxArgumentBytes,
      },
      seed: request.seed,
      clockStart: request.clockStart,
      ...(request.clockReplay === undefined ? {} : { clockReplay: request.clockReplay }),
      ...(request.clockLiveAt === undefined ? {} : { clockLiveAt: request.clockLiveAt }),
      ...(request.budgetSpentMs === undefined ? {} : { budgetSpentMs: request.budgetSpentMs }),
    };
    try {
      this.#channel.send(message);
    } catch (error) {
      // Nothing was sent (the message is encoded whole before it is queued): the child stays idle
      // and prepared, and the run ends here, as one the pipe cannot carry.
      spinWait.runEnded();
      const text = `the run is too large for the sandbox pipe (its script and tool names): ${describeThrown(error)}`;
      return Promise.resolve({ status: "error", error: { phase: "runtime", name: "RangeError", message: text }, wallMs: 0, cpuMs: 0, heapBytes: 0 });
    }
    this.#state = "busy";
    this.#setPrepared(false);
    this.#runs++;
    this.#hold(true);
    const { promise, resolve } = Promise.withResolvers<SandboxRunOutcome>();
    const { limits } = request;
    const run: ActiveRun = {
      request,
      started: performance.now(),
      pending: new Set(),
      lastCallIndex: -1,
      calls: undefined,
      results: [],
      resolve,
      outputCap: limits.maxOutputBytes + OUTPUT_TRUNCATED_MARKER.length + 8,
      outputBytes: 0,
      killReason: undefined,
      heard: false,
      returnParts: [],
      returnChars: 0,
      faulted: false,
      timers: [],
      onAbort: undefined,
    };
    this.#active = run;
    // Written now, not at the end of the tick: nothing else would join this write, and the
    // chain's own promise work would otherwise delay the child's start.
    this.#channel.flush();
    spinWait.begin(this.#spinWaitUs);
    // The child's own watchdog reports a timeout at totalTimeoutMs; this one is for a child
    // that cannot report any more.
    // Capped at the longest timer Node.js can set: past it, a timer fires at once (and kills a healthy child).
    run.timers.push(setTimeout(() => this.#kill(run, "timeout"), Math.min(Math.max(0, wallBudgetMs(request)) + this.#options.killGraceMs, MAX_POLICY_DURATION_MS)));
    const signal = request.signal;
    if (signal !== undefined) {
      run.onAbort = () => {
        this.#sendResults(run); // the pipe keeps the order the host answered in
        this.#channel.send({ kind: PROCESS_MESSAGE_KIND.cancel });
        this.#channel.flush();
        run.timers.push(setTimeout(() => this.#kill(run, "cancelled"), this.#options.killGraceMs));
      };
      if (signal.aborted) run.onAbort();
      else signal.addEventListener("abort", run.onAbort, { once: true });
    }
    return promise;
  }

  /**
   * Ends the process now (SIGKILL). A run in progress ends as a `SandboxError` saying the
   * driver was closed. Idempotent.
   */
  kill(): void {
    if (this.#exitReported) return;
    if (this.#active !== undefined) this.#active.killReason ??= "closed";
    this.#killed = true;
    this.#hold(true); // so an owner awaiting `exited` sees the exit
    this.#child.kill("SIGKILL");
  }

  /**
   * Lets an idle process go: closes its pipe so it exits by itself (SIGKILL if it has not
   * within 2 s). {@link state} is `exited` from now on.
   */
  retire(): void {
    if (this.#state === "exited" || this.#retired) return;
    this.#retired = true;
    this.#state = "exited";
    this.#channel.destroy();
    this.#hold(false);
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), RETIRE_GRACE_MS);
    timer.unref();
    void this.exited.then(() => clearTimeout(timer));
  }

  /** Whether this process keeps the host's event loop alive (while starting, busy or preparing its next context). */
  #hold(hold: boolean): void {
    if (hold) {
      this.#child.ref();
      this.#channel.ref();
    } else {
      this.#child.unref();
      this.#channel.unref();
    }
  }

  #onMessage(message: ChildMessage): void {
    switch (message.kind) {
      case PROCESS_MESSAGE_KIND.calls: {
        spinWait.end();
        const run = this.#active;
        if (run !== undefined) run.heard = true;
        const calls = message.calls;
        for (let i = 0; i < calls.length && run !== undefined; i += CALL_FIELDS) {
          this.#onCall(run, calls[i] as number, calls[i + 1] as string, calls[i + 2] as string, calls[i + 3] as string | null);
        }
        return;
      }
      case FRAME_KIND.clock:
        if (this.#active?.faulted === true) return;
        if (this.#active !== undefined) this.#active.heard = true;
        forwardClock(this.#active?.request, message.readings);
        return;
      case FRAME_KIND.log: {
        const run = this.#active;
        if (run === undefined || run.faulted) return;
        run.heard = true;
        const line = boundLogLine(message.text, run.outputBytes, run.outputCap, OUTPUT_TRUNCATED_MARKER.length);
        if (line === undefined) return;
        run.outputBytes = line.counted;
        try {
          run.request.onLog?.(message.level, line.text);
          if (line.cut) run.request.onLog?.(message.level, OUTPUT_TRUNCATED_MARKER);
        } catch {
          // a failing log listener must not break the run
        }
        return;
      }
      case PROCESS_MESSAGE_KIND.returnPart: {
        const run = this.#active;
        if (run === undefined || run.killReason !== undefined || run.faulted) return;
        run.heard = true;
        run.returnChars += message.text.length;
        // JSON.stringify ran in the isolate: its text fits in the isolate's heap, one byte or more a
        // unit, and in a V8 string (past that, joining the pieces would throw here, in the pipe's handler).
        if (run.returnChars > Math.min(run.request.limits.memoryLimitMb * 1024 * 1024, MAX_STRING_CHARS)) {
          this.#fault(run, `the child sent a return value longer than its ${run.request.limits.memoryLimitMb} MB isolate could hold`);
          return;
        }
        run.returnParts.push(message.text);
        return;
      }
      case PROCESS_MESSAGE_KIND.outcome: {
        spinWait.end();
        const run = this.#active;
        if (run === undefined || run.killReason !== undefined || run.faulted) return;
        const parts = run.returnParts;
        run.returnParts = [];
        const outcome = asRunnerSaidIt({ ...message.outcome, wallMs: performance.now() - run.started }, run.lastCallIndex);
        if (message.returnParts === undefined) {
          this.#finish(run, outcome);
        } else if (message.returnParts === parts.length) {
          this.#finish(run, { ...outcome, returnJson: parts.join("") });
        } else {
          this.#fault(run, `the child announced a return value of ${message.returnParts} pieces and sent ${parts.length}`);
        }
        return;
      }
      case PROCESS_MESSAGE_KIND.ready:
        // stale: a new run already took the context, or the process is being killed (its owner
        // awaits `exited`, which the loop must stay alive to see)
        if (this.#state === "busy" || this.#state === "exited" || this.#killed) return;
        clearTimeout(this.#prepareTimer);
        this.#setPrepared(true);
        this.#hold(false); // idle and prepared: nothing left that the host could wait for
        if (this.#state !== "starting") return;
        this.#state = "idle";
        this.#readiness.resolve();
        return;
    }
  }

  #onCall(run: ActiveRun, callIndex: number, tool: string, argsJson: string, refusal: string | null): void {
    if (this.#active !== run || run.killReason !== undefined || run.faulted || callIndex <= run.lastCallIndex) return;
    run.lastCallIndex = callIndex;
    // The child's runner ends a run before this many calls: more is a child not to be trusted.
    if (pastCallLimit(callIndex, run.request.maxToolCalls)) {
      this.#fault(run, `it sent call ${callIndex}, past the ${run.request.maxToolCalls + MAX_CALLS_PAST_BUDGET} calls a run may make`);
      return;
    }
    // The prelude calls only the run's tools: another name is a child not to be trusted.
    if (!run.request.toolNames.includes(tool)) {
      this.#fault(run, "it sent a call to a tool the run does not have");
      return;
    }
    // Checked again here as the in-process runner checks it (the child's word is not taken).
    const call = callFromFrame(callIndex, tool, argsJson, refusal ?? undefined, run.request.limits.maxArgumentBytes);
    if (call === undefined) return;
    run.pending.add(callIndex);
    run.calls ??= new AbortController();
    let answer: Promise<InvocationResult>;
    try {
      answer = run.request.onToolCall(call, run.calls.signal);
    } catch (error) {
      answer = Promise.reject(error as Error);
    }
    answer.then(
      (result) => this.#deliver(run, callIndex, result),
      (error: unknown) => this.#deliver(run, callIndex, { status: "error", code: "TOOL_ERROR", text: describeThrown(error) }),
    );
  }

  #deliver(run: ActiveRun, callIndex: number, result: InvocationResult): void {
    if (this.#active !== run || run.killReason !== undefined || !run.pending.delete(callIndex)) return;
    const results = run.results;
    if (isNeverAnswered(result)) {
      // Never answered (see neverAnswered): the child stops waiting for it, nothing enters.
      results.push(callIndex, null, null);
    } else {
      // A large text crosses as itself, not escaped inside the JSON (see wire-result.ts); the pipe
      // is UTF-8, so a text with lone surrogates stays in the JSON, which escapes them.
      const wire = toWireResult(result, { utf8: true });
      results.push(callIndex, wire.resultJson, wire.text === undefined ? null : encodeUtf8(wire.text));
    }
    // Every result answered in this tick (50 parallel calls resolve in one microtask drain) goes
    // in one message, written in the same write as anything else sent this tick.
    if (results.length === RESULT_FIELDS) process.nextTick(() => this.#sendResults(run));
  }

  /** Sends the results queued for `run`, if it is still the active run. */
  #sendResults(run: ActiveRun): void {
    const results = run.results;
    if (results.length === 0) return;
    run.results = [];
    if (this.#active !== run || run.killReason !== undefined) return;
    // Sent at the end of this tick, in one write; the child answers within the spin, usually.
    spinWait.begin(this.#spinWaitUs);
    // Results too large together go in several messages; one too large alone is answered with an error.
    for (const part of splitBatch(results, RESULT_FIELDS)) {
      let reason = `it is over the ${MAX_FRAME_BYTES}-byte frame limit`;
      if (!part.oversized) {
        try {
          this.#channel.send({ kind: PROCESS_MESSAGE_KIND.results, results: part.entries, spinWaitUs: this.#childSpin() });
          continue;
        } catch (error) {
          reason = describeThrown(error);
        }
      }
      const resultJson = errorResultJson("BRIDGE_ERROR", `the result is too large for the sandbox pipe: ${reason}`);
      const answers: (number | string | null)[] = [];
      // A call never answered stays so (null); the others get the error.
      for (let i = 0; i < part.entries.length; i += RESULT_FIELDS) answers.push(part.entries[i] as number, part.entries[i + 1] === null ? null : resultJson, null);
      this.#channel.send({ kind: PROCESS_MESSAGE_KIND.results, results: answers });
    }
  }

  /**
   * The child's spin budget for now, sent with the run and with every batch of results: the
   * configured one while the runs in flight leave a core free for it and the host's spin is not
   * in a quiet period (the machine's CPUs busy with other work), else 0 (a chain started beside
   * this one turns this child's spin off at its next batch).
   */
  #childSpin(): number {
    return spinWait.coreFree && !spinWait.quiet ? this.#spinWaitUs : 0;
  }

  /** The child broke the protocol during `run`: nothing more it says counts; it is killed and the run ends as its death, naming `reason`. */
  #fault(run: ActiveRun, reason: string): void {
    run.faulted = true;
    run.returnParts = [];
    this.#channelFault ??= reason;
    this.#killedByHost = true;
    this.#child.kill("SIGKILL");
  }

  #kill(run: ActiveRun, reason: KillReason): void {
    if (this.#active !== run || run.killReason !== undefined) return;
    run.killReason = reason;
    this.#child.kill("SIGKILL");
    // The run settles when the pipe is drained and the process reaped; in case that never
    // comes, settle anyway.
    run.timers.push(setTimeout(() => this.#finish(run, this.#deathOutcome(run, null, "SIGKILL")), REAP_FALLBACK_MS));
  }

  #finish(run: ActiveRun, outcome: SandboxRunOutcome): void {
    if (this.#active !== run) return;
    this.#active = undefined;
    spinWait.end();
    spinWait.runEnded();
    for (const timer of run.timers) clearTimeout(timer);
    if (run.onAbort !== undefined) run.request.signal?.removeEventListener("abort", run.onAbort);
    if (run.pending.size > 0) run.calls?.abort(new Error("the chain ended before this call finished"));
    run.pending.clear();
    if (this.#state === "busy") {
      if (run.killReason === undefined) {
        this.#state = "idle"; // still held until the child reports its next context prepared
        // Preparing takes ~1 ms, a fresh isolate as long as a start: a child that says nothing for
        // as long as a start may take is broken (or not to be trusted), and is replaced.
        clearTimeout(this.#prepareTimer);
        this.#prepareTimer = setTimeout(() => {
          if (this.#prepared || this.#state !== "idle") return;
          this.#killedByHost = true;
          this.#channelFault ??= `it did not report its next context prepared within ${this.#startTimeoutMs} ms after a run`;
          this.#child.kill("SIGKILL");
        }, this.#startTimeoutMs);
        this.#prepareTimer.unref();
      } else {
        this.#state = "exited"; // killed: gone, or about to be
      }
    }
    run.resolve(outcome);
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null, failure?: string): void {
    if (this.#exitReported) return;
    this.#exitReported = true;
    const wasStarting = this.#state === "starting";
    this.#state = "exited";
    this.#channel.destroy();
    const run = this.#active;
    if (run !== undefined) this.#finish(run, this.#deathOutcome(run, code, signal));
    let startError: ChainRuntimeError | undefined;
    if (wasStarting) {
      this.#killedFromOutside = !this.#killed && this.#startTimedOut === undefined && failure === undefined && this.#byOutsideSignal(signal);
      startError = new ChainRuntimeError("SANDBOX_FAILED", `The sandbox process did not start: ${failure ?? this.#startTimedOut ?? describeExit(code, signal)}${this.#stderrHint(true)}`, {
        details: { pid: this.pid, stderr: this.#stderrTail },
      });
      this.#readiness.reject(startError);
    }
    this.#exit.resolve();
    for (const resolve of this.#preparedWaiters.splice(0)) resolve();
    this.#options.onExit?.(this, startError);
  }

  #deathOutcome(run: ActiveRun, code: number | null, signal: NodeJS.Signals | null): SandboxRunOutcome {
    const wallMs = performance.now() - run.started;
    const stats = { wallMs, cpuMs: 0, heapBytes: 0 };
    const { limits } = run.request;
    switch (run.killReason) {
      case "timeout":
        return {
          status: "timeout",
          error: {
            phase: "limit",
            name: "TimeoutError",
            message: `the chain ran past totalTimeoutMs (${limits.totalTimeoutMs} ms); the sandbox process did not answer and was killed. ${LIMIT_HINTS.timeout}`,
          },
          ...stats,
        };
      case "cancelled":
        return { status: "cancelled", ...stats };
      case "closed":
        return { status: "error", error: { phase: "limit", name: "SandboxError", message: "the sandbox driver was closed during the run" }, ...stats };
      case undefined: {
        // The child's guard ended it: a script past its memory cap, or stuck past its CPU limit.
        const guard = guardReasonIn(this.#stderrTail);
        if (guard !== undefined) return { ...killOutcome(guard, limits), ...stats };
        const fault = this.#channelFault === undefined ? "" : ` (${this.#channelFault})`;
        this.#killedFromOutside = !run.heard && this.#byOutsideSignal(signal);
        return {
          status: "error",
          error: { phase: "limit", name: "SandboxError", message: `the sandbox process died: ${describeExit(code, signal)}${fault}${this.#stderrHint(false)}` },
          ...stats,
        };
      }
    }
  }

  /** Whether a death by `signal` came from outside: a signal the process does not raise on itself, with no V8 out-of-memory report. */
  #byOutsideSignal(signal: NodeJS.Signals | null): boolean {
    return signal !== null && !this.#killedByHost && !SELF_INFLICTED_SIGNALS.has(signal) && this.#stderrHint(false) === "";
  }

  /** A short reading of the child's last stderr output. */
  #stderrHint(full: boolean): string {
    const tail = this.#stderrTail;
    if (/is_heap_oom = 1|heap out of memory|CALL_AND_RETRY_LAST|invalid table size/.test(tail)) return " (V8 ran out of memory: a native allocation failed)";
    if (!full) return "";
    const lines = tail.trim().split("\n").filter((line) => line.trim() !== "");
    return lines.length === 0 ? "" : `: ${lines.slice(-5).join(" | ")}`;
  }
}

/** What a spawn error code means for whoever runs the host. */
const SPAWN_ERROR_HINTS: Readonly<Record<string, string>> = {
  EMFILE: " (this process is out of file descriptors: raise its limit, ulimit -n, or run fewer sandboxes)",
  ENFILE: " (the system is out of file descriptors)",
  EAGAIN: " (the system refused a new process: too many processes, ulimit -u, or no memory)",
};

/** A stream that is already over: the pipe of a process that was never spawned. */
function closedPipe(): Duplex {
  const stream = new PassThrough();
  stream.destroy();
  return stream;
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal !== null) return `signal ${signal}`;
  return code === null ? "no exit status" : `exit code ${code}`;
}

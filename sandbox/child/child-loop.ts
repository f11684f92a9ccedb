/**
 * The child side of the process driver: a warm {@link IsolatePool} of one isolate, driven
 * synchronously on this process's main thread (no thread hand-off per call: the process has
 * nothing else to do, and the host keeps its own kill timer), and a loop that runs one chain at a
 * time with it, turning the runner's callbacks into messages.
 *
 * ```
 *  child-init ─ IsolatePool({ poolSize: 1 }).warm() ─ child-ready
 *  chain-run  ─ pool.acquire(limit) ─ runner.run(request) ─ chain-outcome ─ pool.release
 *             ─ pool.warm() (next context prepared) ─ child-ready
 *                    │ onToolCall ─ tool-calls ─▶ host ─ tool-results ─▶ resolve the calls
 *                    │ onLog      ─ console-log ─▶ host
 *  chain-cancel ─ abort the run's signal (the runner disposes the isolate: `cancelled`)
 *  pipe closed  ─ exit (the host is gone or retired this child)
 * ```
 *
 * The calls of one entry into the isolate leave in one `tool-calls` message, written as the entry
 * returns (a console line sent meanwhile first sends the calls before it, so the host sees the
 * script's order). Results arrive as the `InvocationResult`'s JSON text (serialised on the host)
 * and enter the isolate as that text, with no parse here.
 * Everything that can fail in a run becomes an outcome; anything else (a bug, a V8 fatal
 * error) ends the process, and the host reports the chain as a sandbox death.
 * @module
 */
import { MAX_FRAME_BYTES } from "../../src/bridge/codec.ts";
import { FRAME_KIND } from "../../src/bridge/protocol.ts";
import { describeThrown } from "../../src/kernel/index.ts";
import type { SerializedToolResult } from "../isolate-common.ts";
import { IsolatePool } from "../isolate-pool.ts";
import { EntryGuard } from "./entry-guard.ts";
import type { Duplex } from "node:stream";
import { ProcessChannel } from "../process-channel.ts";
import { spinWait } from "../spin-wait.ts";
import {
  CALL_FIELDS,
  isHostMessage,
  PROCESS_MESSAGE_KIND,
  RESULT_FIELDS,
  RETURN_PART_CHARS,
  splitBatch,
  splitReturnJson,
  type ChainRunMessage,
  type ChildMessage,
  type HostMessage,
} from "../process-protocol.ts";
import { type SandboxRunOutcome, neverAnswered } from "../sandbox-driver.ts";

/** The chain in progress. */
interface ActiveRun {
  readonly controller: AbortController;
  readonly pending: Map<number, (result: SerializedToolResult) => void>;
  /** Calls made in the current entry and not sent yet, `callIndex, tool, argsJson, refusal` each. */
  calls: (number | string | null)[];
  /** Budget of the spin after each batch of calls, µs, as the host last sent it (see spin-wait.ts). */
  spinWaitUs: number;
}

/** Serves chains over the host pipe, one at a time; see the module comment. */
export class ChildLoop {
  readonly #channel: ProcessChannel<HostMessage, ChildMessage>;
  #pool: IsolatePool | undefined;
  #guard: EntryGuard | undefined;
  #active: ActiveRun | undefined;

  /**
   * Starts serving the host on `pipe`. When the pipe closes, the isolates are disposed and
   * `onClose` is called (`reason` set when the stream broke or carried a malformed message).
   */
  constructor(pipe: Duplex, onClose: (reason?: string) => void) {
    this.#channel = new ProcessChannel<HostMessage, ChildMessage>(pipe, isHostMessage, {
      onMessage: (message) => this.#onMessage(message),
      onClose: (reason) => {
        this.#close();
        onClose(reason);
      },
    });
  }

  #onMessage(message: HostMessage): void {
    switch (message.kind) {
      case PROCESS_MESSAGE_KIND.results: {
        spinWait.end();
        if (this.#active !== undefined && message.spinWaitUs !== undefined) this.#active.spinWaitUs = message.spinWaitUs;
        const pending = this.#active?.pending;
        const results = message.results;
        for (let i = 0; i < results.length && pending !== undefined; i += RESULT_FIELDS) {
          const callIndex = results[i] as number;
          const resolve = pending.get(callIndex);
          if (resolve === undefined) continue; // a result sent before the host read the outcome
          pending.delete(callIndex);
          const resultJson = results[i + 1] as string | null;
          const bytes = results[i + 2] as Uint8Array | null;
          if (resultJson === null) resolve(neverAnswered({ resultJson: "null" }));
          else resolve(bytes === null ? { resultJson } : { resultJson, text: utf8Text(bytes) });
        }
        return;
      }
      case PROCESS_MESSAGE_KIND.run:
        void this.#run(message);
        return;
      case PROCESS_MESSAGE_KIND.cancel:
        this.#active?.controller.abort();
        return;
      case PROCESS_MESSAGE_KIND.init:
        void this.#init(message.memoryLimitMb, message.maxRunsPerIsolate, message.preludeSource);
        return;
    }
  }

  #close(): void {
    this.#active?.controller.abort();
    this.#pool?.close();
    this.#guard?.close();
  }

  async #init(memoryLimitMb: number, maxRunsPerIsolate: number, preludeSource: string): Promise<void> {
    this.#pool?.close();
    this.#guard ??= new EntryGuard();
    const pool = new IsolatePool({ poolSize: 1, memoryLimitMb, maxRunsPerIsolate, preludeSource, drive: "sync", watch: this.#guard });
    this.#pool = pool;
    await pool.warm();
    this.#guard.measureBaseline();
    this.#channel.send({ kind: PROCESS_MESSAGE_KIND.ready });
  }

  async #run(message: ChainRunMessage): Promise<void> {
    const pool = this.#pool;
    let outcome: SandboxRunOutcome;
    if (pool === undefined || this.#active !== undefined) {
      outcome = sandboxFailure(pool === undefined ? "the child was not initialised" : "the child is already running a chain");
    } else {
      const active: ActiveRun = { controller: new AbortController(), pending: new Map(), calls: [], spinWaitUs: message.spinWaitUs ?? 0 };
      this.#active = active;
      outcome = await this.#execute(pool, active, message);
      this.#active = undefined;
    }
    this.#sendOutcome(outcome);
    // Written now: preparing the next context below takes this thread for ~1 ms.
    this.#channel.flush();
    // Tell the host when the next context is ready, so it can prefer a child that has one.
    await pool?.warm();
    this.#channel.send({ kind: PROCESS_MESSAGE_KIND.ready });
  }

  /**
   * Sends a run's outcome; a return value longer than one frame can surely carry goes first, in
   * pieces (the host joins them, as large as the isolate could make it). An outcome the pipe
   * still cannot carry is replaced by an error outcome that says so: a throw here would end the
   * child.
   */
  #sendOutcome(outcome: SandboxRunOutcome): void {
    try {
      const returnJson = outcome.returnJson;
      if (returnJson !== undefined && returnJson.length > RETURN_PART_CHARS) {
        const parts = splitReturnJson(returnJson);
        for (const text of parts) this.#channel.send({ kind: PROCESS_MESSAGE_KIND.returnPart, text });
        const { returnJson: _sent, ...rest } = outcome;
        this.#channel.send({ kind: PROCESS_MESSAGE_KIND.outcome, outcome: rest, returnParts: parts.length });
        return;
      }
      this.#channel.send({ kind: PROCESS_MESSAGE_KIND.outcome, outcome });
      return;
    } catch (error) {
      const { wallMs, cpuMs, heapBytes } = outcome;
      const size = outcome.returnJson === undefined ? "" : ` (the return value is ${Buffer.byteLength(outcome.returnJson)} bytes of JSON)`;
      const message =
        `the run's outcome is too large for the sandbox pipe${size}: ${describeThrown(error)} ` +
        "Return less: keep large data in a tool's artifact and return its reference.";
      this.#channel.send({
        kind: PROCESS_MESSAGE_KIND.outcome,
        outcome: { status: "error", error: { phase: "runtime", name: "RangeError", message }, wallMs, cpuMs, heapBytes },
      });
    }
  }

  async #execute(pool: IsolatePool, active: ActiveRun, message: ChainRunMessage): Promise<SandboxRunOutcome> {
    let runner;
    try {
      runner = pool.acquire(message.limits.memoryLimitMb);
    } catch (error) {
      return sandboxFailure(`could not start an isolate: ${describeThrown(error)}`);
    }
    const channel = this.#channel;
    try {
      return await runner.run({
        chainId: message.chainId,
        script: message.script,
        scriptName: message.scriptName,
        toolNames: message.toolNames,
        maxToolCalls: message.maxToolCalls,
        limits: message.limits,
        seed: message.seed,
        clockStart: message.clockStart,
        ...(message.clockReplay === undefined ? {} : { clockReplay: message.clockReplay }),
        ...(message.clockLiveAt === undefined ? {} : { clockLiveAt: message.clockLiveAt }),
        ...(message.budgetSpentMs === undefined ? {} : { budgetSpentMs: message.budgetSpentMs }),
        signal: active.controller.signal,
        onToolCall: (call) =>
          new Promise<SerializedToolResult>((resolve) => {
            active.pending.set(call.callIndex, resolve);
            active.calls.push(call.callIndex, call.tool, call.argsJson, call.refusal ?? null);
          }),
        onLog: (level, text) => {
          sendCalls(channel, active);
          channel.send({ kind: FRAME_KIND.log, level, text });
        },
        // Ahead of the calls that follow them (the calls before them go first).
        onClock: (readings) => {
          sendCalls(channel, active);
          channel.send({ kind: FRAME_KIND.clock, readings });
        },
        // One message and one write per entry, as soon as its calls are queued.
        onFramesHandled: () => {
          sendCalls(channel, active);
          channel.flush();
          // The script now waits on the host: stay awake for its answer (see spin-wait.ts).
          if (active.pending.size > 0) spinWait.begin(active.spinWaitUs);
        },
      });
    } finally {
      spinWait.end();
      sendCalls(channel, active);
      active.pending.clear();
      pool.release(runner);
    }
  }
}

/**
 * Sends the calls `active` has queued: one message, or several when their arguments together
 * would pass the frame limit. A call too large to send on its own still crosses, refused (as the
 * prelude refuses arguments over the limit), so the host answers and traces it. Never throws: it
 * runs where a throw would end the child (a batch boundary) or lose a console line.
 */
function sendCalls(channel: ProcessChannel<HostMessage, ChildMessage>, active: ActiveRun): void {
  if (active.calls.length === 0) return;
  const calls = active.calls;
  active.calls = [];
  for (const part of splitBatch(calls, CALL_FIELDS)) {
    let reason = `it is over the ${MAX_FRAME_BYTES}-byte frame limit`;
    if (!part.oversized) {
      try {
        channel.send({ kind: PROCESS_MESSAGE_KIND.calls, calls: part.entries });
        continue;
      } catch (error) {
        reason = describeThrown(error);
      }
    }
    const refused: (number | string | null)[] = [];
    for (let i = 0; i < part.entries.length; i += CALL_FIELDS) {
      const tool = part.entries[i + 1] as string;
      refused.push(part.entries[i] as number, tool, "{}", `tools.${tool}: the arguments are too large for the sandbox pipe: ${reason}.`);
    }
    channel.send({ kind: PROCESS_MESSAGE_KIND.calls, calls: refused });
  }
}

/** A result's text sent apart as UTF-8 bytes (see `ToolResultsMessage`), as a string. */
function utf8Text(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
}

function sandboxFailure(message: string): SandboxRunOutcome {
  return { status: "error", error: { phase: "limit", name: "SandboxError", message }, wallMs: 0, cpuMs: 0, heapBytes: 0 };
}

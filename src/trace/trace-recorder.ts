/**
 * Turns one chain's life into trace events: `start` → `chain-start`, the invoker's `TOOL_START`
 * hook → `tool-call`, `TOOL_END` → `tool-result`, `recordApprovalRequest` → `approval-request`,
 * `recordClock` → `clock`, `end` → `chain-end`.
 *
 * Invariants:
 * - Every append is awaited inside the hook, and the invoker awaits its hooks: with a durable
 *   store the `tool-call` is on disk before the tool executes and the `tool-result` before the
 *   script sees the result. That is what makes a resumed chain at-most-once.
 * - A `TOOL_END` with no `TOOL_START` before it (the invoker fires both for every call, but hooks
 *   may be fired by other code, or reach the recorder late), or whose
 *   `tool-call` the store refused, still gets a `tool-call` (arguments unknown, digest from the
 *   record) followed by its `tool-result`, so the log holds one entry per call the host
 *   received and never a result without its call.
 * - Hook payloads of other chains are ignored: a recorder may sit on hooks shared by many chains.
 * - A store failure is never thrown into the invoker (hook errors are swallowed there) and
 *   never dropped: it is kept in {@link TraceRecorder.failures}, exposed as
 *   {@link TraceRecorder.error}, and passed to `onError`. The chain runtime checks `error`
 *   when the chain ends (and may refuse to go on sooner) and reports the trace as incomplete.
 *
 * @module
 */
import { checkOptionNames, optionNames } from "../kernel/check-option-shape.ts";
import {
  ChainRuntimeError,
  digestJson,
  isChainRuntimeError,
  sha256Hex,
  type ApprovalRequest,
  type ChainPolicy,
  type Hooks,
  type ToolEndEvent,
  type ToolRisk,
  type ToolStartEvent,
} from "../kernel/index.ts";
import { TRACE_FORMAT_VERSION, type ToolboxFingerprint, type TraceOutcome } from "./chain-trace.ts";
import type { TraceEvent, TraceEventType } from "./trace-event.ts";
import { assertTraceChainId, type TraceStore } from "./trace-store.ts";

/** Every field of {@link TraceRecorderOptions}. */
const TRACE_RECORDER_OPTION_NAMES = optionNames<TraceRecorderOptions>({ store: true, chainId: true, onError: true });

/** Options of {@link TraceRecorder}. */
export interface TraceRecorderOptions {
  /** Where the events go. */
  readonly store: TraceStore;
  /** The chain recorded; hook payloads of other chains are ignored. */
  readonly chainId: string;
  /** Told about each failure as it happens, after it is kept in `failures`. Errors it throws are ignored. */
  readonly onError?: (failure: TraceRecorderFailure) => void;
}

/** What {@link TraceRecorder.start} needs to know about the chain. */
export interface TraceStartMeta {
  /** The script as the model wrote it. */
  readonly source: string;
  readonly policy: ChainPolicy;
  /** From `fingerprintToolbox`; also gives each call's `risk`. */
  readonly toolbox: ToolboxFingerprint;
  /** Seed of the script's `Math.random`. */
  readonly seed: number;
  /** Start of the script's virtual clock, epoch milliseconds. */
  readonly clockStart: number;
  /** The chain this one resumes or replays. */
  readonly parentChainId?: string;
  /** Epoch milliseconds. @defaultValue `Date.now()` */
  readonly createdAt?: number;
}

/** An event the recorder could not log, and why. */
export interface TraceRecorderFailure {
  /** The event that was lost. */
  readonly event: TraceEventType;
  /** The call it belonged to, for `tool-call` and `tool-result`. */
  readonly callId?: string;
  /** `STORE_FAILED` (the store's error, with its cause) or `TRACE_INVALID` (a hook before `start`). */
  readonly error: ChainRuntimeError;
}

/** Records one chain into a {@link TraceStore}. One recorder per chain run. */
export class TraceRecorder {
  /** The chain recorded. */
  readonly chainId: string;
  readonly #store: TraceStore;
  readonly #onError: ((failure: TraceRecorderFailure) => void) | undefined;
  readonly #failures: TraceRecorderFailure[] = [];
  readonly #announced = new Set<string>();
  /** Calls whose tool-call the store refused: their end tries once more (see #onToolEnd). */
  readonly #unlogged = new Set<string>();
  #risks: ReadonlyMap<string, ToolRisk> | undefined;
  #ended = false;
  /** Why `chain-start` could not be logged; later events are then not appended (see #append). */
  #startRefused: ChainRuntimeError | undefined;

  /** @throws ChainRuntimeError `TRACE_INVALID` when `chainId` is not a valid trace chain id. */
  constructor(options: TraceRecorderOptions) {
    checkOptionNames("TraceRecorder", options, TRACE_RECORDER_OPTION_NAMES);
    assertTraceChainId(options.chainId);
    this.chainId = options.chainId;
    this.#store = options.store;
    this.#onError = options.onError;
  }

  /** Every event that could not be logged, in order. Empty when the trace is whole. */
  get failures(): readonly TraceRecorderFailure[] {
    return this.#failures;
  }

  /** The first failure's error, or `undefined` when every event was logged. */
  get error(): ChainRuntimeError | undefined {
    return this.#failures[0]?.error;
  }

  /**
   * Logs `chain-start`. Call once, before the first tool call. Never rejects for a store
   * failure (see {@link TraceRecorder.failures}).
   * @throws ChainRuntimeError `TRACE_INVALID` when called twice.
   */
  async start(meta: TraceStartMeta): Promise<void> {
    if (this.#risks !== undefined) {
      throw new ChainRuntimeError("TRACE_INVALID", `TraceRecorder.start() was already called for ${this.chainId}.`, {
        details: { chainId: this.chainId },
      });
    }
    this.#risks = new Map(meta.toolbox.tools.map((tool) => [tool.name, tool.risk]));
    await this.#append(
      {
        type: "chain-start",
        version: TRACE_FORMAT_VERSION,
        chainId: this.chainId,
        ...(meta.parentChainId === undefined ? {} : { parentChainId: meta.parentChainId }),
        source: meta.source,
        sourceHash: sha256Hex(meta.source),
        policy: meta.policy,
        toolbox: meta.toolbox,
        seed: meta.seed,
        clockStart: meta.clockStart,
        createdAt: meta.createdAt ?? Date.now(),
      },
      undefined,
    );
  }

  /**
   * The kernel {@link Hooks} to give the invoker: `TOOL_START` logs `tool-call`, `TOOL_END`
   * logs `tool-result`, each awaited. They never throw. Combine with other hooks as needed.
   */
  hooks(): Hooks {
    return {
      TOOL_START: (payload) => this.#onToolStart(payload),
      TOOL_END: (payload) => this.#onToolEnd(payload),
    };
  }

  /** Logs `approval-request` for a request the chain sent a human. Never rejects for a store failure. */
  async recordApprovalRequest(request: ApprovalRequest): Promise<void> {
    await this.#append({ type: "approval-request", request }, undefined);
  }

  /**
   * Logs the script's clock readings (`clock`, see `TraceClockEvent`). The chain calls it as the
   * readings arrive, before the calls that follow them reach the invoker, so the store writes
   * them first. Never rejects for a store failure.
   */
  async recordClock(readings: readonly number[]): Promise<void> {
    await this.#append({ type: "clock", readings: [...readings] }, undefined);
  }

  /**
   * Logs `chain-end`. Accepts a `ChainRunResult` as is (only the {@link TraceOutcome} fields are
   * kept). Never rejects for a store failure.
   * @throws ChainRuntimeError `TRACE_INVALID` when called twice.
   */
  async end(outcome: TraceOutcome): Promise<void> {
    if (this.#ended) {
      throw new ChainRuntimeError("TRACE_INVALID", `TraceRecorder.end() was already called for ${this.chainId}.`, {
        details: { chainId: this.chainId },
      });
    }
    this.#ended = true;
    await this.#append(
      {
        type: "chain-end",
        status: outcome.status,
        ...(outcome.returnValue === undefined ? {} : { returnValue: outcome.returnValue }),
        ...(outcome.returnArtifactRef === undefined ? {} : { returnArtifactRef: outcome.returnArtifactRef }),
        ...(outcome.outputText === undefined ? {} : { outputText: outcome.outputText }),
        ...(outcome.error === undefined ? {} : { error: outcome.error }),
        durationMs: outcome.durationMs,
        stats: {
          wallMs: outcome.stats.wallMs,
          cpuMs: outcome.stats.cpuMs,
          heapBytes: outcome.stats.heapBytes,
          toolCalls: outcome.stats.toolCalls,
        },
      },
      undefined,
    );
  }

  async #onToolStart(payload: ToolStartEvent): Promise<void> {
    if (payload.chainId !== this.chainId) return;
    this.#announced.add(payload.callId);
    const risk = this.#risks?.get(payload.tool);
    const logged = await this.#append(
      {
        type: "tool-call",
        callId: payload.callId,
        seq: payload.seq,
        tool: payload.tool,
        args: payload.args,
        argsDigest: digestJson(payload.args),
        ...(risk === undefined ? {} : { risk }),
        startedAt: payload.startedAt,
      },
      payload.callId,
    );
    // Refused by the store: the call's end logs a stand-in first (as for a call refused before
    // its start), so the log never holds a result without its call. (Nothing goes into a log
    // whose chain-start was refused or never came.)
    if (!logged && this.#risks !== undefined && this.#startRefused === undefined) {
      this.#announced.delete(payload.callId);
      this.#unlogged.add(payload.callId);
    }
  }

  async #onToolEnd(payload: ToolEndEvent): Promise<void> {
    if (payload.chainId !== this.chainId) return;
    const { record } = payload;
    if (!this.#announced.has(payload.callId)) {
      // Its TOOL_START was not seen, or its tool-call was refused by the store: log
      // the call so the entry exists. A second try of a refused tool-call that fails too is no
      // further event lost: it is not counted again.
      const retry = this.#unlogged.delete(payload.callId);
      this.#announced.add(payload.callId);
      const risk = this.#risks?.get(payload.tool);
      const logged = await this.#append(
        {
          type: "tool-call",
          callId: payload.callId,
          seq: payload.seq,
          tool: payload.tool,
          args: undefined,
          argsDigest: record.argsDigest,
          ...(risk === undefined ? {} : { risk }),
          startedAt: record.startedAt,
        },
        payload.callId,
        retry,
      );
      if (!logged) {
        // A result without its call would make the whole log unreadable: left out, and counted.
        this.#fail(
          "tool-result",
          payload.callId,
          new ChainRuntimeError("STORE_FAILED", `The tool-result event of ${payload.callId} was not logged: its tool-call could not be.`, {
            details: { chainId: this.chainId, callId: payload.callId },
          }),
        );
        return;
      }
    }
    await this.#append(
      {
        type: "tool-result",
        callId: payload.callId,
        seq: payload.seq,
        result: payload.result,
        status: record.status,
        endedAt: record.startedAt + record.durationMs,
        durationMs: record.durationMs,
      },
      payload.callId,
    );
  }

  /**
   * Appends `event`; false when it was not logged. The failure is kept (see
   * {@link TraceRecorder.failures}) unless `quiet` (a second try of an event already counted).
   */
  async #append(event: TraceEvent, callId: string | undefined, quiet = false): Promise<boolean> {
    if (this.#risks === undefined) {
      this.#fail(
        event.type,
        callId,
        new ChainRuntimeError("TRACE_INVALID", `A ${event.type} event for ${this.chainId} arrived before TraceRecorder.start().`, {
          details: { chainId: this.chainId, type: event.type },
        }),
      );
      return false;
    }
    if (this.#startRefused !== undefined) {
      // The log under this chain id is not this run's (or was never begun): nothing more goes in.
      this.#fail(
        event.type,
        callId,
        new ChainRuntimeError("STORE_FAILED", `The ${event.type} event of ${this.chainId} was not logged: its chain-start was refused.`, {
          cause: this.#startRefused,
          details: { chainId: this.chainId, type: event.type },
        }),
      );
      return false;
    }
    try {
      await this.#store.append(this.chainId, event);
      return true;
    } catch (cause) {
      const error = isChainRuntimeError(cause)
        ? cause
        : new ChainRuntimeError("STORE_FAILED", `The trace store failed to append a ${event.type} event.`, {
            cause,
            details: { chainId: this.chainId, type: event.type },
          });
      if (event.type === "chain-start") this.#startRefused = error;
      if (!quiet) this.#fail(event.type, callId, error);
      return false;
    }
  }

  #fail(event: TraceEventType, callId: string | undefined, error: ChainRuntimeError): void {
    const failure: TraceRecorderFailure = { event, ...(callId === undefined ? {} : { callId }), error };
    this.#failures.push(failure);
    try {
      this.#onError?.(failure);
    } catch {
      // a failing listener must not hide the failure, which is kept above
    }
  }
}

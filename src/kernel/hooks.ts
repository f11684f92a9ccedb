import type { ChainCallRecord, ChainRunResult } from "./chain-run.ts";
import type { InvocationResult } from "./invocation.ts";

/** The moments hooks can observe. */
export type HookEvent = "TOOL_START" | "TOOL_END" | "CHAIN_START" | "CHAIN_END";

/**
 * Every hook event, as {@link HookEvent} lists them (a hook option's name is one of these, or
 * `onHookError`). For iteration and checks; frozen.
 */
export const HOOK_EVENTS: readonly HookEvent[] = Object.freeze(["TOOL_START", "TOOL_END", "CHAIN_START", "CHAIN_END"]);

/**
 * A call reached the invoker and is about to go through its gates, the budget first: every call
 * fires it, one the gates then refuse included (each has its `TOOL_END`).
 */
export interface ToolStartEvent {
  readonly event: "TOOL_START";
  /** The chain (or invoker session) the call belongs to. */
  readonly chainId: string;
  /** The call's id (see `ToolContext.callId`). */
  readonly callId: string;
  /** The call's number in its session, from 0 (its record's `seq`). */
  readonly seq: number;
  /** The tool's name as the caller gave it (it may name no tool). */
  readonly tool: string;
  /** The arguments as the caller passed them, not yet parsed or validated. */
  readonly args: unknown;
  /** Epoch milliseconds. */
  readonly startedAt: number;
}

/** A call ended, whatever its outcome. */
export interface ToolEndEvent {
  readonly event: "TOOL_END";
  /** The chain (or invoker session) the call belongs to. */
  readonly chainId: string;
  /** The call's id, as in its `TOOL_START`. */
  readonly callId: string;
  /** The call's number in its session, as in its `TOOL_START`. */
  readonly seq: number;
  /** The tool's name as the caller gave it. */
  readonly tool: string;
  /** The call's trace record, as appended to the session. */
  readonly record: ChainCallRecord;
  /** What the caller gets back. */
  readonly result: InvocationResult;
  /**
   * True when the tool's `execute` was entered: the call may have had effects, whatever its
   * result says (a `CANCELLED` or `TIMEOUT` of a tool still running when its signal fired). The
   * invoker always sets it; an event built elsewhere without it counts as not executed.
   */
  readonly executed?: boolean;
}

/** A chain is about to run. */
export interface ChainStartEvent {
  readonly event: "CHAIN_START";
  /** The run's id (`ChainRunResult.chainId`). */
  readonly chainId: string;
  /** The script as the model wrote it, before compiling. */
  readonly code: string;
}

/** A chain ended. */
export interface ChainEndEvent {
  readonly event: "CHAIN_END";
  /** The run's id. */
  readonly chainId: string;
  /** The run's result, as `ToolChainTool.run` returns it. */
  readonly result: ChainRunResult;
}

/** Payload of each hook event. */
export interface HookPayloads {
  /** Before a call's gates (see {@link ToolStartEvent}). */
  TOOL_START: ToolStartEvent;
  /** After a call's outcome is recorded (see {@link ToolEndEvent}). */
  TOOL_END: ToolEndEvent;
  /** Before a chain's script is compiled. */
  CHAIN_START: ChainStartEvent;
  /** After a chain's result is made. */
  CHAIN_END: ChainEndEvent;
}

/**
 * Observers of tool and chain events. A hook that throws or rejects is reported through
 * `onHookError` (when given) and never breaks the call. Async hooks are awaited.
 */
export type Hooks = {
  readonly [E in HookEvent]?: (payload: HookPayloads[E]) => void | Promise<void>;
} & {
  readonly onHookError?: (error: unknown, event: HookEvent) => void;
};

/** What `onProgress` receives while calls run. */
export type ProgressStep =
  | { readonly type: "tool_call"; readonly callId: string; readonly seq: number; readonly tool: string; readonly args: unknown }
  | {
      readonly type: "tool_result";
      readonly callId: string;
      readonly seq: number;
      readonly tool: string;
      readonly status: InvocationResult["status"];
      readonly durationMs: number;
    }
  | { readonly type: "log"; readonly level: "log" | "info" | "warn" | "error" | "debug"; readonly text: string };

/** A progress listener. Errors it throws are swallowed. */
export type ProgressListener = (step: ProgressStep) => void;

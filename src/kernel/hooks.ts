import type { ChainCallRecord, ChainRunResult } from "./chain-run.ts";
import type { InvocationResult } from "./invocation.ts";

/** The moments hooks can observe. */
export type HookEvent = "TOOL_START" | "TOOL_END" | "CHAIN_START" | "CHAIN_END";

/** A call passed the budget gate and is about to go through the rest of the pipeline. */
export interface ToolStartEvent {
  readonly event: "TOOL_START";
  readonly chainId: string;
  readonly callId: string;
  readonly seq: number;
  readonly tool: string;
  readonly args: unknown;
  readonly startedAt: number;
}

/** A call ended, whatever its outcome. */
export interface ToolEndEvent {
  readonly event: "TOOL_END";
  readonly chainId: string;
  readonly callId: string;
  readonly seq: number;
  readonly tool: string;
  readonly record: ChainCallRecord;
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
  readonly chainId: string;
  readonly code: string;
}

/** A chain ended. */
export interface ChainEndEvent {
  readonly event: "CHAIN_END";
  readonly chainId: string;
  readonly result: ChainRunResult;
}

/** Payload of each hook event. */
export interface HookPayloads {
  TOOL_START: ToolStartEvent;
  TOOL_END: ToolEndEvent;
  CHAIN_START: ChainStartEvent;
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

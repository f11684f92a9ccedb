import type { ChainRunResult, ErrorCode } from "../kernel/index.ts";

/** Why a run's trace is incomplete: the first event its trace store failed to take. */
export interface ChainTraceError {
  /** The `ChainRuntimeError` code: `STORE_FAILED`, or `TRACE_INVALID`. */
  readonly code: ErrorCode;
  readonly message: string;
  /** How many events were lost. */
  readonly lostEvents: number;
}

/**
 * A `ChainRunResult` from a `ToolChainTool` with a `traceStore`: the run, plus `traceError`
 * when the store failed. A trace failure never changes the run's status; it is reported here
 * (and in the model's summary), never dropped. Once a durable store has failed, later tool calls
 * of the chain are refused with `STORE_FAILED` (a side effect that is not on disk could be
 * repeated by a resume), and so is a call whose own start the store failed to write.
 */
export interface TracedChainRunResult extends ChainRunResult {
  /** The trace was written in full when absent. */
  readonly traceError?: ChainTraceError;
}

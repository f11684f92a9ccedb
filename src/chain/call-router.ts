import type { ApprovalDecision, InvocationResult } from "../kernel/index.ts";

/** One `tools.*` call as the chain runtime hands it to a {@link CallRouter}. */
export interface RoutedCall {
  /** Program-order id from the isolate: `c<callIndex>`. */
  readonly callId: string;
  readonly tool: string;
  /** The arguments as the isolate serialised them. */
  readonly argsJson: string;
}

/**
 * Where one call goes.
 * - `answer`: the script gets `result` without any tool running. With `record`, the call is
 *   logged in the run's trace as a completed call (a resumed chain's trace stays whole). With
 *   `halt`, the run stops right after (a divergence, or the end of a recording). With
 *   `unanswered`, the script never gets it (a call it did not await): the run no longer waits
 *   for it, so a script that awaits it is stuck, and ends at once in a `DeadlockError` (on a
 *   driver from elsewhere, the call is held until the run ends).
 * - `live`: through the invoker as usual; `approval`, when set, is the decision for this call
 *   should it need one (a resumed approval).
 */
export type RouteDecision =
  | {
      readonly kind: "answer";
      readonly result: InvocationResult;
      readonly record: boolean;
      readonly halt?: boolean;
      /** The recorded order of this answer among the run's results (answers routed together are delivered in it). */
      readonly order?: number;
      /** Never answered: the recorded script returned before this call was answered (`result` says so, for a driver that delivers it anyway). */
      readonly unanswered?: boolean;
    }
  | { readonly kind: "live"; readonly approval?: ApprovalDecision };

/**
 * @internal Decides, call by call, whether a tool call of a run is answered from elsewhere (a
 * trace being replayed) or runs live. Used by `replay` and `resumeChain`; called synchronously
 * as each call reaches the host.
 */
export interface CallRouter {
  route(call: RoutedCall): RouteDecision;
}

/** @internal What a replay adds to one run of a `ToolChainTool`. */
export interface RunPlan {
  /** Names installed on `tools` in place of the toolbox's (a replay needs the trace's names). */
  readonly toolNames?: readonly string[];
  /** The chain this run resumes; written into its trace. */
  readonly parentChainId?: string;
  readonly router?: CallRouter;
  /** The recorded run's clock readings, read back first (see `ChainTrace.clockReadings`). */
  readonly clockReplay?: readonly number[];
  /** A resume: once the readings run out, the clock reads on from this time (epoch ms; see `SandboxRunRequest.clockLiveAt`). */
  readonly clockLiveAt?: number;
}

import type { Tool } from "../../kernel/index.ts";
import { CallAbortScope } from "../call-abort-scope.ts";

/** How an execute ended. */
export type ExecuteOutcome =
  | { readonly kind: "returned"; readonly value: unknown }
  | { readonly kind: "threw"; readonly error: unknown }
  | { readonly kind: "timeout"; readonly timeoutMs: number }
  | { readonly kind: "cancelled" };

/** Where one execute runs. */
export interface ExecuteInput {
  readonly tool: Tool<Record<string, unknown>, unknown>;
  readonly args: Record<string, unknown>;
  readonly chainId: string;
  readonly callId: string;
  readonly timeoutMs: number;
  /** The session's signal. */
  readonly sessionSignal: AbortSignal;
  /** The caller's signal, when given. */
  readonly signal: AbortSignal | undefined;
}

/**
 * Gate 8, execute: runs `tool.execute(args, ctx)` with a per-call `AbortController` whose
 * signal (`ctx.signal`) fires on `callTimeoutMs`, on session cancellation and on caller
 * cancellation, and races the execute against that signal, so a tool that ignores its signal
 * still cannot hold the call past the timeout. Never rejects: a throw (sync or async, of any
 * value) is `threw`. A tool that throws after its signal fired counts as timed out or cancelled.
 */
export async function executeWithTimeout(input: ExecuteInput): Promise<ExecuteOutcome> {
  const scope = new CallAbortScope(input.chainId, input.callId, input.timeoutMs, input.sessionSignal, input.signal);
  try {
    if (scope.signal.aborted) return { kind: "cancelled" };
    const winner = await Promise.race([runExecute(input.tool, input.args, scope), scope.aborted]);
    if (typeof winner !== "string") {
      if (winner.kind === "threw" && scope.signal.aborted) return abortedOutcome(scope);
      return winner;
    }
    return abortedOutcome(scope);
  } finally {
    scope.dispose();
  }
}

function abortedOutcome(scope: CallAbortScope): ExecuteOutcome {
  return scope.timedOut ? { kind: "timeout", timeoutMs: scope.timeoutMs } : { kind: "cancelled" };
}

async function runExecute(
  tool: Tool<Record<string, unknown>, unknown>,
  args: Record<string, unknown>,
  ctx: CallAbortScope,
): Promise<ExecuteOutcome> {
  try {
    return { kind: "returned", value: await tool.execute(args, ctx) };
  } catch (error) {
    return { kind: "threw", error };
  }
}

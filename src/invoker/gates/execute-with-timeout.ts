import type { Tool } from "../../kernel/index.ts";
import { CallAbortScope, type AbortSource } from "../call-abort-scope.ts";

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
  /** The session (its signal is made only if a tool needs it). */
  readonly session: AbortSource;
  /** The caller's signal, when given. */
  readonly signal: AbortSignal | undefined;
}

/**
 * Gate 8, execute: runs `tool.execute(args, ctx)` with a per-call `AbortController` whose
 * signal (`ctx.signal`) fires on `callTimeoutMs`, on session cancellation and on caller
 * cancellation, and races the execute against that signal, so a tool that ignores its signal
 * still cannot hold the call past the timeout. Never rejects: a throw (sync or async, of any
 * value) is `threw`. A tool that throws after its signal fired counts as timed out or cancelled.
 *
 * A tool that returns without a promise is done before any timer or parent signal could fire,
 * so its outcome is taken as it is and returned synchronously (not as a promise): no race, no
 * microtask, and (see {@link CallAbortScope}) no controller, listener or timer unless it read
 * `ctx.signal`. The caller can then give the call's concurrency slot back at once.
 */
export function executeWithTimeout(input: ExecuteInput): ExecuteOutcome | Promise<ExecuteOutcome> {
  if (input.session.aborted || input.signal?.aborted) return CANCELLED;
  const scope = new CallAbortScope(input.chainId, input.callId, input.timeoutMs, input.session, input.signal);
  let value: unknown;
  try {
    value = input.tool.execute(input.args, scope);
  } catch (error) {
    scope.dispose();
    return scope.isAborted ? abortedOutcome(scope) : { kind: "threw", error };
  }
  let thenable: boolean;
  try {
    thenable = isThenable(value);
  } catch (error) {
    // A `then` getter that throws: the tool handed back something that cannot be read.
    scope.dispose();
    return { kind: "threw", error };
  }
  // A parent that fired during the synchronous run (only the tool itself could) cancels, as a
  // race against the already-fired signal would have.
  if (!thenable) {
    scope.dispose();
    return scope.isAborted ? abortedOutcome(scope) : { kind: "returned", value };
  }
  return race(value as PromiseLike<unknown>, scope);
}

const CANCELLED: ExecuteOutcome = Object.freeze({ kind: "cancelled" });

/**
 * The tool's settlement or the scope's abort, whichever came first. Both are watched with
 * reactions registered directly (no `await` or `Promise.race` hops in between), so the order of
 * the two reactions is the order of the events: a tool whose promise settled before the chain
 * ended (its result already in hand, a fire-and-forget call whose end frame arrived in the same
 * read) is recorded as what it returned, never as cancelled.
 */
function race(value: PromiseLike<unknown>, scope: CallAbortScope): Promise<ExecuteOutcome> {
  const { promise, resolve } = Promise.withResolvers<ExecuteOutcome>();
  let decided = false;
  const decide = (outcome: ExecuteOutcome): void => {
    if (decided) return;
    decided = true;
    scope.dispose();
    resolve(outcome);
  };
  try {
    scope.arm();
    // A native promise is watched as it is; a foreign thenable through Promise.resolve (which
    // calls its `then` in a later microtask, as `await` would).
    const watched = value instanceof Promise ? value : Promise.resolve(value);
    watched.then(
      (result: unknown) => decide({ kind: "returned", value: result }),
      (error: unknown) => decide(scope.isAborted ? abortedOutcome(scope) : { kind: "threw", error }),
    );
    scope.aborted.then(() => decide(abortedOutcome(scope)));
  } catch (error) {
    decide({ kind: "threw", error });
  }
  return promise;
}

function abortedOutcome(scope: CallAbortScope): ExecuteOutcome {
  return scope.timedOut ? { kind: "timeout", timeoutMs: scope.timeoutMs } : { kind: "cancelled" };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  if (value instanceof Promise) return true;
  return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/**
 * One abort scope per waiting step of a call (the approval wait, the execute): an
 * `AbortController` that fires when any parent signal (the session's, the caller's) fires, or
 * when its own timer runs out, plus a promise that settles at that moment so the step can be
 * raced against it.
 *
 * The scope object is itself the event listener (`handleEvent`) on the parents and on its own
 * signal, so a call allocates no listener closures. `dispose()` clears the timer and detaches
 * from the parents; call it in a `finally`, whatever the outcome.
 */
import type { ToolContext } from "../kernel/index.ts";

/** Why a scope's signal fired. */
export type AbortCause = "timeout" | "cancelled";

function onScopeTimeout(scope: CallAbortScope): void {
  scope.timedOut = true;
  scope.controller.abort(new DOMException(`Timed out after ${scope.timeoutMs} ms.`, "TimeoutError"));
}

/**
 * An abort scope that is also the {@link ToolContext} handed to `execute` (signal, chainId,
 * callId, check()).
 */
export class CallAbortScope implements ToolContext {
  readonly controller = new AbortController();
  readonly signal: AbortSignal = this.controller.signal;
  readonly chainId: string;
  readonly callId: string;
  readonly timeoutMs: number;
  /** True once the scope's own timer fired. */
  timedOut = false;
  /** Settles (never rejects) with the cause when {@link signal} fires. */
  readonly aborted: Promise<AbortCause>;
  readonly #resolveAborted: (cause: AbortCause) => void;
  readonly #parentA: AbortSignal | undefined;
  readonly #parentB: AbortSignal | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * @param timeoutMs - fire after this long; `0` or less: no timer.
   * @param parentA - e.g. the session's signal.
   * @param parentB - e.g. the caller's signal.
   */
  constructor(chainId: string, callId: string, timeoutMs: number, parentA?: AbortSignal, parentB?: AbortSignal) {
    this.chainId = chainId;
    this.callId = callId;
    this.timeoutMs = timeoutMs;
    const { promise, resolve } = Promise.withResolvers<AbortCause>();
    this.aborted = promise;
    this.#resolveAborted = resolve;
    this.signal.addEventListener("abort", this, { once: true });
    this.#parentA = parentA;
    this.#parentB = parentB;
    if (parentA) this.#link(parentA);
    if (parentB && !this.signal.aborted) this.#link(parentB);
    if (timeoutMs > 0 && !this.signal.aborted) this.#timer = setTimeout(onScopeTimeout, timeoutMs, this);
  }

  /** Throws the signal's reason once the call was cancelled or timed out. */
  readonly check = (): void => {
    this.signal.throwIfAborted();
  };

  /** @internal The abort listener of the parents and of the scope's own signal. */
  handleEvent(event: Event): void {
    if (event.target === this.signal) {
      this.#resolveAborted(this.timedOut ? "timeout" : "cancelled");
      return;
    }
    if (!this.signal.aborted) this.controller.abort((event.target as AbortSignal).reason);
  }

  /** Clears the timer and detaches from the parents. Idempotent. */
  dispose(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    this.#parentA?.removeEventListener("abort", this);
    this.#parentB?.removeEventListener("abort", this);
  }

  #link(parent: AbortSignal): void {
    if (parent.aborted) this.controller.abort(parent.reason);
    else parent.addEventListener("abort", this, { once: true });
  }
}

/**
 * One abort scope per waiting step of a call (the approval wait, the execute): an
 * `AbortController` that fires when any parent signal (the session's, the caller's) fires, or
 * when its own timer runs out, plus a promise that settles at that moment so the step can be
 * raced against it.
 *
 * The scope object is itself the event listener (`handleEvent`) on the parents and on its own
 * signal, so a call allocates no listener closures. `dispose()` clears the timer and detaches
 * from the parents; call it in a `finally`, whatever the outcome.
 *
 * Lazy: the controller, the parent listeners and the timer are made on first use of
 * {@link CallAbortScope.signal}, {@link CallAbortScope.aborted} or {@link CallAbortScope.arm}.
 * A tool that returns without awaiting and never reads `ctx.signal` costs none of them. The
 * timer is armed with the time left of `timeoutMs` counted from construction, so it fires at the
 * same moment an eager one would (a timer cannot fire while synchronous code runs anyway).
 */
import type { ToolContext } from "../kernel/index.ts";

/** Why a scope's signal fired. */
export type AbortCause = "timeout" | "cancelled";

/**
 * A parent that makes its `AbortSignal` on first use (an invoker session: most chains never need
 * its signal, and a signal that is made, aborted and dropped per chain is measurable work).
 * `aborted` must be readable without making the signal.
 */
export interface AbortSource {
  readonly aborted: boolean;
  readonly signal: AbortSignal;
}

function onScopeTimeout(scope: CallAbortScope): void {
  scope.timedOut = true;
  scope.arm().abort(new DOMException(`Timed out after ${scope.timeoutMs} ms.`, "TimeoutError"));
}

/**
 * An abort scope that is also the {@link ToolContext} handed to `execute` (signal, chainId,
 * callId, check()).
 */
export class CallAbortScope implements ToolContext {
  readonly chainId: string;
  readonly callId: string;
  readonly timeoutMs: number;
  /** True once the scope's own timer fired. */
  timedOut = false;
  readonly #createdAt = performance.now();
  readonly #parentA: AbortSource | undefined;
  readonly #parentB: AbortSignal | undefined;
  #controller: AbortController | undefined;
  #aborted: Promise<AbortCause> | undefined;
  #resolveAborted: ((cause: AbortCause) => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #check: (() => void) | undefined;
  #disposed = false;

  /**
   * @param timeoutMs - fire after this long; `0` or less: no timer.
   * @param parentA - e.g. the session; its signal is made only when the scope is armed.
   * @param parentB - e.g. the caller's signal.
   */
  constructor(chainId: string, callId: string, timeoutMs: number, parentA?: AbortSource, parentB?: AbortSignal) {
    this.chainId = chainId;
    this.callId = callId;
    this.timeoutMs = timeoutMs;
    this.#parentA = parentA;
    this.#parentB = parentB;
  }

  /** Fires when the call times out or a parent fires. */
  get signal(): AbortSignal {
    return this.arm().signal;
  }

  /** Settles (never rejects) with the cause when {@link signal} fires. */
  get aborted(): Promise<AbortCause> {
    this.arm();
    return this.#aborted as Promise<AbortCause>;
  }

  /** Throws the signal's reason once the call was cancelled or timed out. */
  get check(): () => void {
    this.#check ??= () => this.signal.throwIfAborted();
    return this.#check;
  }

  /** True when the scope's signal fired, or a parent has (which would fire it once armed). */
  get isAborted(): boolean {
    if (this.#controller !== undefined) return this.#controller.signal.aborted;
    return this.#parentA?.aborted === true || this.#parentB?.aborted === true;
  }

  /**
   * Makes the controller, links the parents and starts the timer, once; returns the controller.
   * After {@link dispose} it only makes the controller (nothing is linked or timed any more).
   */
  arm(): AbortController {
    if (this.#controller !== undefined) return this.#controller;
    const controller = new AbortController();
    this.#controller = controller;
    const { promise, resolve } = Promise.withResolvers<AbortCause>();
    this.#aborted = promise;
    this.#resolveAborted = resolve;
    controller.signal.addEventListener("abort", this, { once: true });
    if (this.#disposed) return controller;
    if (this.#parentA) this.#link(this.#parentA.signal);
    if (this.#parentB && !controller.signal.aborted) this.#link(this.#parentB);
    if (this.timeoutMs > 0 && !controller.signal.aborted) {
      const left = this.timeoutMs - (performance.now() - this.#createdAt);
      this.#timer = setTimeout(onScopeTimeout, left > 0 ? left : 0, this);
    }
    return controller;
  }

  /** @internal The abort listener of the parents and of the scope's own signal. */
  handleEvent(event: Event): void {
    const controller = this.#controller;
    if (controller === undefined) return;
    if (event.target === controller.signal) {
      this.#resolveAborted?.(this.timedOut ? "timeout" : "cancelled");
      return;
    }
    if (!controller.signal.aborted) controller.abort((event.target as AbortSignal).reason);
  }

  /** Clears the timer and detaches from the parents. Idempotent. */
  dispose(): void {
    this.#disposed = true;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#controller === undefined) return;
    this.#parentA?.signal.removeEventListener("abort", this);
    this.#parentB?.removeEventListener("abort", this);
  }

  #link(parent: AbortSignal): void {
    const controller = this.#controller as AbortController;
    if (parent.aborted) controller.abort(parent.reason);
    else parent.addEventListener("abort", this, { once: true });
  }
}

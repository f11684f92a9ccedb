/**
 * A small counting semaphore: at most `limit` executes of one session run at once; the rest
 * wait in FIFO order. A waiting call still honours cancellation: when one of its signals fires
 * it leaves the queue and `acquire` resolves `false` (no slot taken).
 *
 * Fast path: `tryAcquire()` takes a free slot synchronously with no allocation.
 */

class SlotWaiter {
  readonly slots: CallSlots;
  readonly resolve: (granted: boolean) => void;
  readonly signalA: AbortSignal | undefined;
  readonly signalB: AbortSignal | undefined;

  constructor(slots: CallSlots, resolve: (granted: boolean) => void, signalA?: AbortSignal, signalB?: AbortSignal) {
    this.slots = slots;
    this.resolve = resolve;
    this.signalA = signalA;
    this.signalB = signalB;
    signalA?.addEventListener("abort", this, { once: true });
    signalB?.addEventListener("abort", this, { once: true });
  }

  handleEvent(): void {
    this.detach();
    this.slots.leave(this);
    this.resolve(false);
  }

  detach(): void {
    this.signalA?.removeEventListener("abort", this);
    this.signalB?.removeEventListener("abort", this);
  }
}

/** Limits how many calls of one session execute at once. */
export class CallSlots {
  readonly limit: number;
  #active = 0;
  readonly #queue: SlotWaiter[] = [];

  /** @param limit - slots; at least 1. */
  constructor(limit: number) {
    this.limit = Math.max(1, Math.floor(limit));
  }

  /** Executes running now. */
  get active(): number {
    return this.#active;
  }

  /** Calls waiting for a slot. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Takes a slot when one is free and nobody is queued ahead. */
  tryAcquire(): boolean {
    if (this.#active < this.limit && this.#queue.length === 0) {
      this.#active++;
      return true;
    }
    return false;
  }

  /**
   * Waits for a slot. Resolves `true` with the slot taken, or `false` when a signal fired first
   * (or had already fired).
   */
  acquire(signalA?: AbortSignal, signalB?: AbortSignal): Promise<boolean> {
    if (signalA?.aborted || signalB?.aborted) return Promise.resolve(false);
    if (this.tryAcquire()) return Promise.resolve(true);
    const { promise, resolve } = Promise.withResolvers<boolean>();
    this.#queue.push(new SlotWaiter(this, resolve, signalA, signalB));
    return promise;
  }

  /** Gives a slot back and hands it to the next waiter. */
  release(): void {
    this.#active = Math.max(0, this.#active - 1);
    while (this.#active < this.limit && this.#queue.length > 0) {
      const next = this.#queue.shift() as SlotWaiter;
      next.detach();
      this.#active++;
      next.resolve(true);
    }
  }

  /** @internal A waiter whose signal fired leaves the queue. */
  leave(waiter: SlotWaiter): void {
    const index = this.#queue.indexOf(waiter);
    if (index !== -1) this.#queue.splice(index, 1);
  }
}

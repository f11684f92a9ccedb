/**
 * How many files a store holds open at once. A holder takes a slot before it opens a file and
 * gives it back once the file is closed. When every slot is taken, the holder idle longest (one
 * that said it could let its file go, {@link OpenFileBudget.idle}) is asked to close it; with
 * none idle, the taker waits for a slot. So a burst of chains that each hold a log open (queued
 * for a sandbox, say) holds at most `max` descriptors, never the process's whole table.
 * @module
 */

/** Something holding an open file it can close on request (and reopen when it next needs it). */
export interface FileHolder {
  /** Closes the file and gives its slot back ({@link OpenFileBudget.release}). Never rejects. */
  letGo(): Promise<void>;
}

export class OpenFileBudget {
  /** Most files held open at once. */
  readonly max: number;
  #open = 0;
  /** Holders that may be asked to close, oldest first (a Set keeps insertion order). */
  readonly #idle = new Set<FileHolder>();
  readonly #waiting: Array<() => void> = [];

  constructor(max: number) {
    this.max = max;
  }

  /** Files open now (slots taken). */
  get open(): number {
    return this.#open;
  }

  /** Takes a slot: at once while one is free, else once an idle holder has let its file go or a file is closed. */
  acquire(): Promise<void> | undefined {
    if (this.#open < this.max) {
      this.#open++;
      return undefined;
    }
    const { promise, resolve } = Promise.withResolvers<void>();
    this.#waiting.push(resolve);
    this.#evictOne();
    return promise;
  }

  /** Gives a slot back: to the first waiter, if any. */
  release(): void {
    const next = this.#waiting.shift();
    if (next !== undefined) next();
    else this.#open--;
  }

  /** `holder` may be asked to close its file now; at once if someone waits for a slot. */
  idle(holder: FileHolder): void {
    this.#idle.add(holder);
    if (this.#waiting.length > 0) this.#evictOne();
  }

  /** `holder` is using its file again (or has closed it): not to be asked. */
  busy(holder: FileHolder): void {
    this.#idle.delete(holder);
  }

  #evictOne(): void {
    const oldest = this.#idle.values().next();
    if (oldest.done === true) return;
    this.#idle.delete(oldest.value);
    void oldest.value.letGo();
  }
}

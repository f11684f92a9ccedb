/**
 * Serialises async work per key inside one process: tasks under the same key run one after
 * another in call order; tasks under different keys run freely. A key's entry is dropped as
 * soon as its last task settles, so the map never grows with the number of keys ever seen.
 *
 * It coordinates promises of one process only; it is not a file lock.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();

  /**
   * Runs `task` once every earlier task under `key` has settled, and returns its result.
   * A task that throws releases the key like one that returns.
   */
  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release: () => void = () => {};
    const current = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => current);
    this.#tails.set(key, tail);
    await previous;
    try {
      return await task();
    } finally {
      release();
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    }
  }

  /** Keys with a running or queued task. */
  get size(): number {
    return this.#tails.size;
  }
}

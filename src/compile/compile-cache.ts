/**
 * A bounded LRU of compile results keyed by the script's source text itself.
 *
 * Keying by the string (not by its sha256) makes a hit one `Map` lookup: V8 hashes the
 * string once (about 2 µs for 2 KB, less than sha256) and compares it on a hit. Recency is
 * the `Map`'s insertion order: a hit moves the entry to the end, eviction takes from the
 * front. Bounded both by entries and by text size (UTF-16 code units of source plus code,
 * counted as 2 bytes each); an entry larger than a quarter of the byte cap is not kept.
 * @module
 */

/** Options of a {@link CompileCache}. */
export interface CompileCacheOptions {
  /**
   * Most entries kept.
   * @defaultValue 256
   */
  readonly maxEntries?: number;
  /**
   * Most bytes of text kept (source + compiled code, 2 bytes per code unit).
   * @defaultValue 16 MiB
   */
  readonly maxBytes?: number;
}

interface Entry<T> {
  readonly value: T;
  readonly bytes: number;
}

/** LRU cache from script source to a compile result. */
export class CompileCache<T = unknown> {
  readonly maxEntries: number;
  readonly maxBytes: number;
  #entries = new Map<string, Entry<T>>();
  #bytes = 0;

  constructor(options: CompileCacheOptions = {}) {
    this.maxEntries = Math.max(1, Math.trunc(options.maxEntries ?? 256));
    this.maxBytes = Math.max(1024, Math.trunc(options.maxBytes ?? 16 * 1024 * 1024));
  }

  /** Number of entries held. */
  get size(): number {
    return this.#entries.size;
  }

  /** Bytes of text held (see {@link CompileCacheOptions.maxBytes}). */
  get bytes(): number {
    return this.#bytes;
  }

  /** The value for `source`, marking it most recently used; `undefined` on a miss. */
  get(source: string): T | undefined {
    const entry = this.#entries.get(source);
    if (entry === undefined) return undefined;
    this.#entries.delete(source);
    this.#entries.set(source, entry);
    return entry.value;
  }

  /** Stores `value` for `source`; `extraChars` counts compiled text held by the value. */
  set(source: string, value: T, extraChars = 0): void {
    const bytes = 2 * (source.length + extraChars);
    const previous = this.#entries.get(source);
    if (previous !== undefined) {
      this.#entries.delete(source);
      this.#bytes -= previous.bytes;
    }
    if (bytes > this.maxBytes / 4) return;
    this.#entries.set(source, { value, bytes });
    this.#bytes += bytes;
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= this.maxEntries && this.#bytes <= this.maxBytes) break;
      this.#entries.delete(key);
      this.#bytes -= entry.bytes;
    }
  }

  /** Drops every entry. */
  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

/**
 * A bounded cache of compile results keyed by the script's source text itself, evicting in
 * second-chance (CLOCK) order, an approximation of least recently used.
 *
 * Keying by the string (not by its sha256) makes a hit one `Map` lookup: V8 hashes the
 * string once (about 2 µs for 2 KB, less than sha256) and compares it on a hit. A hit only
 * marks its entry: moving the entry to the end of the `Map` (delete + set) on every hit made V8
 * rehash the long-lived table every few hits, and the new tables outlived young collections
 * (~150 bytes promoted per chain, which grows V8's young generation over a long run). Eviction,
 * before a store that would pass the bounds, walks the `Map` from its oldest store: an entry
 * read since it was stored moves to the end, unmarked (its second chance), and the first unread
 * one goes. Each read buys at most one such move, so eviction costs O(1) amortised over the
 * reads. A full scan for the least recently used entry cost every miss ~7 µs once the cache was
 * full (256 entries), which a model writing a new script per chain hits on every chain.
 * Bounded both by entries and by text size (UTF-16 code units of source plus code, counted as 2
 * bytes each); an entry larger than a quarter of the byte cap is not kept.
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
  /** Read since it was stored (or since its last second chance). */
  read: boolean;
}

/** Bounded cache from script source to a compile result (second-chance eviction). */
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

  /** The value for `source`, marking it read (see the eviction order); `undefined` on a miss. */
  get(source: string): T | undefined {
    const entry = this.#entries.get(source);
    if (entry === undefined) return undefined;
    entry.read = true;
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
    // Room first, then the store: the new entry is never the one evicted (were every older entry
    // read, they would all pass it on their second chance).
    while (this.#entries.size > 0 && (this.#entries.size + 1 > this.maxEntries || this.#bytes + bytes > this.maxBytes)) this.#evictLeastRecent();
    this.#entries.set(source, { value, bytes, read: false });
    this.#bytes += bytes;
  }

  /**
   * Drops one entry: the oldest stored that was not read since, giving each read one it passes
   * a second chance at the end of the order. Ends, since a moved entry is unmarked.
   */
  #evictLeastRecent(): void {
    for (const [key, entry] of this.#entries) {
      this.#entries.delete(key);
      if (entry.read) {
        entry.read = false;
        this.#entries.set(key, entry);
        continue;
      }
      this.#bytes -= entry.bytes;
      return;
    }
  }

  /** Drops every entry. */
  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}

/**
 * Splits a stream of text chunks into newline-terminated frames without rescanning: each chunk
 * is searched once, partial frames are kept as parts and joined once when their newline comes.
 * Shared by both sides of the child-process baseline (a 1 MiB frame arrives in ~16 chunks).
 * @module
 */

/** Feeds chunks; calls `onFrame` with each complete line (newline removed). */
export class LineSplitter {
  readonly #onFrame: (frame: string) => void;
  readonly #parts: string[] = [];

  /** @param onFrame - receives every complete frame, in order. */
  constructor(onFrame: (frame: string) => void) {
    this.#onFrame = onFrame;
  }

  /** Consumes one chunk of text. */
  push(chunk: string): void {
    let start = 0;
    let newline = chunk.indexOf("\n");
    while (newline !== -1) {
      const piece = chunk.slice(start, newline);
      if (this.#parts.length === 0) this.#onFrame(piece);
      else {
        this.#parts.push(piece);
        const frame = this.#parts.join("");
        this.#parts.length = 0;
        this.#onFrame(frame);
      }
      start = newline + 1;
      newline = chunk.indexOf("\n", start);
    }
    if (start < chunk.length) this.#parts.push(start === 0 ? chunk : chunk.slice(start));
  }
}

/** A blob's content as a string, and how it was encoded. */
export interface BlobText {
  /** `utf8`: the bytes were valid UTF-8 text; `base64`: anything else (binary). */
  readonly encoding: "utf8" | "base64";
  /** The UTF-8 text, or the base64 of the bytes. */
  readonly text: string;
}

/**
 * The content of a blob as a string, the way tools receive an `{ $artifact }` argument: UTF-8
 * text when the bytes are valid UTF-8 without NUL characters, base64 otherwise. A leading BOM is
 * kept (the text is exactly what was stored).
 */
export function blobToText(bytes: Uint8Array): BlobText {
  try {
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
    if (!text.includes("\u0000")) return { encoding: "utf8", text };
  } catch {
    // not UTF-8: fall through to base64
  }
  return { encoding: "base64", text: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64") };
}

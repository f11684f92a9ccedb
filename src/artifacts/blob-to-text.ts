import { describeKind } from "../kernel/check-option-shape.ts";
import { ChainRuntimeError } from "../kernel/index.ts";

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
 * @throws ChainRuntimeError `ARGUMENT_INVALID` for what is not a `Uint8Array`, or bytes too many
 * for a JavaScript string.
 */
export function blobToText(bytes: Uint8Array): BlobText {
  if (!(bytes instanceof Uint8Array)) {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `blobToText() needs a blob's bytes (a Uint8Array); got ${describeKind(bytes)}.`, {
      details: { argument: "bytes" },
    });
  }
  try {
    try {
      const text = decoder.decode(bytes);
      if (!text.includes("\u0000")) return { encoding: "utf8", text };
    } catch (error) {
      if (!(error instanceof TypeError)) throw error; // not UTF-8: base64 below
    }
    return { encoding: "base64", text: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64") };
  } catch {
    throw new ChainRuntimeError("ARGUMENT_INVALID", `A blob of ${bytes.byteLength} bytes is more than a JavaScript string can hold as text or base64.`, {
      details: { argument: "bytes", bytes: bytes.byteLength },
    });
  }
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

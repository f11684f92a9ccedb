import { ChainRuntimeError } from "../kernel/index.ts";
import type { ChainTrace } from "./chain-trace.ts";
import { checkChainTrace } from "./check-chain-trace.ts";

/**
 * A trace as pretty-printed JSON (two-space indent) for people and tests. `undefined` fields are
 * left out, BigInts are written as decimal strings and byte arrays as `{ "$bytes": <base64> }`,
 * so the text always parses. Not a storage format: stores keep the event log. Throws
 * `TRACE_INVALID` for what is not a trace, or one nested too deeply to write.
 */
export function exportTraceJson(trace: ChainTrace): string {
  checkChainTrace(trace, "exportTraceJson()");
  try {
    return writeJson(trace);
  } catch (error) {
    // Only a hand-made trace gets here (live runs cap nesting at 200): values nested past the stack.
    throw new ChainRuntimeError("TRACE_INVALID", `exportTraceJson(): the trace cannot be written as JSON: ${error instanceof Error ? error.message : String(error)}.`, {
      cause: error,
    });
  }
}

function writeJson(trace: ChainTrace): string {
  return JSON.stringify(
    trace,
    function (this: Record<string, unknown>, key: string, value: unknown): unknown {
      const raw = this[key]; // before toJSON: a Buffer would otherwise arrive as { type, data }
      if (raw instanceof Uint8Array) return { $bytes: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString("base64") };
      if (typeof value === "bigint") return value.toString();
      return value;
    },
    2,
  );
}

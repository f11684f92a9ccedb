import type { ChainTrace } from "./chain-trace.ts";

/**
 * A trace as pretty-printed JSON (two-space indent) for people and tests. `undefined` fields are
 * left out, BigInts are written as decimal strings and byte arrays as `{ "$bytes": <base64> }`,
 * so the text always parses. Not a storage format: stores keep the event log.
 */
export function exportTraceJson(trace: ChainTrace): string {
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

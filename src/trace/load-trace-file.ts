import { readFile } from "node:fs/promises";
import { ChainRuntimeError, isChainRuntimeError } from "../kernel/index.ts";
import type { ChainTrace } from "./chain-trace.ts";
import { foldTraceEvents } from "./fold-trace-events.ts";
import { decodeTraceFrames } from "./trace-frame-codec.ts";

/**
 * Reads a trace log file (as `FileTraceStore` writes them, `<chainId>.trace`) from any path
 * and folds it. A torn final record, left by a crash mid-write, is ignored; calls without a
 * result read `in-doubt`.
 *
 * @throws ChainRuntimeError `TRACE_NOT_FOUND` when there is no file, `TRACE_INVALID` when it
 * is malformed, `STORE_FAILED` (with `cause`) when it cannot be read.
 */
export async function loadTraceFile(path: string): Promise<ChainTrace> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === "ENOENT") {
      throw new ChainRuntimeError("TRACE_NOT_FOUND", `No trace file at ${path}.`, { cause, details: { path } });
    }
    throw new ChainRuntimeError("STORE_FAILED", `Could not read the trace file ${path}.`, { cause, details: { path } });
  }
  try {
    return foldTraceEvents(decodeTraceFrames(bytes).events);
  } catch (error) {
    if (isChainRuntimeError(error) && error.code === "TRACE_INVALID") {
      throw new ChainRuntimeError("TRACE_INVALID", `${path}: ${error.message}`, {
        cause: error,
        details: { ...error.details, path },
      });
    }
    throw error;
  }
}
